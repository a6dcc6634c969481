import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ScopeOptions } from '../index.js';
import type { ServedFrontier, ServedScope, ServedStore } from '../server/served-store.js';
import type { QueueKeyMode } from '../url/queue-key.js';
import { DEFAULT_CRAWL, scopeNameOfCrawl, unusableCrawlMessage } from './crawl-name.js';
import { RpcError } from './status.js';

/**
 * URLFrontier's crawls are seenstore's scopes: crawl ID `c` is scope `c` (`""` is DEFAULT; a `:`
 * stands for a `.`, as for RESP keys). An ID that cannot be a scope name is INVALID_ARGUMENT.
 */
export function scopeOfCrawl(crawlID: string): string {
  const name = scopeNameOfCrawl(crawlID);
  if (name === undefined) throw new RpcError(GrpcStatus.INVALID_ARGUMENT, unusableCrawlMessage(crawlID));
  return name;
}

/** The crawls of one served store, as the URLFrontier service reaches them. */
export class Crawls {
  readonly #store: ServedStore;
  readonly #scopeOptions: ScopeOptions;
  readonly #known = new Set<string>();
  readonly #queueKeys = new Map<string, Promise<QueueKeyMode>>();

  /** `scopeOptions` shape a crawl's scope when its first URL creates it: the same as RESP's auto-created scopes, so either side may create it. */
  constructor(store: ServedStore, scopeOptions: ScopeOptions) {
    this.#store = store;
    this.#scopeOptions = scopeOptions;
  }

  /** The scope of a crawl, existing or not (PutURLs creates it with its first URL). */
  scope(crawlID: string): Promise<ServedScope> {
    return this.#store.scope(scopeOfCrawl(crawlID), this.#scopeOptions);
  }

  async frontier(crawlID: string): Promise<ServedFrontier> {
    return (await this.scope(crawlID)).frontier();
  }

  /**
   * The scope of a crawl, or undefined when there is none: the reference service answers a crawl
   * it does not know as an empty one (GetStats zeros, DeleteCrawl 0), and no state is made for it.
   */
  async find(crawlID: string): Promise<ServedScope | undefined> {
    return (await this.exists(crawlID)) ? this.scope(crawlID) : undefined;
  }

  /** Whether a crawl exists (the default crawl always does). Scopes are never deleted, so a name found once is not asked again. */
  async exists(crawlID: string): Promise<boolean> {
    const name = scopeOfCrawl(crawlID);
    if (name === DEFAULT_CRAWL || this.#known.has(name)) return true;
    const names = await this.#store.scopeNames();
    for (const known of names) this.#known.add(known);
    return this.#known.has(name);
  }

  /** The queue key a crawl's URLs are queued by, pinned: no configure can change it while this server keeps it. */
  queueKeyMode(crawlID: string): Promise<QueueKeyMode> {
    const name = scopeOfCrawl(crawlID);
    let mode = this.#queueKeys.get(name);
    if (mode === undefined) {
      mode = this.frontier(crawlID).then((frontier) => frontier.pinnedQueueKey());
      mode.catch(() => this.#queueKeys.delete(name));
      this.#queueKeys.set(name, mode);
    }
    return mode;
  }

  /**
   * The crawls, as ListCrawls lists them: scopes whose frontier holds URLs or finished some. A
   * deleted crawl (its frontier emptied and its completed count zeroed) is not listed, nor is a
   * scope that only RESP's Bloom commands use.
   */
  async names(): Promise<string[]> {
    const names: string[] = [];
    for (const name of await this.#store.scopeNames()) {
      const stats = await (await this.#store.scope(name, this.#scopeOptions)).frontier().stats();
      if (stats.pending + stats.leased + stats.done > 0) names.push(name);
    }
    return names;
  }
}
