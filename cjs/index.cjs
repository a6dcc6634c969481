'use strict';
// seenstore is an ES module. Node versions that can require() an ES module (20.19+, 22.12+) take
// the "module-sync" condition of package.json's exports and never load this file; older ones land
// here, and get this message instead of a misleading ERR_PACKAGE_PATH_NOT_EXPORTED or
// ERR_REQUIRE_ESM.
const error = new Error(
  `seenstore is an ES module, and require() of ES modules is off in this Node.js (${process.version}): ` +
    "use `const { SeenStore } = await import('seenstore')`, or Node.js 20.19+ / 22.12+ (without --no-experimental-require-module), where require('seenstore') works.",
);
error.code = 'ERR_REQUIRE_ESM';
throw error;
