/**
 * The one error class of seenstore. `code` is stable once published (docs/errors.md lists every
 * code with its CLI exit code); `message` is for humans and may change.
 */
export const ERROR_CODES = {
  /** Bad command-line usage or an option value out of range. */
  USAGE: 2,
  /** An input line that is not a usable URL (invalid UTF-8, too long, unparsable when normalising). */
  INVALID_URL: 3,
  /** Another process holds a lock this operation needs exclusively. */
  STORE_LOCKED: 4,
  /** The store (or a record in it) was written by a format or hash scheme this version does not know. */
  FORMAT_UNSUPPORTED: 5,
  /** Stored data failed a check: bad checksum, missing or malformed record, not a seenstore directory. */
  STORE_CORRUPT: 6,
  /** An add was sent to an epoch that is no longer open. */
  EPOCH_SEALED: 7,
  /** A filter would exceed the largest geometry this format supports. */
  CAPACITY_EXCEEDED: 8,
  /** The LMDB map or the disk is full; nothing of the failed batch was acknowledged. */
  STORE_FULL: 9,
  /** The operating system refused a file operation (permissions, not a directory, I/O error). */
  IO_ERROR: 10,
  /** A named scope, epoch or file does not exist. */
  NOT_FOUND: 11,
  /** The store handle was used after close(). */
  STORE_CLOSED: 12,
  /** Filters that must share hash scheme, geometry and seeds do not (merge); the message names the mismatch. */
  INCOMPATIBLE: 13,
  /** A bug: an internal invariant did not hold. Please report it. */
  INTERNAL: 70,
  /** A long operation was stopped at a safe point (its AbortSignal; the CLI's SIGINT or SIGTERM); nothing of it was kept. */
  INTERRUPTED: 130,
  /** Every reader slot of the store is taken: too many processes have it open at once (LMDB's MDB_READERS_FULL). */
  STORE_BUSY: 14,
  /** The store's driver does not have this capability (Capabilities in store/driver.ts; docs/architecture.md "Drivers"). */
  UNSUPPORTED: 15,
  /** The backend could not be reached, or did not answer within its bounded time; nothing unacknowledged is taken as done. */
  STORE_UNAVAILABLE: 16,
  /**
   * The reader of a command's output went away (EPIPE): what the command recorded and had not
   * surely delivered is kept for the next run to print first. 141, as a shell reports a writer
   * that SIGPIPE ended.
   */
  OUTPUT_CLOSED: 141,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The CLI's exit code when `salvage` made the copy but had to leave something out (the report
 * lists it). Not an error code: the command did its work. Kept apart from the error codes, which
 * grow upward from 2, as `stats --check`'s 1 is (docs/errors.md).
 */
export const SALVAGED_IN_PART_EXIT = 20;

