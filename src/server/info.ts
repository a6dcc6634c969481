import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FORMAT_VERSION, HASH_SCHEME_ID } from '../index.js';
import type { ServerContext } from './context.js';

/**
 * The Redis version this server speaks the protocol of (HELLO's `version`, INFO's redis_version):
 * client libraries read it to decide which commands exist. seenstore's own is seenstore_version.
 */
export const SERVER_VERSION = '7.2.0';

const PACKAGE_VERSION = (
  JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as {
    version: string;
  }
).version;

export const SEENSTORE_VERSION = PACKAGE_VERSION;

const SECTIONS = ['server', 'clients', 'stats', 'persistence', 'scopes'] as const;
type Section = (typeof SECTIONS)[number];

/**
 * INFO's text: `# Section` headers and `field:value` lines (CRLF), as Redis writes it. `scopes` has
 * one line per scope: its open epoch's figures. `wanted` empty, `all` or `default`: every section.
 */
export async function serverInfo(server: ServerContext, wanted: readonly string[]): Promise<string> {
  const every =
    wanted.length === 0 || wanted.includes('all') || wanted.includes('default') || wanted.includes('everything');
  const lines: string[] = [];
  for (const section of SECTIONS) {
    if (!every && !wanted.includes(section) && !(section === 'scopes' && wanted.includes('keyspace'))) continue;
    if (lines.length > 0) lines.push('');
    lines.push(`# ${section[0]!.toUpperCase()}${section.slice(1)}`);
    for (const [key, value] of await sectionFields(server, section)) lines.push(`${key}:${value}`);
  }
  return `${lines.join('\r\n')}\r\n`;
}

/**
 * What is true of the store's persistence, by its driver's manifest (docs/server.md "INFO"): the
 * backend, whether anything outlives the process, and who makes a write durable. Only where
 * seenstore writes the files (`durability` `store`) are there a format version and snapshots; a
 * Redis store's persistence is its servers' (their own INFO persistence), not reported here.
 */
async function persistenceFields(server: ServerContext): Promise<[string, string | number][]> {
  const { name, capabilities } = server.store.driver;
  const fields: [string, string | number][] = [
    ['loading', 0],
    ['store', server.storeSpec],
    ['store_backend', name],
    ['hash_scheme', HASH_SCHEME_ID],
    ['persistent', capabilities.persistent ? 1 : 0],
  ];
  switch (capabilities.durability) {
    case 'store':
      fields.push(['durability', 'journal-commit-per-batch'], ['format_version', FORMAT_VERSION]);
      break;
    case 'server':
      fields.push(['durability', 'server'], ['server_persistence', 'not-reported']);
      break;
    case 'none':
      fields.push(['durability', 'none']);
      break;
  }
  fields.push(['snapshots_supported', capabilities.maintenance ? 1 : 0]);
  if (capabilities.maintenance) fields.push(['snapshots', await server.store.snapshotCount()]);
  return fields;
}

async function sectionFields(server: ServerContext, section: Section): Promise<[string, string | number][]> {
  const c = server.counters;
  switch (section) {
    case 'server':
      return [
        ['redis_version', SERVER_VERSION],
        ['seenstore_version', SEENSTORE_VERSION],
        ['redis_mode', 'standalone'],
        ['os', `${process.platform} ${process.arch}`],
        ['process_id', process.pid],
        ['tcp_port', server.port],
        ['bind', server.bind],
        ['uptime_in_seconds', Math.floor((Date.now() - server.startedAtMs) / 1000)],
        ['node_version', process.version],
      ];
    case 'clients':
      return [
        ['connected_clients', [...server.clients()].length],
        ['maxclients', server.limits.clientsMax],
        ['blocked_clients', 0],
      ];
    case 'stats':
      return [
        ['total_connections_received', c.connectionsReceived],
        ['rejected_connections', c.connectionsRejected],
        ['total_commands_processed', c.commandsProcessed],
        ['total_error_replies', c.errorReplies],
        ['protocol_errors', c.protocolErrors],
      ];
    case 'persistence':
      return persistenceFields(server);
    case 'scopes':
      return (await server.store.stats()).map((scope) => {
        const open = scope.epochs.find((epoch) => epoch.epoch === scope.openEpoch);
        const figures =
          open === undefined
            ? 'epoch=none'
            : `epoch=${open.epoch},epochs=${scope.epochs.length},capacity=${open.capacityUrls},adds=${open.adds},new=${open.new},added=${open.new},submitted=${open.adds},estimated_distinct=${open.estimatedDistinct},fill=${open.fillRatio.toFixed(6)},estimated_fpr=${open.estimatedFpr.toExponential(3)},fpr_target=${open.fprTarget},slices=${open.slices},bytes_on_disk=${open.bytesOnDisk}`;
        return [`scope_${scope.scope}`, figures];
      });
  }
}
