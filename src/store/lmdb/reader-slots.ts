/**
 * Reader slots in LMDB's lock file (`lock.mdb`): every process that reads the store holds one
 * while it has the store open (a seenstore process holds one; `snapshot create` two while it
 * copies, one for its copy and one for its own reads). LMDB's default is 126, which a crawl of
 * many short-lived processes on one host passes (issue 17); past the table's end LMDB refuses the
 * read (`MDB_READERS_FULL`), which seenstore answers with `STORE_BUSY`.
 *
 * A slot costs 64 bytes of the lock file (1024 slots: 65,744 bytes, mapped shared by every
 * process), and LMDB scans only the slots ever used, so a larger table costs nothing per read.
 * LMDB sizes the table once, by the file: the process that opens the store while no other has it
 * open grows `lock.mdb` to its `maxReaders` (never shrinks it), and every later opener takes the
 * table the file has, whatever it asks for. So a store first opened by an older seenstore (126)
 * while it stays open keeps 126 slots until every process has closed it. Every `open` of lmdb in
 * seenstore passes this value all the same, so that whichever opens first sizes the table.
 */
export const LMDB_MAX_READERS = 1024;
