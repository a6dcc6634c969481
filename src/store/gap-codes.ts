import { SeenStoreError } from '../errors.js';

/**
 * The codes of a chunk of filter bytes in an export file (docs/format.md), apart from the file's
 * layout: the bytes as they are, the gaps between set bits as LEB128 varints, or the gaps
 * Rice-coded (a compressed Bloom filter: near the entropy of the fill for any sparse filter). The
 * writer stores whichever is smallest (smallestEncoding).
 */
export const ENCODING_RAW = 0;
export const ENCODING_GAPS = 1;
export const ENCODING_RICE = 2;

/** Gap coding of the set bits of `bytes`; undefined when it would not be smaller than the bytes. */
export function encodeGaps(bytes: Uint8Array): Buffer | undefined {
  return popcount(bytes) >= bytes.length ? undefined : leb128Gaps(gapsOf(bytes), bytes.length);
}

function leb128Gaps(gaps: readonly number[], rawLength: number): Buffer | undefined {
  const out: number[] = [];
  for (let gap of gaps) {
    while (gap >= 0x80) {
      out.push((gap & 0x7f) | 0x80);
      gap >>>= 7;
    }
    out.push(gap);
    if (out.length >= rawLength) return undefined;
  }
  return Buffer.from(out);
}

/**
 * The smallest stored form of one chunk (raw, LEB128 gaps or Rice gaps), or undefined for a chunk
 * with no set bit. The set bits are counted and walked once for both gap codes.
 */
export function smallestEncoding(raw: Uint8Array): { encoding: number; stored: Uint8Array } | undefined {
  const ones = popcount(raw);
  if (ones === 0) return undefined;
  let best: { encoding: number; stored: Uint8Array } = { encoding: ENCODING_RAW, stored: raw };
  // Above ~40 % fill no gap code beats the raw bytes (the entropy of the fill nears 1 bit per bit).
  if (ones > raw.length * 8 * RICE_MAX_FILL) return best;
  const gaps = gapsOf(raw);
  const leb = ones < raw.length ? leb128Gaps(gaps, raw.length) : undefined;
  if (leb !== undefined && leb.length < best.stored.length) best = { encoding: ENCODING_GAPS, stored: leb };
  const rice = riceGaps(gaps, raw.length);
  if (rice !== undefined && rice.length < best.stored.length) best = { encoding: ENCODING_RICE, stored: rice };
  return best;
}

const RICE_MAX_FILL = 0.4;
const BYTE_POPCOUNT = Uint8Array.from({ length: 256 }, (_, b) => b.toString(2).replace(/0/g, '').length);

function popcount(bytes: Uint8Array): number {
  let ones = 0;
  for (let i = 0; i < bytes.length; i++) ones += BYTE_POPCOUNT[bytes[i]!]!;
  return ones;
}

/** Gaps between the set bits of `bytes` (gap = bits skipped before the next set bit). */
function gapsOf(bytes: Uint8Array): number[] {
  const gaps: number[] = [];
  let previous = -1;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === 0) continue;
    for (let bit = 0; bit < 8; bit++) {
      if ((byte & (1 << bit)) === 0) continue;
      const position = i * 8 + bit;
      gaps.push(position - previous - 1);
      previous = position;
    }
  }
  return gaps;
}

/**
 * Rice coding of the gaps between set bits: u32 count of set bits, u8 parameter r, then per gap g
 * the quotient g >> r in unary (that many 1 bits, then a 0) and the low r bits of g, least
 * significant first; bits fill each byte from its least significant bit. The parameter is the
 * best of those near log2 of the mean gap. Undefined when not smaller than the bytes.
 */
export function encodeRice(bytes: Uint8Array): Buffer | undefined {
  return popcount(bytes) > bytes.length * 8 * RICE_MAX_FILL ? undefined : riceGaps(gapsOf(bytes), bytes.length);
}

function riceGaps(gaps: readonly number[], rawLength: number): Buffer | undefined {
  if (gaps.length === 0) return undefined;
  const meanGap = (rawLength * 8 - gaps.length) / gaps.length;
  const guess = Math.max(0, Math.floor(Math.log2(Math.max(1, meanGap * Math.LN2))));
  let best = { r: 0, bits: Infinity };
  for (let r = Math.max(0, guess - 1); r <= Math.min(30, guess + 1); r++) {
    let bits = 0;
    for (const gap of gaps) bits += Math.floor(gap / 2 ** r) + 1 + r;
    if (bits < best.bits) best = { r, bits };
  }
  const length = 5 + Math.ceil(best.bits / 8);
  if (length >= rawLength) return undefined;
  const out = Buffer.alloc(length);
  out.writeUInt32LE(gaps.length, 0);
  out.writeUInt8(best.r, 4);
  let at = 40;
  const put = (bit: number): void => {
    if (bit) out[at >>> 3]! |= 1 << (at & 7);
    at++;
  };
  for (const gap of gaps) {
    for (let q = Math.floor(gap / 2 ** best.r); q > 0; q--) put(1);
    put(0);
    for (let b = 0; b < best.r; b++) put((gap >>> b) & 1);
  }
  return out;
}

export function decodeRice(stored: Uint8Array, rawLength: number, where: string): Uint8Array {
  const bad = (problem: string): SeenStoreError => new SeenStoreError('STORE_CORRUPT', `${where}: ${problem}`);
  if (stored.length < 5) throw bad('Rice block too short');
  const count = Buffer.from(stored.buffer, stored.byteOffset, stored.length).readUInt32LE(0);
  const r = stored[4]!;
  if (r > 30 || count > rawLength * 8) throw bad('bad Rice parameters');
  const bytes = new Uint8Array(rawLength);
  const limit = stored.length * 8;
  let at = 40;
  const take = (): number => {
    if (at >= limit) throw bad('Rice coding runs past the block');
    const bit = (stored[at >>> 3]! >>> (at & 7)) & 1;
    at++;
    return bit;
  };
  let position = -1;
  for (let n = 0; n < count; n++) {
    let quotient = 0;
    while (take() === 1) {
      quotient++;
      if (quotient > rawLength * 8) throw bad('bad Rice quotient');
    }
    let low = 0;
    for (let b = 0; b < r; b++) low |= take() << b;
    position += quotient * 2 ** r + low + 1;
    if (position >= rawLength * 8) throw bad('a set bit past the chunk');
    bytes[position >>> 3]! |= 1 << (position & 7);
  }
  return bytes;
}

export function decodeGaps(stored: Uint8Array, rawLength: number, where: string): Uint8Array {
  const bytes = new Uint8Array(rawLength);
  let position = -1;
  for (let i = 0; i < stored.length; ) {
    let gap = 0;
    let shift = 0;
    for (;;) {
      const byte = stored[i++];
      if (byte === undefined || shift > 28) throw new SeenStoreError('STORE_CORRUPT', `${where}: bad gap coding`);
      gap += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if (byte < 0x80) break;
    }
    position += gap + 1;
    if (position >= rawLength * 8) throw new SeenStoreError('STORE_CORRUPT', `${where}: a set bit past the chunk`);
    bytes[position >>> 3]! |= 1 << (position & 7);
  }
  return bytes;
}
