import { SeenStoreError } from '../index.js';
import { ReplyError, type ServerContext } from './context.js';
import { error } from './reply.js';

/**
 * The reply for an error thrown by a command. A ReplyError is the command's own answer; a
 * SeenStoreError is `-CODE message` with its stable code (docs/errors.md); anything else is a bug,
 * logged with its stack on the server and answered `-ERR internal error` without one.
 */
export function errorReply(server: ServerContext, thrown: unknown, command: string): string {
  server.counters.errorReplies++;
  if (thrown instanceof ReplyError) {
    server.metrics.errors.inc({ kind: 'reply' });
    return error(thrown.message);
  }
  if (thrown instanceof SeenStoreError) {
    server.metrics.errors.inc({ kind: thrown.code });
    if (
      thrown.code === 'INTERNAL' ||
      thrown.code === 'STORE_CORRUPT' ||
      thrown.code === 'STORE_FULL' ||
      thrown.code === 'IO_ERROR'
    ) {
      server.logger.log('error', { command, code: thrown.code, message: thrown.message });
    }
    return error(`${thrown.code} ${thrown.message}`);
  }
  server.metrics.errors.inc({ kind: 'internal' });
  const { message, stack } = thrown instanceof Error ? thrown : { message: String(thrown), stack: undefined };
  server.logger.log('error', { command, code: 'INTERNAL', message, stack: stack ?? null });
  return error('ERR internal error (the server log has the details)');
}
