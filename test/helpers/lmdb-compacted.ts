/**
 * lmdb-js alone, no seenstore: `lmdb-compacted DIR [prime]` fills an environment in DIR/filled with
 * 200,000 keys in one transaction, copies it with LMDB's compacting copy into DIR/compacted, opens
 * the copy and deletes 3,000 keys in one transaction, printing `deleted`. With `prime`, one small
 * transaction comes first (what seenstore's primeEmptyFreeList does). lmdb-js 3.5.6 aborts at the
 * delete without it (docs/reliability.md "Snapshots and lmdb-js's free list").
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';

const KEYS = 200_000;
const DELETES = 3_000;
const [dir, prime] = process.argv.slice(2);
const options = { noSubdir: false, maxDbs: 8, pageSize: 4096 } as const;
const key = (i: number): Buffer => {
  const bytes = Buffer.alloc(8);
  bytes.writeUInt32BE(Math.imul(i, 2_654_435_761) >>> 0, 0);
  bytes.writeUInt32BE(i, 4);
  return bytes;
};

const filled = open({ path: join(dir!, 'filled'), ...options });
const db = filled.openDB<Buffer, Buffer>({ name: 'keys', keyEncoding: 'binary', encoding: 'binary' });
const value = Buffer.alloc(20, 7);
await filled.transaction(() => {
  for (let i = 0; i < KEYS; i++) db.putSync(key(i), value);
});
mkdirSync(join(dir!, 'compacted'));
await filled.backup(join(dir!, 'compacted'), true);
await filled.close();

const copy = open({ path: join(dir!, 'compacted'), ...options });
const copied = copy.openDB<Buffer, Buffer>({ name: 'keys', keyEncoding: 'binary', encoding: 'binary' });
if (prime === 'prime') await copy.transaction(() => copied.putSync(key(0), value));
await copy.transaction(() => {
  for (let i = 0; i < DELETES; i++) copied.removeSync(key(i));
});
process.stdout.write('deleted\n');
await copy.close();
