import type { XxHash } from '../hash/xxhash.js';

/**
 * Virtual nodes per owner. The largest owner's share of queues shrinks as 1/sqrt(vnodes); at 160
 * the measured max/mean on real hosts stays near 1.1-1.3 up to 64 owners (docs/results.md,
 * "Host affinity"), and a ring of 64 owners is 10,240 points (80 KiB), rebuilt in well under a ms.
 */
export const RING_VIRTUAL_NODES = 160;

/** The seed of ring positions: fixed, so that every taker of a fleet builds the same ring. */
const RING_SEED = 0x5ee2_a1f1_0000_0001n;

/**
 * A consistent-hash ring of crawler owners (seed 004's parallel crawlers: crawler x gets the URLs
 * that hash to x, and D +- 1 crawlers must not reshuffle everything). A queue belongs to the owner
 * of the first virtual node at or after the queue's position, clockwise. When an owner joins, it
 * takes queues only from others (about 1/D of them); when one leaves, only its own queues move.
 * Owners are ordered by name before the points are placed, so the ring depends on the set of
 * owners alone, not on the order a caller lists them in.
 */
export class OwnerRing {
  readonly owners: readonly string[];
  readonly #points: Uint32Array;
  readonly #ownerOfPoint: Uint16Array;
  readonly #hash: XxHash;
  readonly #words = new Uint32Array(2);

  constructor(owners: Iterable<string>, hash: XxHash, virtualNodes = RING_VIRTUAL_NODES) {
    const names = [...new Set(owners)].sort();
    if (names.length === 0) throw new TypeError('a ring needs at least one owner');
    if (names.length > 65_535) throw new TypeError('a ring holds at most 65,535 owners');
    if (!Number.isSafeInteger(virtualNodes) || virtualNodes < 1)
      throw new TypeError('virtualNodes must be a whole number >= 1');
    this.owners = names;
    this.#hash = hash;
    const count = names.length * virtualNodes;
    const positions = new Float64Array(count);
    names.forEach((name, o) => {
      for (let v = 0; v < virtualNodes; v++) {
        // Position in the high 32 bits, owner index in the low 16 (ties broken by owner order).
        positions[o * virtualNodes + v] = this.position(`${name}#${v}`) * 65_536 + o;
      }
    });
    positions.sort();
    this.#points = new Uint32Array(count);
    this.#ownerOfPoint = new Uint16Array(count);
    for (let i = 0; i < count; i++) {
      this.#points[i] = Math.floor(positions[i]! / 65_536);
      this.#ownerOfPoint[i] = positions[i]! % 65_536;
    }
  }

  /** A key's place on the ring: the high word of its xxh64 under the ring's seed. */
  position(key: string): number {
    this.#hash.hashInto(key, RING_SEED, this.#words, 0);
    return this.#words[1]!;
  }

  /** The owner of a queue key. */
  ownerOf(queueKey: string): string {
    return this.ownerAt(this.position(queueKey));
  }

  /** The owner of a ring position (0 to 2^32 - 1). */
  ownerAt(position: number): string {
    const points = this.#points;
    let low = 0;
    let high = points.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (points[mid]! < position) low = mid + 1;
      else high = mid;
    }
    return this.owners[this.#ownerOfPoint[low === points.length ? 0 : low]!]!;
  }
}
