import type { XxHash } from '../hash/xxhash.js';
import type { Backend, MigrationReport, RestoreResult, SalvageReport, VerifyReport } from './backend.js';
import type { SeenStoreError } from '../errors.js';

/**
 * A backend as a driver (in the manner of unstorage's `defineDriver` and abstract-level's
 * `supports` manifest): it owns its location scheme(s), parses its own options into its own type,
 * and states what it can do. The engine, the CLI and the contract suite read the manifest; none of
 * them knows a backend by name. `open` in store/open.ts finds the driver by the location's scheme.
 *
 * The driver object itself must stay light to import: it loads its backend's module (a native
 * addon, a network client) only when a store of its kind is opened.
 */
export interface Driver<Options = unknown> extends DriverManifest {
  /** Picks and checks this driver's own settings out of the store options (USAGE on a bad one); frozen. */
  parseOptions(settings: StoreSettings): Options;
  open(location: string, common: OpenOptions, options: Options): Promise<Backend>;
  /** The location fit for messages (a password in it is never printed). */
  redact(location: string): string;
  /** The location as a command line gives it, made independent of the working directory (a path: absolute). */
  resolve(location: string): string;
  /** True when the driver can tell, without opening, that no store is at the location (false: there is one, or it cannot tell). */
  knownAbsent(location: string): Promise<boolean>;
  /** The operations on a closed store, where the driver has them (`capabilities.offline`). */
  offline?(): Promise<OfflineOperations>;
}

/** Who a driver is and what it can do: all that the engine reads of it (Backend.driver). */
export interface DriverManifest {
  /** The backend's name, for messages and INFO lines (`lmdb`, `redis`, `memory`). */
  readonly name: string;
  /**
   * The location schemes it serves (`redis`, `rediss`), lower case, without `://`. The one driver
   * whose list is empty takes a location with no scheme: a directory.
   */
  readonly schemes: readonly string[];
  readonly capabilities: Capabilities;
}

/**
 * A driver with its options type erased, as the registry holds it: what its parseOptions returns
 * goes only to its own open.
 */
export function registered<Options>(driver: Driver<Options>): Driver<unknown> {
  return driver as unknown as Driver<unknown>;
}

/** What a driver can do: read instead of the driver's name (docs/architecture.md "Drivers"). */
export interface Capabilities {
  /** Data outlives the process: a store opened again finds it. */
  readonly persistent: boolean;
  /**
   * Who makes an acknowledged write durable, as INFO's persistence section reports it: `store`
   * (seenstore itself: an add is acknowledged once its journal commit is synced), `server` (the
   * servers the store lives on, as their operator set their persistence: Redis's AOF or RDB;
   * seenstore neither sees nor reports it), `none` (nothing outlives the process).
   */
  readonly durability: 'store' | 'server' | 'none';
  /** Several processes (or machines) may open one location at once and share every decision. */
  readonly sharedAcrossProcesses: boolean;
  /** Snapshots, verify and space use of an open store: `Backend.maintenance` is set. */
  readonly maintenance: boolean;
  /** Migrate, restore and verify of a closed store: `Driver.offline` is set. */
  readonly offline: boolean;
  /** Checkpoints do something (fold a log into the bits); elsewhere they answer `clean`. */
  readonly checkpoints: boolean;
  /**
   * A durable commit holds the thread that makes it: the library syncs to disk inside the call
   * (LMDB: 0.3-0.9 ms here, more on a busy disk). `seenstore serve` runs such a store on a thread
   * of its own, so that a commit never stops the server from reading and answering sockets; a
   * store whose commits are network round trips (Redis), or that has none (memory), stays on the
   * server's thread and saves the hop.
   */
  readonly commitsBlockThread: boolean;
  /**
   * How a frontier's `take` orders what it hands out: oldest first over the whole frontier, or
   * oldest first within each partition with the partitions in turn.
   */
  readonly frontierOrder: 'oldest-first' | 'per-partition';
  /**
   * Whose clock times the frontier's leases: `options` (SeenStoreOptions.clock, in this process),
   * or `server` (a remote store's own: Redis TIME, or the time of a test's clock option passed in
   * each call, docs/redis.md "Time"; a take answered after its lease ended, by the time elapsed
   * here, hands out nothing there, docs/frontier.md).
   */
  readonly leaseClock: 'options' | 'server';
  /** The strategy of new scopes that name none (`classic`; Redis: `partitioned`, which spreads over a cluster). */
  readonly defaultStrategy: string;
  /** Bytes a filter of `mBits` bits takes in the backend's storage once all of it is written (sizing plans). */
  storedBytes(mBits: number): number;
}

/** What every driver's open receives, whatever the backend. */
export interface OpenOptions {
  readonly hash: XxHash;
  /** Create an empty store when there is none (else NOT_FOUND). */
  readonly create: boolean;
  readonly readOnly: boolean;
  readonly warn: (message: string) => void;
}

/** The store options as the caller gave them (SeenStoreOptions): each driver takes what applies to it. */
export type StoreSettings = Readonly<Record<string, unknown>>;

/** Operations on a closed store (a driver with `capabilities.offline`). */
export interface OfflineOperations {
  migrate(location: string, settings: StoreSettings & { readonly snapshot?: boolean }): Promise<MigrationReport>;
  restore(location: string, name: string, settings: StoreSettings): Promise<RestoreResult>;
  /** The report of a store that open refused as damaged (STORE_CORRUPT). */
  damagedStoreReport(location: string, refusal: SeenStoreError): VerifyReport;
  /** Copies everything readable of the store (damaged or not) into a new store at `to`. */
  salvage(location: string, to: string, settings: StoreSettings): Promise<SalvageReport>;
}

/**
 * A numeric setting, or undefined when absent. Its range is the driver's to check where it uses
 * it (SeenStoreOptions types it for TypeScript callers).
 */
export function numberSetting(settings: StoreSettings, name: string): number | undefined {
  return settings[name] as number | undefined;
}
