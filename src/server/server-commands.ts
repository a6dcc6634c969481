import { createHash, timingSafeEqual } from 'node:crypto';
import { argBytes, argInteger, argKeyword, argText, wrongArity } from './args.js';
import type { CommandSpec, CommandTable } from './command-table.js';
import { ReplyError, type ClientState, type ServerContext } from './context.js';
import { array, bulk, integer, map, nil, OK, PONG, type Encoded, type Protocol } from './reply.js';
import type { Request } from './resp-parser.js';
import { SERVER_VERSION, serverInfo } from './info.js';

const NO_PASSWORD =
  'ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?';
const WRONG_PASSWORD = 'WRONGPASS invalid username-password pair or user is disabled.';

/** SHA-256 of a password: AUTH compares digests, equal in length whatever was sent, in constant time. */
export function passwordDigest(password: string | Buffer): Buffer {
  return createHash('sha256').update(password).digest();
}

/**
 * Checks `password` (user `default` only, as Redis without ACLs) and marks the client
 * authenticated; false for a wrong one, whose reply the caller sends through `refused`.
 */
function authenticate(server: ServerContext, client: ClientState, user: string, password: Buffer): boolean {
  if (server.passwordDigest === undefined) throw new ReplyError(NO_PASSWORD);
  const matches = timingSafeEqual(passwordDigest(password), server.passwordDigest);
  if (!matches || user !== 'default') {
    server.logger.log('warning', { event: 'auth-failed', client: client.id, addr: client.remoteAddress });
    return false;
  }
  client.authenticated = true;
  return true;
}

/** The wrong-password error, once the server's pace of failures allows it (auth-throttle.ts). */
async function refused(server: ServerContext): Promise<never> {
  await server.authThrottle.failed();
  throw new ReplyError(WRONG_PASSWORD);
}

function ping(_server: ServerContext, _client: ClientState, request: Request): Encoded {
  if (request.argc > 2) throw wrongArity('ping');
  return request.argc === 2 ? bulk(argBytes(request, 1)) : PONG;
}

function hello(
  server: ServerContext,
  client: ClientState,
  request: Request,
  proto: Protocol,
): Encoded | Promise<Encoded> {
  let next: Protocol = proto;
  if (request.argc >= 2) {
    const version = argText(request, 1);
    if (version !== '2' && version !== '3') throw new ReplyError('NOPROTO unsupported protocol version');
    next = version === '3' ? 3 : 2;
  }
  let name: string | undefined;
  for (let i = 2; i < request.argc; i++) {
    const option = argKeyword(request, i);
    if (option === 'AUTH' && i + 2 < request.argc) {
      if (!authenticate(server, client, argText(request, i + 1), argBytes(request, i + 2))) return refused(server);
      i += 2;
    } else if (option === 'SETNAME' && i + 1 < request.argc) {
      name = checkName(argText(request, ++i));
    } else {
      throw new ReplyError(`ERR Syntax error in HELLO option '${argText(request, i)}'`);
    }
  }
  if (server.passwordDigest !== undefined && !client.authenticated) {
    throw new ReplyError(
      'NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time',
    );
  }
  if (name !== undefined) client.name = name;
  client.proto = next;
  return map(
    [
      ['server', bulk('seenstore')],
      ['version', bulk(SERVER_VERSION)],
      ['proto', integer(next)],
      ['id', integer(client.id)],
      ['mode', bulk('standalone')],
      ['role', bulk('master')],
      [
        'modules',
        array([
          map(
            [
              ['name', bulk('bf')],
              ['ver', integer(20_800)],
            ],
            next,
          ),
        ]),
      ],
    ],
    next,
  );
}

function auth(server: ServerContext, client: ClientState, request: Request): Encoded | Promise<Encoded> {
  if (request.argc !== 2 && request.argc !== 3) throw wrongArity('auth');
  const user = request.argc === 3 ? argText(request, 1) : 'default';
  return authenticate(server, client, user, argBytes(request, request.argc - 1)) ? OK : refused(server);
}

function select(_server: ServerContext, _client: ClientState, request: Request): Encoded {
  const db = argInteger(request, 1, 'ERR value is not an integer or out of range');
  if (db !== 0) throw new ReplyError('ERR DB index is out of range');
  return OK;
}

/** A client name: no spaces or newlines (Redis's rule), so CLIENT INFO stays one parseable line. */
function checkName(name: string): string {
  if (/[\s]/.test(name))
    throw new ReplyError('ERR Client names cannot contain spaces, newlines or special characters.');
  return name;
}

