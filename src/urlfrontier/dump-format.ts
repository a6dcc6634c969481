import type { FrontierEntry } from '../store/backend.js';
import { MAX_DATA_BYTES } from '../epochs/frontier.js';
import { MAX_KEY_BYTES } from '../url/normalize.js';
import { MAX_QUEUE_KEY_LENGTH, queueKeyOf } from '../url/queue-key.js';
import { holdsControlString } from '../url/url-shape.js';
import { scopeNameOfCrawl, unusableCrawlMessage } from './crawl-name.js';

/*
 * The reference URLFrontier client's DumpURLs format: one URLItem per line in protobuf's JSON
 * mapping (lowerCamelCase names by default, the .proto's own names accepted too, 64-bit integers
 * as strings or numbers, default values left out).
 */

const SECONDS_TO_MS = 1_000;
/** Latest refetch date accepted, ahead of now: the frontier's own limit on a due time. */
const MAX_AHEAD_MS = 10 * 365 * 24 * 3600_000;
/**
 * The metadata key under which a payload that is not URLFrontier metadata travels, as one JSON
 * value: a seenstore entry's data (a Crawlee request's label, a retry count) survives a round
 * trip through the format, and the reference keeps it as ordinary metadata.
 */
export const DATA_METADATA_KEY = 'seenstore.data';

export type Metadata = Record<string, { readonly values: readonly string[] }>;

/** One line of a dump, checked: what importing it does. */
export interface DumpItem {
  readonly kind: 'discovered' | 'known';
  readonly scope: string;
  readonly url: string;
  /** The queue the line names; '' for the URL's own queue key in its scope. */
  readonly key: string;
  /** The entry's payload, or undefined for none. */
  readonly data: unknown;
  /** Known items: when to fetch again, ms since the Unix epoch; 0 for fetched, never again. */
  readonly refetchMs: number;
}

/** Why a line is not a usable URLItem, as a message without its line number. */
export class DumpLineError extends Error {}

type Json = Record<string, unknown>;

function object(value: unknown, what: string): Json {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new DumpLineError(`${what} is not a JSON object`);
  return value as Json;
}

/** The value of a field under its JSON name or its .proto name; null counts as absent, as protobuf's parser has it. */
function field(source: Json, jsonName: string, protoName = jsonName): unknown {
  const value = source[jsonName] ?? source[protoName];
  return value === null ? undefined : value;
}

/** Refuses fields the message does not have: a misspelt date would otherwise read as "done, never again". */
function onlyFields(source: Json, names: readonly string[], what: string): void {
  for (const name of Object.keys(source))
    if (!names.includes(name)) throw new DumpLineError(`${what} has no field ${JSON.stringify(name.slice(0, 40))}`);
}

function text(value: unknown, what: string): string {
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new DumpLineError(`${what} is not a string`);
  return value;
}

/** A uint64 of protobuf's JSON mapping: a decimal string or a number, whole and not negative, within 2^53. */
function uint64(value: unknown, what: string): number {
  if (value === undefined) return 0;
  const number = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0)
    throw new DumpLineError(`${what} is not a whole number of seconds`);
  return number;
}

function metadataOf(value: unknown): Metadata {
  const map = object(value, 'metadata');
  const metadata: Metadata = {};
  for (const [name, list] of Object.entries(map)) {
    const entry = object(list, `metadata ${JSON.stringify(name.slice(0, 40))}`);
    onlyFields(entry, ['values'], 'a metadata value');
    const values = field(entry, 'values') ?? [];
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'string'))
      throw new DumpLineError(`metadata ${JSON.stringify(name.slice(0, 40))} values are not strings`);
    metadata[name] = { values: values as string[] };
  }
  return metadata;
}

/** The payload a line's metadata stands for: what DATA_METADATA_KEY carries, else the metadata as the URLFrontier service keeps it. */
function dataOf(metadata: Metadata): unknown {
  const names = Object.keys(metadata);
  if (names.length === 0) return undefined;
  const carried = metadata[DATA_METADATA_KEY]?.values;
  if (names.length === 1 && carried?.length === 1) {
    try {
      return JSON.parse(carried[0]!) as unknown;
    } catch {
      // Not a payload seenstore wrote: ordinary metadata.
    }
  }
  return { metadata };
}

