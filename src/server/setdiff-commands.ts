import type { SummarizeOptions } from '../setdiff/set-difference.js';
import { MAX_TREES } from '../setdiff/universe.js';
import { NORMALIZE_MODES, type NormalizeMode } from '../url/normalize.js';
import { argInteger, argKeyword, argNumber, argText } from './args.js';
import type { CommandSpec } from './command-table.js';
import { ReplyError, type ClientState, type ServerContext } from './context.js';
import { seenCommand } from './epoch-commands.js';
import { bulk, type Encoded } from './reply.js';
import type { Request } from './resp-parser.js';

/**
 * SEEN.SETDIFF.SUMMARY (docs/server.md, docs/setdiff.md): seed 004's summary of the scope's
 * frontier, the bytes `seenstore setdiff --against` reads, so that another machine learns which
 * of its URLs this one has not queued without either side shipping its list.
 */
export function setdiffCommands(): CommandSpec[] {
  return [
    seenCommand(
      'SEEN.SETDIFF.SUMMARY',
      -2,
      false,
      "The set-difference summary (a file's bytes) of the scope's frontier: its waiting and leased URLs",
      'SEEN.SETDIFF.SUMMARY key [BOOST trees] [RECALL fraction] [BURLS n] [NORMALIZE none|whatwg|crawler]',
      summary,
    ),
  ];
}

async function summary(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  const options = summaryOptions(request);
  const scope = await server.scope(argText(request, 1));
  // A scope never written to has no frontier: its summary is that of the empty set.
  const encoded = await scope.scope.frontier().setdiffSummary(options);
  return bulk(Buffer.from(encoded.bytes.buffer, encoded.bytes.byteOffset, encoded.bytes.length));
}

function summaryOptions(request: Request): SummarizeOptions {
  const options: { trees?: number; recallTarget?: number; bUrls?: number; normalize?: NormalizeMode } = {};
  for (let i = 2; i < request.argc; i += 2) {
    const option = argKeyword(request, i);
    if (i + 1 >= request.argc) throw new ReplyError('ERR syntax error');
    if (option === 'BOOST')
      options.trees = argInteger(request, i + 1, `ERR BOOST must be a whole number from 1 to ${MAX_TREES}`);
    else if (option === 'RECALL')
      options.recallTarget = argNumber(request, i + 1, 'ERR RECALL must be a fraction between 0 and 1');
    else if (option === 'BURLS') options.bUrls = argInteger(request, i + 1, 'ERR BURLS must be a whole number');
    else if (option === 'NORMALIZE') {
      const mode = argText(request, i + 1);
      if (!(NORMALIZE_MODES as readonly string[]).includes(mode))
        throw new ReplyError(`ERR NORMALIZE must be one of ${NORMALIZE_MODES.join(', ')}`);
      options.normalize = mode as NormalizeMode;
    } else throw new ReplyError('ERR syntax error');
  }
  if (options.trees !== undefined && (options.trees < 1 || options.trees > MAX_TREES))
    throw new ReplyError(`ERR BOOST must be a whole number from 1 to ${MAX_TREES}`);
  if (options.recallTarget !== undefined && !(options.recallTarget > 0 && options.recallTarget < 1))
    throw new ReplyError('ERR RECALL must be a fraction between 0 and 1');
  if (options.bUrls !== undefined && options.bUrls < 1) throw new ReplyError('ERR BURLS must be a whole number >= 1');
  return options;
}
