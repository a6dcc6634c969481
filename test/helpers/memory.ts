let stores = 0;

/**
 * A fresh memory:// store location (the memory driver): for tests of the engine that do not test
 * where the bits live, which run faster on it and leave nothing on disk.
 */
export function memoryStore(what = 'test'): string {
  return `memory://${what}-${process.pid}-${++stores}`;
}