function checkUrl(url: string, key: string): void {
  if (url === '') throw new DumpLineError('no URL');
  if (Buffer.byteLength(url) > MAX_KEY_BYTES) throw new DumpLineError('URL over 64 KiB');
  if (!url.isWellFormed()) throw new DumpLineError('URL is not well-formed UTF-16 (a lone surrogate)');
  if (holdsControlString(url, 0, url.length))
    throw new DumpLineError('URL holds a control character (U+0000-U+001F or U+007F)');
  if (key.length > MAX_QUEUE_KEY_LENGTH) throw new DumpLineError(`key over ${MAX_QUEUE_KEY_LENGTH} characters`);
  if (key === '' && queueKeyOf(url, 'host') === undefined)
    throw new DumpLineError('no key, and no host in the URL to derive one from');
}

/**
 * One line of a dump as a DumpItem; throws DumpLineError when it is not a usable URLItem. A
 * line's crawl names its scope, unless `scope` overrides it.
 */
export function parseDumpLine(line: string, nowMs: number, scope?: string): DumpItem {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (error) {
    throw new DumpLineError(`not JSON (${(error as Error).message})`);
  }
  const item = object(parsed, 'the line');
  onlyFields(item, ['discovered', 'known', 'ID', 'creationDate', 'creation_date'], 'a URLItem');
  text(field(item, 'ID'), 'ID');
  uint64(field(item, 'creationDate', 'creation_date'), 'creationDate');
  const discovered = field(item, 'discovered');
  const known = field(item, 'known');
  if ((discovered === undefined) === (known === undefined))
    throw new DumpLineError('a URLItem holds exactly one of discovered and known');
  const body = object(discovered ?? known, discovered === undefined ? 'known' : 'discovered');
  onlyFields(
    body,
    discovered === undefined ? ['info', 'refetchableFromDate', 'refetchable_from_date'] : ['info'],
    discovered === undefined ? 'known' : 'discovered',
  );
  const info = object(field(body, 'info'), 'info');
  onlyFields(info, ['url', 'key', 'metadata', 'crawlID'], 'info');
  const url = text(field(info, 'url'), 'url');
  const key = text(field(info, 'key'), 'key');
  checkUrl(url, key);
  const crawlID = text(field(info, 'crawlID'), 'crawlID');
  const scopeName = scope ?? scopeNameOfCrawl(crawlID);
  if (scopeName === undefined) throw new DumpLineError(unusableCrawlMessage(crawlID));
  const data = dataOf(metadataOf(field(info, 'metadata')));
  if (data !== undefined && Buffer.byteLength(JSON.stringify(data)) > MAX_DATA_BYTES)
    throw new DumpLineError('metadata over 64 KiB as JSON');
  const refetchMs =
    discovered === undefined
      ? uint64(field(body, 'refetchableFromDate', 'refetchable_from_date'), 'refetchableFromDate') * SECONDS_TO_MS
      : 0;
  if (refetchMs > nowMs + MAX_AHEAD_MS) throw new DumpLineError('refetchableFromDate more than 10 years ahead');
  return { kind: discovered === undefined ? 'known' : 'discovered', scope: scopeName, url, key, data, refetchMs };
}

/** URLFrontier metadata as the service keeps it (`{ metadata }`), or undefined for any other payload. */
function asMetadata(data: unknown): Metadata | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const keys = Object.keys(data);
  if (keys.length !== 1 || keys[0] !== 'metadata') return undefined;
  try {
    const metadata = metadataOf((data as { metadata: unknown }).metadata);
    return Object.keys(metadata).length === 0 ? undefined : metadata;
  } catch {
    return undefined;
  }
}

/**
 * A frontier entry as one line of a dump (no newline): waiting and leased entries are
 * `discovered`, scheduled ones `known` with their date (rounded up to the second, so the URL is
 * never due earlier); creationDate in seconds. A lease is not carried: a leased URL waits again.
 */
export function formatDumpLine(
  entry: Pick<FrontierEntry, 'url' | 'queue' | 'state' | 'atMs' | 'createdMs' | 'data'>,
  crawlID: string,
): string {
  const metadata =
    entry.data === undefined || entry.data === null
      ? undefined
      : (asMetadata(entry.data) ?? { [DATA_METADATA_KEY]: { values: [JSON.stringify(entry.data)] } });
  const info = {
    url: entry.url,
    ...(entry.queue === '' ? {} : { key: entry.queue }),
    ...(metadata === undefined ? {} : { metadata }),
    crawlID,
  };
  const creationDate = String(Math.floor(entry.createdMs / SECONDS_TO_MS));
  if (entry.state === 'scheduled')
    return JSON.stringify({
      known: { info, refetchableFromDate: String(Math.ceil(entry.atMs / SECONDS_TO_MS)) },
      creationDate,
    });
  return JSON.stringify({ discovered: { info }, creationDate });
}
