import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asStoreError } from '../../errors.js';
import { checkNodeEntry, type NodeRegistry } from '../nodes.js';

/** Where a directory store keeps its serve nodes: one file per node (docs/format.md "Node files"). */
export const NODES_DIR = 'nodes';
/** The version of a node file's JSON; a file of another version is not read (a newer seenstore's node is left alone). */
const NODE_FILE_FORMAT = 1;
const SUFFIX = '.node';

interface NodeFile {
  readonly format: number;
  readonly address: string;
  readonly endsAtMs: number;
}

/**
 * The serve nodes of a directory store, which several processes on one host may share: a file
 * per node under `nodes/`, named after its address, holding when its entry ends by the store's
 * clock (the host's, shared by every process on it). A heartbeat rewrites the file whole (a
 * temporary file renamed over it: a reader never sees half of one); a reader skips and removes
 * files whose time has passed, so a killed node's file goes once its time to live is over. Files
 * rather than an LMDB record: a heartbeat then never waits for a write transaction, and a node's
 * entry never rides in the store's snapshots.
 */
export class DirectoryNodes implements NodeRegistry {
  readonly #dir: string;
  readonly #clock: () => number;

  constructor(storeDir: string, clock: () => number) {
    this.#dir = join(storeDir, NODES_DIR);
    this.#clock = clock;
  }

  async heartbeat(address: string, ttlMs: number): Promise<void> {
    checkNodeEntry(address, ttlMs);
    const path = this.#path(address);
    const temporary = `${path}.${process.pid}.tmp`;
    const file: NodeFile = { format: NODE_FILE_FORMAT, address, endsAtMs: this.#clock() + ttlMs };
    try {
      mkdirSync(this.#dir, { recursive: true });
      writeFileSync(temporary, `${JSON.stringify(file)}\n`);
      renameSync(temporary, path);
    } catch (error) {
      throw asStoreError(error, `registering node ${address} in ${this.#dir}`);
    }
  }

  async leave(address: string): Promise<void> {
    try {
      rmSync(this.#path(address), { force: true });
    } catch (error) {
      throw asStoreError(error, `removing node ${address} from ${this.#dir}`);
    }
  }

  async live(): Promise<string[]> {
    let names: string[];
    try {
      names = readdirSync(this.#dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw asStoreError(error, `listing ${this.#dir}`);
    }
    const nowMs = this.#clock();
    const live: string[] = [];
    for (const name of names) {
      if (!name.endsWith(SUFFIX)) continue;
      const file = readNodeFile(join(this.#dir, name));
      if (file === undefined) continue;
      if (file.endsAtMs > nowMs) live.push(file.address);
      else rmSync(join(this.#dir, name), { force: true });
    }
    return live.sort();
  }

  #path(address: string): string {
    return join(this.#dir, `${encodeURIComponent(address)}${SUFFIX}`);
  }
}

/** A node file's entry; undefined when it is gone meanwhile, unreadable, or of another format (left as it is). */
function readNodeFile(path: string): NodeFile | undefined {
  try {
    const file = JSON.parse(readFileSync(path, 'utf8')) as Partial<NodeFile>;
    if (file.format !== NODE_FILE_FORMAT || typeof file.address !== 'string' || typeof file.endsAtMs !== 'number')
      return undefined;
    return file as NodeFile;
  } catch {
    return undefined;
  }
}
