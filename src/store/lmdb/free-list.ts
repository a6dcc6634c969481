import type { StoreEnv } from './env.js';
import { STORE_HEADER_KEY } from './store-header.js';

/**
 * lmdb-js 3.5.6 aborts the process (mdb.c, mdb_page_alloc: "Assertion 'key.mv_size > 0'
 * failed") at the first write transaction that allocates a few hundred pages in a file whose
 * free-list database is empty while its transaction id is past the first: the file LMDB's
 * compacting copy makes (seenstore's snapshots until 0.2.0, `mdb_copy -c`). A live store never has
 * an empty free list after its first commits (every commit frees the pages it copied on write); a
 * new one allocates from the file's end and is not affected.
 *
 * So a writable open of such a file first commits one small transaction (the store header
 * rewritten as it is, a few pages): it leaves a free-list record, and lmdb-js allocates as ever
 * after it (test/snapshot.test.ts; a compacted copy of 1M keys then took 50 transactions of up
 * to 20,000 deletes each, where its first of 300 aborted without it).
 */
export function primeEmptyFreeList(env: StoreEnv): void {
  if (env.readOnly) return;
  const { free } = env.root.getStats() as { free?: { entryCount?: number } };
  if (free?.entryCount !== 0) return;
  env.write(() => {
    const header = env.metaDb.getBinary(STORE_HEADER_KEY);
    if (header !== undefined) env.metaDb.putSync(STORE_HEADER_KEY, header);
  });
}
