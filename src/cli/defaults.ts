/** Defaults of the CLI, in a module of their own so that the program's help can name them without loading the store. */
export const DEFAULT_STORE_DIR = '.seenstore';
export const DEFAULT_BATCH_SIZE = 10_000;
export const DEFAULT_BATCH_DELAY_MS = 50;
