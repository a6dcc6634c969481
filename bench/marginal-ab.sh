#!/usr/bin/env bash
# filter-new's steady-state rate, before and after, interleaved (issue 29): the marginal rate
# between 1x and 3x a real input of ~3.5M lines (the ~50k URLs of ../shared/data, 70 times over:
# 50,553 new lines, then duplicates), so start-up is apart. Per run: wall seconds and CPU seconds
# (user + sys, less sensitive to a loaded machine). Prints each run, then per build the medians
# and the marginal rates: (3N - N) lines / (t3 - t1).
#
#   bench/marginal-ab.sh BEFORE_DIR AFTER_DIR ROUNDS [EXTRA FILTER-NEW FLAGS]
#
# Each directory is a built checkout (npm run build).
set -euo pipefail
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
rounds=${3:-3}
extra=${4:-}
shared=$(cd "$after/.." && pwd)/shared/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat "$shared/crawl-sitelist-15k.txt" "$shared/crawl-benign-35k.txt" > "$work/base.txt"
for _ in $(seq 70); do cat "$work/base.txt"; done > "$work/x1.txt"
cat "$work/x1.txt" "$work/x1.txt" "$work/x1.txt" > "$work/x3.txt"
lines=$(wc -l < "$work/x1.txt")

run() { # build-dir input -> "wall cpu"
  rm -rf "$work/s"
  /usr/bin/time -f '%e %U %S' -o "$work/time" node "$1/dist/src/cli/main.js" filter-new --quiet $extra --store "$work/s" --capacity 100000 < "$2" > /dev/null
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/time"
}

echo "# $lines lines x1, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then order=("before:$before" "after:$after"); else order=("after:$after" "before:$before"); fi
  for entry in "${order[@]}"; do
    name=${entry%%:*}
    dir=${entry#*:}
    for x in 1 3; do echo "$round $name x$x $(run "$dir" "$work/x$x.txt")"; done
  done
done | tee "$work/runs"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
for name in before after; do
  for x in 1 3; do
    for col in 4 5; do
      awk -v n="$name" -v x="x$x" -v c="$col" '$2 == n && $3 == x { print $c }' "$work/runs" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }' > "$work/m-$name-$x-$col"
    done
  done
  awk -v n="$name" -v lines="$lines" -v w1="$(cat "$work/m-$name-1-4")" -v w3="$(cat "$work/m-$name-3-4")" -v c1="$(cat "$work/m-$name-1-5")" -v c3="$(cat "$work/m-$name-3-5")" \
    'BEGIN { printf "%s: median wall x1 %.2f s, x3 %.2f s; marginal %.2f M lines/s (wall), %.2f M lines/s of CPU\n", n, w1, w3, 2 * lines / (w3 - w1) / 1e6, 2 * lines / (c3 - c1) / 1e6 }'
done
