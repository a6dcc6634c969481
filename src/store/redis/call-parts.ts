/**
 * Most bytes of URLs and data one library function call carries (docs/redis.md "Deadlines"). A
 * call holds its master for as long as it runs, and a master that runs one call past
 * `cluster-node-timeout` is failed over: writes its replica had not received yet are lost. One
 * admission of 1,100 URLs with 61 KB of data each (67 MB) ran 4 s on a slow machine, past a test
 * cluster's 2 s timeout; the move then deleted the URLs from the inbox, and they were gone.
 */
export const CALL_BYTES_MAX = 4 * 1024 * 1024;

/** What an item of `texts` (its URL, queue key, data...) adds to a call's arguments, framing included. */
export function itemBytes(...texts: string[]): number {
  let bytes = 64;
  for (const text of texts) bytes += Buffer.byteLength(text);
  return bytes;
}

/**
 * Items 0..count - 1 in consecutive parts of at most `itemsMax` items and CALL_BYTES_MAX bytes
 * (`bytesOf(i)`: item i's); an item larger than that goes in a part of its own.
 */
export function callParts(
  count: number,
  bytesOf: (i: number) => number,
  itemsMax: number,
): { readonly from: number; readonly to: number }[] {
  const parts: { from: number; to: number }[] = [];
  let from = 0;
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const size = bytesOf(i);
    if (i > from && (i - from >= itemsMax || bytes + size > CALL_BYTES_MAX)) {
      parts.push({ from, to: i });
      from = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (count > from) parts.push({ from, to: count });
  return parts;
}

/**
 * `urls` cut into runs of distinct URLs, in order: a URL named again starts the next run. A step
 * that looks up where its URLs are before it changes them (a schedule) runs once per run, so that
 * a URL named twice sees where its first mention left it.
 */
export function distinctRuns(urls: readonly string[]): { readonly from: number; readonly to: number }[] {
  const runs: { from: number; to: number }[] = [];
  for (let from = 0; from < urls.length; ) {
    const seen = new Set<string>();
    let to = from;
    while (to < urls.length && !seen.has(urls[to]!)) seen.add(urls[to++]!);
    runs.push({ from, to });
    from = to;
  }
  return runs;
}
