/** Exit codes of a command stopped by a signal: 128 + the signal's number, as shells report them. */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

const controller = new AbortController();
let received: StopSignal | undefined;
let installed = false;

/**
 * How the admin commands (import, export, merge, epoch rotate and prune, snapshot create and
 * restore, migrate, verify and diff --against of export files) stop on SIGINT and SIGTERM: the
 * first signal aborts the returned AbortSignal, which the library looks at at its safe points and
 * answers with INTERRUPTED, having removed whatever it had half-made; main then exits 130 or 143.
 * An operation past its last safe point completes and exits as usual. A second signal exits at
 * once, for an operation that never reaches a safe point (its temporary files are then removed by
 * the next command that meets them). The delivering commands (filter-new, frontier push) stop
 * reading at the first signal and finish the batch being written (delivered-output.ts); the other
 * commands that only stream URLs keep the default: a signal ends them at once, which loses
 * nothing they acknowledged.
 */
export function stopOnSignals(): AbortSignal {
  if (!installed) {
    installed = true;
    for (const name of Object.keys(SIGNAL_EXIT_CODES) as StopSignal[]) {
      process.on(name, () => {
        if (received !== undefined) process.exit(SIGNAL_EXIT_CODES[name]);
        received = name;
        controller.abort(new Error(name));
      });
    }
  }
  return controller.signal;
}

/** The exit code for the signal that stopped the command, if one came. */
export function signalExitCode(): number | undefined {
  return received === undefined ? undefined : SIGNAL_EXIT_CODES[received];
}
