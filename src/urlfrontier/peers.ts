import { credentials, makeGenericClientConstructor, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { urlFrontierService } from './proto.js';

/** How long a call to another node may take before that node is left out (it is likely dead, still listed until its entry lapses). */
const PEER_CALL_MS = 2_000;

type PeerMethod = 'SetActive' | 'GetActive' | 'SetLogLevel';
type RawPeer = Client &
  Record<
    PeerMethod,
    (
      request: object,
      metadata: Metadata,
      options: { deadline: number },
      callback: (error: ServiceError | null, reply: unknown) => void,
    ) => void
  >;

/**
 * The other serve nodes of the store, for the calls whose `local: false` applies to every node of
 * the cluster (URLFrontier's SetActive, GetActive, SetLogLevel: the state they set is a node's
 * own). Each is called with `local: true`, with this node's token; a node that does not answer
 * within PEER_CALL_MS is left out and reported (a node killed stays listed until its entry lapses).
 */
export class Peers {
  readonly #nodes: () => Promise<string[]>;
  readonly #self: () => string | undefined;
  readonly #metadata = new Metadata();
  readonly #clients = new Map<string, RawPeer>();
  readonly #onUnreachable: (address: string, error: Error) => void;

  constructor(
    nodes: () => Promise<string[]>,
    self: () => string | undefined,
    token: string | undefined,
    onUnreachable: (address: string, error: Error) => void,
  ) {
    this.#nodes = nodes;
    this.#self = self;
    this.#onUnreachable = onUnreachable;
    if (token !== undefined) this.#metadata.set('authorization', `Bearer ${token}`);
  }

  /** Calls `method` with `request` on every other live node; resolves with the replies of those that answered. */
  async each(method: PeerMethod, request: object): Promise<unknown[]> {
    const self = this.#self();
    const others = (await this.#nodes()).filter((address) => address !== self);
    const replies = await Promise.all(others.map((address) => this.#call(address, method, request)));
    return replies.filter((reply) => reply !== undefined);
  }

  #call(address: string, method: PeerMethod, request: object): Promise<unknown> {
    return new Promise((resolve) => {
      this.#client(address)[method](
        request,
        this.#metadata,
        { deadline: Date.now() + PEER_CALL_MS },
        (error, reply) => {
          if (error !== null) {
            this.#onUnreachable(address, error);
            resolve(undefined);
          } else {
            resolve(reply);
          }
        },
      );
    });
  }

  #client(address: string): RawPeer {
    let client = this.#clients.get(address);
    if (client === undefined) {
      const Ctor = makeGenericClientConstructor(urlFrontierService(), 'URLFrontier') as unknown as new (
        address: string,
        creds: ReturnType<typeof credentials.createInsecure>,
      ) => RawPeer;
      client = new Ctor(address, credentials.createInsecure());
      this.#clients.set(address, client);
    }
    return client;
  }

  close(): void {
    for (const client of this.#clients.values()) client.close();
    this.#clients.clear();
  }
}
