import { credentials, loadPackageDefinition, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { urlFrontierPackage } from '../../src/urlfrontier/proto.js';

type GrpcObject = Record<string, unknown>;
type Callback = (error: ServiceError | null, reply: unknown) => void;
type Stream = NodeJS.EventEmitter & { write(message: unknown): boolean; end(): void; cancel(): void };
type RawClient = Client & Record<string, (...args: unknown[]) => unknown>;

export interface Ack {
  readonly ID: string;
  readonly status: 'OK' | 'SKIPPED' | 'FAIL';
}

export interface UrlInfo {
  readonly url: string;
  readonly key: string;
  readonly metadata: Record<string, { values: string[] }>;
  readonly crawlID: string;
}

/** A discovered item of PutURLs. */
export function discovered(
  url: string,
  fields: { key?: string; crawlID?: string; ID?: string; metadata?: Record<string, { values: string[] }> } = {},
): object {
  return {
    discovered: {
      info: { url, key: fields.key ?? '', crawlID: fields.crawlID ?? '', metadata: fields.metadata ?? {} },
    },
    ID: fields.ID ?? '',
  };
}

/** A URLInfo of a PutDiscovered batch. */
export function info(url: string, fields: { key?: string; crawlID?: string } = {}): object {
  return { url, key: fields.key ?? '', crawlID: fields.crawlID ?? '', metadata: {} };
}

/** A known item of PutURLs: refetchable from `refetchS` (seconds since the Unix epoch; 0: done for good). */
export function known(url: string, refetchS: number, fields: { key?: string; crawlID?: string } = {}): object {
  return {
    known: {
      info: { url, key: fields.key ?? '', crawlID: fields.crawlID ?? '', metadata: {} },
      refetchable_from_date: refetchS,
    },
  };
}

/**
 * A URLFrontier client on @grpc/grpc-js, as a crawler would use one, with promises: `call` for
 * the unary RPCs, `put` for a whole PutURLs stream, `get` for GetURLs.
 */
export class FrontierClient {
  readonly raw: RawClient;
  readonly #metadata: Metadata;

  constructor(port: number, token?: string) {
    const pkg = loadPackageDefinition(urlFrontierPackage()) as GrpcObject;
    const Ctor = (pkg.urlfrontier as GrpcObject).URLFrontier as new (
      address: string,
      creds: ReturnType<typeof credentials.createInsecure>,
    ) => RawClient;
    this.raw = new Ctor(`127.0.0.1:${port}`, credentials.createInsecure());
    this.#metadata = new Metadata();
    if (token !== undefined) this.#metadata.set('authorization', `Bearer ${token}`);
  }

  call<T = Record<string, unknown>>(method: string, request: object = {}): Promise<T> {
    return new Promise((resolve, reject) => {
      this.raw[method]!.call(this.raw, request, this.#metadata, ((error, reply) =>
        error === null ? resolve(reply as T) : reject(error)) satisfies Callback);
    });
  }

  /** Sends the items on one PutURLs stream and resolves with every ack once the server ends it. */
  put(items: readonly object[]): Promise<Ack[]> {
    const stream = this.putStream();
    const acks: Ack[] = [];
    stream.on('data', (ack: Ack) => acks.push(ack));
    const done = new Promise<Ack[]>((resolve, reject) => {
      stream.on('end', () => resolve(acks));
      stream.on('error', reject);
    });
    for (const item of items) stream.write(item);
    stream.end();
    return done;
  }

  /** Sends the batches on one PutDiscovered stream and resolves with every BatchAck once the server ends it. */
  putDiscovered(
    batches: readonly { ID: string; items: readonly object[] }[],
  ): Promise<{ ID: string; statuses: string[] }[]> {
    const stream = this.raw.PutDiscovered!.call(this.raw, this.#metadata) as Stream;
    const acks: { ID: string; statuses: string[] }[] = [];
    stream.on('data', (ack: { ID: string; statuses: string[] }) => acks.push(ack));
    const done = new Promise<typeof acks>((resolve, reject) => {
      stream.on('end', () => resolve(acks));
      stream.on('error', reject);
    });
    for (const batch of batches) stream.write(batch);
    stream.end();
    return done;
  }

  putStream(): Stream {
    return this.raw.PutURLs!.call(this.raw, this.#metadata) as Stream;
  }

  /** ListURLs: every URLItem it streams. */
  list<T = never>(params: object = {}): Promise<T[]> {
    return new Promise((resolve, reject) => {
      const stream = this.raw.ListURLs!.call(this.raw, params, this.#metadata) as Stream;
      const items: T[] = [];
      stream.on('data', (item: T) => items.push(item));
      stream.on('end', () => resolve(items));
      stream.on('error', reject);
    });
  }

  get(params: object = {}): Promise<UrlInfo[]> {
    return new Promise((resolve, reject) => {
      const stream = this.raw.GetURLs!.call(this.raw, params, this.#metadata) as Stream;
      const urls: UrlInfo[] = [];
      stream.on('data', (info: UrlInfo) => urls.push(info));
      stream.on('end', () => resolve(urls));
      stream.on('error', reject);
    });
  }

  close(): void {
    this.raw.close();
  }
}

/** The gRPC status code of a rejected call. */
export async function statusOf(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as ServiceError;
    return { code: e.code, details: e.details };
  }
  throw new Error('the call succeeded');
}
