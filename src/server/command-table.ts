import type { ClientState, ServerContext } from './context.js';
import { array, bulk, integer, map, nilArray, simple, type Encoded, type Protocol } from './reply.js';
import type { Request } from './resp-parser.js';

/**
 * How a command is ordered against the connection's earlier ones. `write`: joins its scope's group
 * commit at once (pipelined adds of one connection share a batch) unless an earlier `ordered`
 * command is still running. `ordered`: runs once every earlier command of the connection is done,
 * so a read sees the connection's own writes. Replies always leave in request order.
 */
export type CommandKind = 'write' | 'ordered';

export type Handler = (
  server: ServerContext,
  client: ClientState,
  request: Request,
  proto: Protocol,
) => Encoded | Promise<Encoded>;

export interface CommandSpec {
  /** Upper case, as clients send it (matched case-insensitively). */
  readonly name: string;
  /** Redis's convention: N exactly N words with the name, -N at least N. */
  readonly arity: number;
  /** Redis command flags, for COMMAND (`write`, `readonly`, `fast`, `noauth`, `admin`, ...). */
  readonly flags: readonly string[];
  /** Position of the key (0: none), as COMMAND reports it. */
  readonly firstKey: number;
  readonly group: string;
  readonly summary: string;
  /** `syntax` for COMMAND DOCS and docs/server.md. */
  readonly syntax: string;
  readonly kind: CommandKind;
  readonly run: Handler;
}

export class CommandTable {
  readonly #specs = new Map<string, CommandSpec>();

  constructor(specs: readonly CommandSpec[]) {
    for (const spec of specs) this.#specs.set(spec.name, spec);
  }

  get(name: string): CommandSpec | undefined {
    return this.#specs.get(name);
  }

  all(): CommandSpec[] {
    return [...this.#specs.values()];
  }

  /** COMMAND, COMMAND INFO: Redis's 10-element description per command. */
  info(spec: CommandSpec): Encoded {
    const key = spec.firstKey;
    return array([
      bulk(spec.name.toLowerCase()),
      integer(spec.arity),
      array(spec.flags.map((flag) => simple(flag))),
      integer(key),
      integer(key),
      integer(key === 0 ? 0 : 1),
      array([simple(`@${spec.group}`)]),
      array([]),
      array([]),
      array([]),
    ]);
  }

  /** COMMAND DOCS: name -> { summary, since, group, syntax } (what redis-cli's hints read). */
  docs(names: readonly string[], proto: Protocol): Encoded {
    const specs =
      names.length === 0
        ? this.all()
        : names.map((name) => this.#specs.get(name.toUpperCase())).filter((spec) => spec !== undefined);
    return map(
      specs.map((spec) => [
        spec.name.toLowerCase(),
        map(
          [
            ['summary', bulk(spec.summary)],
            ['since', bulk('1.0.0')],
            ['group', bulk(spec.group)],
            ['syntax', bulk(spec.syntax)],
          ],
          proto,
        ),
      ]),
      proto,
    );
  }

  /** COMMAND INFO name...: a description per name, nil for an unknown one. */
  infoOf(names: readonly string[], proto: Protocol): Encoded {
    return array(
      names.map((name) => {
        const spec = this.#specs.get(name.toUpperCase());
        return spec === undefined ? nilArray(proto) : this.info(spec);
      }),
    );
  }
}