export class SeenStoreError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SeenStoreError';
    this.code = code;
  }

  /** The CLI exit code for this error's code. */
  get exitCode(): number {
    return ERROR_CODES[this.code];
  }

  // Factories of the errors that several layers or drivers raise: one code and one wording each
  // (hypercore's HypercoreError.SESSION_CLOSED()). One-off errors are built where they happen.

  /** STORE_CLOSED: `what` (`the store at DIR`) was used after close(), or while it closed. */
  static closed(what: string): SeenStoreError {
    return new SeenStoreError('STORE_CLOSED', `${what} is closed`);
  }

  /** CAPACITY_EXCEEDED: sizing refused a filter past the largest geometry (its error, kept as the cause, says which). */
  static capacity(sizingError: unknown): SeenStoreError {
    return new SeenStoreError('CAPACITY_EXCEEDED', (sizingError as Error).message, { cause: sizingError });
  }

  /** NOT_FOUND: a scope that an operation needs does not exist. */
  static noScope(scope: string): SeenStoreError {
    return new SeenStoreError('NOT_FOUND', `scope ${scope} does not exist`);
  }

  /** NOT_FOUND: the scope has no epoch `epoch` (never created, or pruned). */
  static noEpoch(scope: string, epoch: number): SeenStoreError {
    return new SeenStoreError('NOT_FOUND', `scope ${scope} has no epoch ${epoch} (never created, or pruned)`);
  }

  /** EPOCH_SEALED: a write reached an epoch that is no longer the scope's open one; `detail` says more (the open epoch, who won). */
  static sealed(scope: string, epoch: number, detail?: string): SeenStoreError {
    return new SeenStoreError(
      'EPOCH_SEALED',
      `epoch ${scope}/${epoch} is no longer open${detail === undefined ? '' : ` (${detail})`}`,
    );
  }

  /** USAGE: an import into a scope that exists (checked by the engine, and again inside the backend's atomic step, which a racing creator may beat). */
  static scopeExists(scope: string): SeenStoreError {
    return new SeenStoreError(
      'USAGE',
      `scope ${scope} exists; import into a new scope (--scope NAME), or merge into an epoch (merge --into-epoch)`,
    );
  }

  /** USAGE: a string given as a frontier id that this backend did not hand out (each backend has its own id form). */
  static notFrontierId(id: unknown): SeenStoreError {
    return new SeenStoreError('USAGE', `not a frontier id: ${JSON.stringify(id)} (ids are what take printed)`);
  }

  /** USAGE: a write on a store opened read-only. */
  static readOnly(doing: string, location: string): SeenStoreError {
    return new SeenStoreError(
      'USAGE',
      `cannot ${doing}: the store at ${location} is open read-only (open it without readOnly to write)`,
    );
  }
}

/** Wraps an unknown failure from LMDB or the file system into a typed error, keeping the cause. */
export function asStoreError(error: unknown, doing: string): SeenStoreError {
  if (error instanceof SeenStoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const errno = (error as { code?: unknown } | null)?.code;
  if (/MDB_MAP_FULL|ENOSPC|No space left/i.test(message) || errno === 'ENOSPC') {
    return new SeenStoreError('STORE_FULL', `${doing}: the store's map or disk is full (${message})`, { cause: error });
  }
  if (/MDB_READERS_FULL/.test(message)) {
    return new SeenStoreError(
      'STORE_BUSY',
      `${doing}: too many processes have the store open (every one of LMDB's reader slots is taken); try again once some have finished (${message})`,
      { cause: error },
    );
  }
  if (/MDB_CORRUPTED|MDB_INVALID|MDB_PAGE_NOTFOUND|MDB_VERSION_MISMATCH/.test(message)) {
    return new SeenStoreError('STORE_CORRUPT', `${doing}: LMDB reports damage (${message})`, { cause: error });
  }
  // LMDB reports a failed page write or sync, or a directory where it cannot create its files
  // (ENOENT in /proc), as the system's message.
  if (
    (typeof errno === 'string' && /^E[A-Z]+$/.test(errno)) ||
    /Input\/output error|Read-only file system|Permission denied|No such file or directory|Not a directory|Operation not permitted/.test(
      message,
    )
  ) {
    return new SeenStoreError('IO_ERROR', `${doing}: ${message}`, { cause: error });
  }
  return new SeenStoreError('INTERNAL', `${doing}: ${message}`, { cause: error });
}

/**
 * Checks an invariant: a condition that holds unless seenstore has a bug (not an operating error,
 * which is a typed error of its own). Throws INTERNAL naming the invariant. Meant for function
 * boundaries, not for loops over URLs.
 */
export function assert(condition: unknown, invariant: string): asserts condition {
  if (!condition) throw new SeenStoreError('INTERNAL', `invariant broken: ${invariant}`);
}

/** The error of an operation the store's backend does not have. */
export function unsupported(backend: string, doing: string): SeenStoreError {
  return new SeenStoreError(
    'UNSUPPORTED',
    `cannot ${doing}: the ${backend} backend does not support it (docs/architecture.md "Drivers" lists each driver's capabilities)`,
  );
}
