import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runCli } from './helpers/cli.js';
import { ROOT } from './helpers/data.js';
import { startServer } from './helpers/server.js';
import { tempDir } from './helpers/tmp.js';

/**
 * docs/grafana-dashboard.json (issue 30). Debian packages no Grafana, so the dashboard is checked
 * against what the two exporters really export, scraped here: every metric a panel or variable
 * queries must be a series of `seenstore serve`'s /metrics or of `stats --format prometheus`, and
 * every label a query selects or groups by must be on that metric (or be one Prometheus adds:
 * instance, job).
 */
const TARGET_LABELS = new Set(['instance', 'job']);

interface Dashboard {
  panels: { id: number; title: string; gridPos?: unknown; targets: { expr: string; refId: string }[] }[];
  templating: { list: { name: string; query: string }[] };
}

/** Series name -> its label names, from Prometheus text exposition. */
function exposition(text: string, into = new Map<string, Set<string>>()): Map<string, Set<string>> {
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? /.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels = into.get(match[1]!) ?? new Set<string>();
    for (const pair of (match[2] ?? '').split(/,(?=[a-zA-Z_]+=")/))
      if (pair !== '') labels.add(pair.slice(0, pair.indexOf('=')));
    into.set(match[1]!, labels);
  }
  return into;
}

/** Every problem of one PromQL expression against the exported series. */
function problems(expr: string, series: Map<string, Set<string>>): string[] {
  const found: string[] = [];
  const metrics: string[] = [];
  for (const selector of expr.matchAll(/\b(seenstore_[a-z0-9_]+)(\{([^}]*)\})?/g)) {
    const name = selector[1]!;
    metrics.push(name);
    const labels = series.get(name);
    if (labels === undefined) {
      found.push(`${name} is not exported`);
      continue;
    }
    for (const matcher of (selector[3] ?? '').split(',')) {
      const label = matcher.trim().split(/[=!~]/)[0]!;
      if (label !== '' && !labels.has(label) && !TARGET_LABELS.has(label)) found.push(`${name} has no label ${label}`);
    }
  }
  for (const grouping of expr.matchAll(/\bby \(([^)]*)\)/g)) {
    for (const label of grouping[1]!.split(',').map((l) => l.trim())) {
      const carrier = metrics.some((name) => series.get(name)?.has(label) === true) || TARGET_LABELS.has(label);
      if (!carrier) found.push(`no metric of "${expr}" has the label ${label} it groups by`);
    }
  }
  let depth = 0;
  for (const char of expr) {
    depth += char === '(' ? 1 : char === ')' ? -1 : 0;
    if (depth < 0) break;
  }
  if (depth !== 0) found.push(`unbalanced parentheses: ${expr}`);
  if (metrics.length === 0) found.push(`queries no seenstore metric: ${expr}`);
  return found;
}

describe('the Grafana dashboard', () => {
  test('every panel queries metrics and labels that serve and stats --format prometheus export', async () => {
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as Dashboard;
    const store = join(tempDir(), 'store');
    const added = await runCli(
      ['--store', store, '--scope', 'shop', '--quiet', 'add'],
      'https://shop.example/a\nhttps://shop.example/b\n',
    );
    assert.equal(added.code, 0, added.stderr);
    const stats = await runCli(['--store', store, 'stats', '--format', 'prometheus']);
    assert.equal(stats.code, 0, stats.stderr);
    const series = exposition(stats.stdout);
    const deprecated: string[] = [];
    const server = await startServer(join(tempDir(), 'served'), ['--metrics-port', '0']);
    try {
      const { createClient } = await import('redis');
      const client = createClient({ socket: { host: '127.0.0.1', port: server.port } });
      await client.connect();
      await client.sendCommand(['BF.MADD', 'shop', 'https://shop.example/a', 'https://shop.example/b']);
      await client.sendCommand(['BF.EXISTS', 'shop', 'https://shop.example/a']);
      await client.sendCommand(['BF.INFO', 'absent']).catch(() => undefined);
      await client.quit();
      const served = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
      exposition(served, series);
      for (const [, name] of served.matchAll(/^# HELP (\S+) Deprecated/gm)) deprecated.push(name!);
    } finally {
      await server.stop();
    }
    const all: string[] = [];
    const ids = new Set<number>();
    for (const panel of dashboard.panels) {
      assert.ok(!ids.has(panel.id), `panel id ${panel.id} twice`);
      ids.add(panel.id);
      assert.ok(panel.gridPos !== undefined && panel.targets.length > 0, `${panel.title}: no place or no query`);
      for (const target of panel.targets) all.push(...problems(target.expr, series).map((p) => `${panel.title}: ${p}`));
    }
    for (const variable of dashboard.templating.list) {
      if (variable.query.includes('seenstore_'))
        all.push(...problems(variable.query, series).map((p) => `variable ${variable.name}: ${p}`));
    }
    assert.deepEqual(all, []);
    assert.ok(deprecated.length > 0, 'serve keeps the names before issue 45 for one release');
    const queried = JSON.stringify(dashboard);
    assert.deepEqual(
      deprecated.filter((name) => queried.includes(name)),
      [],
      'the dashboard queries no deprecated metric',
    );
    assert.ok(series.get('seenstore_urls_total')?.has('op'));
    assert.match(queried, /seenstore_epoch_adds/);
    assert.ok(dashboard.panels.length >= 10);
  });
});
