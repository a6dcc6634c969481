#!/usr/bin/env bash
# Before/after runs of two builds of seenstore, interleaved (docs/benchmarks.md): durable
# addIfAbsent (bench/durable-ab.ts), filter-new end to end over the 1.7M-URL file, and the scale
# runs (open + first query of a 100M-capacity store, journal replay of 2M adds).
#
#   bench/ab.sh BEFORE_DIR AFTER_DIR ROUNDS
#
# Each directory is a checkout with `npm run build` and `tsc -p bench/tsconfig.json` done, and
# bench/.data prepared (`node dist/bench/data.js`) in AFTER_DIR. Prints one line per run:
# round, build, what, value.
set -euo pipefail
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
rounds=${3:-5}
file=$(ls "$after"/bench/.data/package-repos-*.txt | head -1)
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT

filter_new() {
  rm -rf "$store"/s
  local start end
  start=$(date +%s.%N)
  node "$(ls "$1"/dist/src/cli/bin.cjs 2>/dev/null || echo "$1/dist/src/cli/main.js")" filter-new --store "$store/s" --capacity 2000000 < "$file" > /dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

for round in $(seq 1 "$rounds"); do
  # Alternate which build goes first, so neither always meets the warmer cache.
  if (( round % 2 )); then order=("before:$before" "after:$after"); else order=("after:$after" "before:$before"); fi
  for entry in "${order[@]}"; do
    name=${entry%%:*}
    dir=${entry#*:}
    echo "$round $name durable-ms-per-10k-batch $(node "$after/dist/bench/durable-ab.js" "$dir/dist/src/index.js" 10000 60)"
    echo "$round $name filter-new-s $(filter_new "$dir")"
    scale=$(cd "$dir" && node dist/bench/run.js --scale-only)
    echo "$round $name scale $scale"
  done
done
