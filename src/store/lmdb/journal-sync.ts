/**
 * Where the journal's next `fdatasync` runs: on the calling thread, or in libuv's thread pool.
 *
 * In the pool, the event loop goes on while the disk works: batches that become ready meanwhile
 * are decided and written, and share the next sync (group commit). But the hand-off costs two
 * thread wake-ups: ~50 µs here, where the sync itself takes ~100 µs. A batch that is alone has
 * nothing to overlap, and waits for them in full.
 *
 * So a sync runs on the calling thread while the journal is quiet: the last sync covered one batch,
 * no batch asked for a later sync while it ran, and it took less than INLINE_SYNC_MS_MAX. Before an
 * inline sync the caller yields to the event loop once, so that batches already waiting to run
 * write their frames first and share it: serve's store thread gets each connection's batch as a
 * message of its own, and without the yield each would sync alone, on the calling thread, one after
 * another (64 connections over 16 keys: 23–26k adds/s against 35–40k). Finding company, the
 * journal goes back to the pool. Durability is the same either way: an add is acknowledged after
 * an fdatasync that began after its frames were written.
 */

/** A slower sync than this blocks the event loop too long: the next runs in the pool. */
export const INLINE_SYNC_MS_MAX = 2;

export class SyncPacing {
  /** Batches written since the last sync began. */
  #written = 0;
  /** A caller waited for a later sync while the pool's ran. */
  #waitedMeanwhile = false;
  #inline = false;

  /** A batch's frames were written. */
  wrote(): void {
    this.#written++;
  }

  /** A caller arrived while a sync ran and needs the next one. */
  waited(): void {
    this.#waitedMeanwhile = true;
  }

  /** Whether the sync about to begin runs on the calling thread. */
  get inline(): boolean {
    return this.#inline;
  }

  /** A sync begins: returns how many batches it covers. */
  begin(): number {
    const covered = this.#written;
    this.#written = 0;
    this.#waitedMeanwhile = false;
    return covered;
  }

  /** A sync that covered `covered` batches ended after `ms`: decides where the next one runs. */
  end(covered: number, ms: number): void {
    this.#inline = covered <= 1 && !this.#waitedMeanwhile && ms < INLINE_SYNC_MS_MAX;
  }
}
