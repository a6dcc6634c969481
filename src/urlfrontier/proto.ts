import { fileURLToPath } from 'node:url';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/** The URLFrontier API's .proto, shipped beside this module (scripts/build-assets.mjs copies it). */
export const URLFRONTIER_PROTO_PATH = fileURLToPath(new URL('./urlfrontier.proto', import.meta.url));

/** The service's full name on the wire. */
export const URLFRONTIER_SERVICE = 'urlfrontier.URLFrontier';

/**
 * How messages look in JavaScript: field names as the .proto spells them (keepCase), 64-bit
 * numbers as numbers (times in seconds and counts stay far below 2^53), enums by name, unset
 * fields at their proto3 default, and the name of the set member of each oneof (`item`).
 */
const LOADER_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true } as const;

/** A request that did not decode: the handler answers INVALID_ARGUMENT with `reason` instead of grpc-js's bare INTERNAL. */
export interface MalformedMessage {
  readonly malformed: string;
}

export function isMalformed(message: unknown): message is MalformedMessage {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof (message as { malformed?: unknown }).malformed === 'string'
  );
}

let loaded: ServiceDefinition | undefined;

/**
 * The URLFrontier service definition, loaded once. Each request decoder answers a bad message
 * with a MalformedMessage value rather than throwing: grpc-js would end the call with INTERNAL
 * ("Error deserializing request"), which reads as a server bug, not as the client's bad input.
 */
export function urlFrontierService(): ServiceDefinition {
  if (loaded !== undefined) return loaded;
  const definition = loadSync(URLFRONTIER_PROTO_PATH, LOADER_OPTIONS);
  const service = definition[URLFRONTIER_SERVICE] as ServiceDefinition;
  const guarded: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service)) {
    const decode = method.requestDeserialize;
    guarded[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch (error) {
          return {
            malformed: `the ${method.path.split('/').pop()} request is not a valid protobuf message: ${(error as Error).message}`,
          } satisfies MalformedMessage;
        }
      },
    };
  }
  loaded = guarded;
  return loaded;
}

/** The client constructor of the same definition (tests and the bench). */
export function urlFrontierPackage(): ReturnType<typeof loadSync> {
  return loadSync(URLFRONTIER_PROTO_PATH, LOADER_OPTIONS);
}

export interface UrlInfo {
  readonly url: string;
  readonly key: string;
  readonly metadata: Readonly<Record<string, { readonly values: readonly string[] }>>;
  readonly crawlID: string;
}

export interface UrlItem {
  readonly item?: 'discovered' | 'known';
  readonly discovered?: { readonly info: UrlInfo | null };
  readonly known?: { readonly info: UrlInfo | null; readonly refetchable_from_date: number };
  readonly ID: string;
  readonly creation_date: number;
}

export interface GetParams {
  readonly max_urls_per_queue: number;
  readonly max_queues: number;
  readonly key: string;
  readonly delay_requestable: number;
  readonly item?: 'anyCrawlID' | 'crawlID';
  readonly crawlID?: string;
}

export interface QueueWithinCrawlParams {
  readonly key: string;
  readonly crawlID: string;
}

export interface Pagination {
  readonly start: number;
  readonly size: number;
  readonly include_inactive: boolean;
  readonly crawlID: string;
}

export interface QueueDelayParams {
  readonly key: string;
  readonly delay_requestable: number;
  readonly crawlID: string;
}

export interface BlockQueueParams {
  readonly key: string;
  readonly time: number;
  readonly crawlID: string;
}

export interface CrawlLimitParams {
  readonly key: string;
  readonly limit: number;
  readonly crawlID: string;
}

export interface UrlStatusRequest {
  readonly url: string;
  readonly key: string;
  readonly crawlID: string;
}

export interface CountUrlParams {
  readonly key: string;
  readonly crawlID: string;
  readonly filter?: string;
}

export interface LogLevelParams {
  readonly package: string;
  readonly level: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** Set on this node only; false (the default): on every node of the store. */
  readonly local?: boolean;
}

export interface AckMessage {
  readonly ID: string;
  readonly status: 'OK' | 'SKIPPED' | 'FAIL';
}
