// Copies what tsc does not emit into dist/: the Redis function library's Lua sources, which
// src/store/redis/library.ts reads beside its compiled module, and the URLFrontier API's .proto,
// which src/urlfrontier/proto.ts loads beside its own.
import { cpSync } from 'node:fs';

cpSync(new URL('../src/store/redis/lua/', import.meta.url), new URL('../dist/src/store/redis/lua/', import.meta.url), {
  recursive: true,
});
cpSync(
  new URL('../src/urlfrontier/urlfrontier.proto', import.meta.url),
  new URL('../dist/src/urlfrontier/urlfrontier.proto', import.meta.url),
);
