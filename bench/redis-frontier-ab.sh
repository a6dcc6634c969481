#!/usr/bin/env bash
# Before/after runs of the Redis frontier of two builds of seenstore, interleaved
# (docs/benchmarks.md "Issue 47 (the Redis part)"): bench/redis-frontier-ab.ts on each build in turn, the build
# that goes first alternating by round.
#
#   bench/redis-frontier-ab.sh BEFORE_DIR AFTER_DIR [ROUNDS] [COUNT] [packages|shared]
#
# Each directory is a checkout with `npm run build` done; AFTER_DIR also with `tsc -p
# bench/tsconfig.json` and bench's data set installed (`npm install --prefix bench`): its bench
# script and test helpers (the local cluster) run both builds. Prints one line per run: round,
# build, the script's JSON.
set -euo pipefail
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
rounds=${3:-3}
count=${4:-1000000}
source=${5:-packages}
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then order=("before:$before" "after:$after"); else order=("after:$after" "before:$before"); fi
  for entry in "${order[@]}"; do
    name=${entry%%:*}
    dir=${entry#*:}
    echo "$round $name $(node "$after/dist/bench/redis-frontier-ab.js" "$dir/dist/src/index.js" "$count" "$source")"
  done
done
