/**
 * The server's log: one line per start, stop, rotation and error, on stderr. Plain text
 * (`seenstore serve: <time> <event> key=value ...`) or, with --log-json, one JSON object per line.
 */
export type LogEvent = 'created' | 'start' | 'urlfrontier' | 'stop' | 'rotation' | 'prune' | 'snapshot' | 'error' | 'warning';

export interface Logger {
  log(event: LogEvent, fields: Readonly<Record<string, string | number | boolean | null>>): void;
}

export function createLogger(json: boolean, write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  return {
    log(event, fields) {
      const time = new Date().toISOString();
      if (json) {
        write(`${JSON.stringify({ time, event, ...fields })}\n`);
        return;
      }
      const pairs = Object.entries(fields).map(([key, value]) => `${key}=${typeof value === 'string' && /[\s"=]/.test(value) ? JSON.stringify(value) : String(value)}`);
      write(`seenstore serve: ${time} ${event}${pairs.length > 0 ? ` ${pairs.join(' ')}` : ''}\n`);
    },
  };
}
