/**
 * The server's log: one line per start, stop, rotation and error, on stderr. Plain text
 * (`seenstore serve: <time> <event> key=value ...`) or, with --log-json, one JSON object per line.
 * Lines below the log's level are not written: `info` (the default) writes every event but
 * `debug` ones; URLFrontier's SetLogLevel changes it while serve runs.
 */
export type LogEvent =
  | 'created'
  | 'start'
  | 'urlfrontier'
  | 'stop'
  | 'rotation'
  | 'prune'
  | 'snapshot'
  | 'error'
  | 'warning'
  | 'debug';

/** Levels from the most to the least verbose (URLFrontier's LogLevelParams.Level, whose TRACE is debug here). */
export const LOG_LEVELS = ['debug', 'info', 'warning', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  log(event: LogEvent, fields: Readonly<Record<string, string | number | boolean | null>>): void;
  /** Whether a line of `level` would be written (spares building a debug line nobody reads). */
  enabled(level: LogLevel): boolean;
  setLevel(level: LogLevel): void;
}

function levelOf(event: LogEvent): LogLevel {
  return event === 'debug' ? 'debug' : event === 'warning' ? 'warning' : event === 'error' ? 'error' : 'info';
}

export function createLogger(
  json: boolean,
  write: (line: string) => void = (line) => process.stderr.write(line),
  level: LogLevel = 'info',
): Logger {
  let threshold = LOG_LEVELS.indexOf(level);
  const enabled = (at: LogLevel): boolean => LOG_LEVELS.indexOf(at) >= threshold;
  return {
    enabled,
    setLevel(next) {
      threshold = LOG_LEVELS.indexOf(next);
    },
    log(event, fields) {
      if (!enabled(levelOf(event))) return;
      const time = new Date().toISOString();
      if (json) {
        write(`${JSON.stringify({ time, event, ...fields })}\n`);
        return;
      }
      const pairs = Object.entries(fields).map(
        ([key, value]) =>
          `${key}=${typeof value === 'string' && /[\s"=]/.test(value) ? JSON.stringify(value) : String(value)}`,
      );
      write(`seenstore serve: ${time} ${event}${pairs.length > 0 ? ` ${pairs.join(' ')}` : ''}\n`);
    },
  };
}
