/** Defaults of the CLI, in a module of their own so that the program's help can name them without loading the store. */
export const DEFAULT_STORE_DIR = '.seenstore';
export const DEFAULT_BATCH_SIZE = 10_000;
export const DEFAULT_BATCH_DELAY_MS = 50;
/**
 * `frontier push`'s batch: the most a delivering run takes in one step (MAX_BATCH_URLS). Each batch
 * is one durable commit, and a frontier commit writes back every page of the location index it
 * touches: once that index has more pages than a batch has URLs, one per URL. Larger batches
 * share those pages and the fsync (docs/frontier.md, "Capacity plan"); a slow producer still gets
 * its answers after --batch-delay-ms.
 */
export const DEFAULT_PUSH_BATCH_SIZE = 65_536;