export function clientLine(client: ClientState, now: number): string {
  const age = Math.floor((now - client.createdAtMs) / 1000);
  const idle = Math.floor((now - client.lastCommandAtMs) / 1000);
  return `id=${client.id} addr=${client.remoteAddress} laddr=${client.localAddress} name=${client.name} age=${age} idle=${idle} db=0 resp=${client.proto} pending=${client.pendingReplies} events=${client.reading ? 'r' : ''} cmd=${client.lastCommand.toLowerCase()}`;
}

function clientCommand(server: ServerContext, client: ClientState, request: Request): Encoded {
  const sub = argKeyword(request, 1);
  switch (sub) {
    case 'SETNAME':
      if (request.argc !== 3) throw wrongArity('client|setname');
      client.name = checkName(argText(request, 2));
      return OK;
    case 'GETNAME':
      return client.name === '' ? nil(client.proto) : bulk(client.name);
    case 'ID':
      return integer(client.id);
    case 'INFO':
      return bulk(`${clientLine(client, Date.now())}\n`);
    case 'LIST': {
      const now = Date.now();
      return bulk([...server.clients()].map((c) => `${clientLine(c, now)}\n`).join(''));
    }
    case 'SETINFO':
      // Client libraries announce their name and version (node-redis, redis-py 5); accepted, not kept.
      if (request.argc !== 4) throw wrongArity('client|setinfo');
      return OK;
    default:
      throw new ReplyError(`ERR unknown subcommand '${argText(request, 1)}'. Try CLIENT HELP.`);
  }
}

function commandCommand(table: () => CommandTable) {
  return (_server: ServerContext, _client: ClientState, request: Request, proto: Protocol): Encoded => {
    const specs = table();
    if (request.argc === 1) return array(specs.all().map((spec) => specs.info(spec)));
    const sub = argKeyword(request, 1);
    const names: string[] = [];
    for (let i = 2; i < request.argc; i++) names.push(argText(request, i));
    switch (sub) {
      case 'COUNT':
        return integer(specs.all().length);
      case 'DOCS':
        return specs.docs(names, proto);
      case 'INFO':
        return specs.infoOf(names, proto);
      case 'LIST':
        return array(specs.all().map((spec) => bulk(spec.name.toLowerCase())));
      default:
        throw new ReplyError(`ERR unknown subcommand '${argText(request, 1)}'. Try COMMAND HELP.`);
    }
  };
}

async function info(server: ServerContext, _client: ClientState, request: Request): Promise<Encoded> {
  const sections: string[] = [];
  for (let i = 1; i < request.argc; i++) sections.push(argText(request, i).toLowerCase());
  return bulk(await serverInfo(server, sections));
}

function connection(
  name: string,
  arity: number,
  summary: string,
  syntax: string,
  run: CommandSpec['run'],
  flags: string[] = ['fast'],
): CommandSpec {
  return { name, arity, flags, firstKey: 0, group: 'connection', summary, syntax, kind: 'ordered', run };
}

/** PING, ECHO, HELLO, AUTH, QUIT, SELECT, CLIENT, COMMAND, INFO. `table` is the server's whole command table (for COMMAND). */
export function serverCommands(table: () => CommandTable): CommandSpec[] {
  return [
    connection('PING', -1, 'Answers PONG, or the message', 'PING [message]', ping),
    connection('ECHO', 2, 'Answers the message', 'ECHO message', (_s, _c, request) => bulk(argBytes(request, 1))),
    connection(
      'HELLO',
      -1,
      'Chooses RESP2 or RESP3, optionally authenticates and names the connection',
      'HELLO [protover [AUTH username password] [SETNAME clientname]]',
      hello,
      ['noauth', 'fast'],
    ),
    connection(
      'AUTH',
      -2,
      'Authenticates with the server password (--requirepass-file or SEENSTORE_PASSWORD)',
      'AUTH [username] password',
      auth,
      ['noauth', 'fast'],
    ),
    connection(
      'QUIT',
      -1,
      'Closes the connection once earlier replies are sent',
      'QUIT',
      (_s, client) => {
        client.closeAfterReplies();
        return OK;
      },
      ['noauth', 'fast'],
    ),
    connection('SELECT', 2, 'Selects database 0, the only one', 'SELECT 0', select),
    connection(
      'CLIENT',
      -2,
      'SETNAME, GETNAME, ID, INFO, LIST, SETINFO',
      'CLIENT SETNAME name | GETNAME | ID | INFO | LIST | SETINFO attr value',
      clientCommand,
    ),
    {
      ...connection(
        'COMMAND',
        -1,
        'Describes the commands (COMMAND, COUNT, DOCS, INFO, LIST)',
        'COMMAND [COUNT | DOCS [name...] | INFO [name...] | LIST]',
        commandCommand(table),
      ),
      group: 'server',
    },
    {
      ...connection('INFO', -1, 'Server, clients, stats, persistence and scope figures', 'INFO [section...]', info, []),
      group: 'server',
    },
  ];
}
