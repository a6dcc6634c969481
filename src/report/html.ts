import type { ReportData, ReportEpoch, ReportScope } from './collect.js';
import { escapeXml, renderBarChart, type ChartColumn, type GapColumn } from './svg-chart.js';

/*
 * The report page: one self-contained HTML file (styles inline, charts as inline SVG, no script,
 * nothing fetched), readable in any browser from disk and in print.
 */

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1b1b; margin: 24px auto; max-width: 1180px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 32px 0 4px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 4px; }
.meta, .note { color: #555; } .note { font-size: 12.5px; max-width: 900px; }
figure { margin: 10px 0 18px; overflow-x: auto; } figcaption { font-weight: 600; margin-bottom: 2px; }
svg.chart text { font: 11px system-ui, sans-serif; fill: #1b1b1b; }
svg.chart .tick, svg.chart .xnote { fill: #555; font-size: 10px; } svg.chart .xlabel { font-weight: 600; }
svg.chart .value { font-size: 9.5px; paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; } svg.chart .flag { font-weight: 700; fill: #9b1c1c; }
svg.chart .grid { stroke: #e3e3e3; } svg.chart .marker { stroke: #111; stroke-width: 2; stroke-dasharray: 5 3; }
svg.chart .gap { fill: #f4f4f4; stroke: #999; stroke-dasharray: 3 3; } svg.chart .gaplabel { fill: #555; font-size: 10px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0 12px; } th, td { border: 1px solid #d4d4d4; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f2f2f2; } td.left, th.left { text-align: left; } td.over { font-weight: 700; }
nav a { margin-right: 12px; }
`;

function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** 1.2M, 35k, 812: short enough to stand over a bar. */
function compact(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e9) return `${+(n / 1e9).toPrecision(3)}G`;
  if (abs >= 1e6) return `${+(n / 1e6).toPrecision(3)}M`;
  if (abs >= 1e3) return `${+(n / 1e3).toPrecision(3)}k`;
  return `${+n.toPrecision(3)}`;
}

function percent(ratio: number): string {
  return `${+(ratio * 100).toPrecision(3)}%`;
}

function fpr(p: number): string {
  return p === 0 ? '0' : p.toExponential(1);
}

function day(ms: number | null): string {
  return ms === null
    ? '–'
    : new Date(ms)
        .toISOString()
        .replace('T', ' ')
        .replace(/:\d\d\.\d+Z$/, 'Z');
}

/** The columns of a scope's charts: its epochs in order, with a gap column where epochs were pruned. */
function columns(scope: ReportScope, column: (e: ReportEpoch) => ChartColumn): (ChartColumn | GapColumn)[] {
  const out: (ChartColumn | GapColumn)[] = [];
  let expected = 1;
  for (const e of scope.epochs) {
    if (e.epoch > expected) {
      const range = e.epoch - 1 === expected ? `epoch ${expected}` : `epochs ${expected}–${e.epoch - 1}`;
      out.push({ kind: 'pruned', label: `${range} pruned` });
    }
    out.push(column(e));
    expected = e.epoch + 1;
  }
  return out;
}

function urlsChart(scope: ReportScope, id: string): string {
  const chart = renderBarChart(
    {
      id,
      scale: 'linear',
      format: compact,
      markerLabel: 'planned capacity',
      series: [
        { key: 'adds', label: 'adds (with repeats)', pattern: 3 },
        { key: 'new', label: 'new (without repeats)', pattern: 0 },
        { key: 'distinct', label: 'estimated distinct', pattern: 1 },
      ],
      columns: columns(scope, (e) => ({
        kind: 'epoch',
        epoch: e.epoch,
        labels: [`epoch ${e.epoch}`, day(e.createdAtMs).slice(0, 10)],
        values: [e.adds, e.new, e.estimatedDistinct],
        marker: e.capacityUrls,
        ...(e.estimatedDistinct > e.capacityUrls ? { flag: 'over capacity' } : {}),
        title: `epoch ${e.epoch} (${e.state}): ${count(e.adds)} adds, ${count(e.new)} new, ~${count(e.estimatedDistinct)} distinct; planned capacity ${count(e.capacityUrls)}`,
      })),
    },
    `URLs per epoch of scope ${scope.name}`,
  );
  return figure(
    id,
    'URLs per epoch: adds (with repeats), new (without), estimated distinct, against the planned capacity (dashed)',
    chart,
  );
}

function fprChart(scope: ReportScope, id: string): string {
  const chart = renderBarChart(
    {
      id,
      scale: 'log',
      format: fpr,
      markerLabel: 'target FPR',
      series: [{ key: 'fpr', label: 'estimated false-positive rate now (log scale)', pattern: 1 }],
      columns: columns(scope, (e) => ({
        kind: 'epoch',
        epoch: e.epoch,
        labels: [`epoch ${e.epoch}`, e.state],
        values: [e.estimatedFpr],
        marker: e.fprTarget,
        ...(e.estimatedFpr > e.fprTarget ? { flag: 'over target' } : {}),
        title: `epoch ${e.epoch}: estimated FPR ${fpr(e.estimatedFpr)}, target ${e.fprTarget}`,
      })),
    },
    `Estimated false-positive rate per epoch of scope ${scope.name}`,
  );
  return figure(id, 'Estimated false-positive rate against the target (dashed)', chart);
}

function fillChart(scope: ReportScope, id: string): string {
  const chart = renderBarChart(
    {
      id,
      scale: 'linear',
      maxValue: 1,
      format: percent,
      series: [{ key: 'fill', label: 'bits set (all slices)', pattern: 2 }],
      columns: columns(scope, (e) => ({
        kind: 'epoch',
        epoch: e.epoch,
        labels: [`epoch ${e.epoch}`, `${e.slices} slice${e.slices === 1 ? '' : 's'}`],
        values: [e.fillRatio],
        ...(e.slices > 1 ? { flag: `grew +${e.slices - 1}` } : {}),
        title: `epoch ${e.epoch}: ${percent(e.fillRatio)} of bits set over ${e.slices} slice(s) of capacities ${e.sliceCapacities.map(count).join(', ')}`,
      })),
    },
    `Fill and slices per epoch of scope ${scope.name}`,
  );
  return figure(id, 'Fill (share of bits set) and slices: an epoch past its capacity grows a slice', chart);
}

function figure(id: string, caption: string, svg: string): string {
  return `<figure id="${id}"><figcaption>${escapeXml(caption)}</figcaption>${svg}</figure>`;
}

function epochTable(scope: ReportScope): string {
  const head = [
    'epoch',
    'state',
    'created',
    'sealed',
    'strategy',
    'capacity',
    'adds',
    'new',
    'new since previous',
    'est. distinct',
    'fill',
    'est. FPR',
    'target',
    'slices',
    'bytes',
  ];
  const rows = scope.epochs.map((e) => {
    const over = e.estimatedFpr > e.fprTarget ? ' class="over"' : '';
    const cells = [
      `<td>${e.epoch}</td>`,
      `<td class="left">${e.state}</td>`,
      `<td class="left">${day(e.createdAtMs)}</td>`,
      `<td class="left">${day(e.sealedAtMs)}</td>`,
      `<td class="left">${escapeXml(e.strategy)}</td>`,
      `<td>${count(e.capacityUrls)}</td>`,
      `<td>${count(e.adds)}</td>`,
      `<td>${count(e.new)}</td>`,
      newSincePreviousCell(e.newSincePreviousAtLeast),
      `<td>${count(e.estimatedDistinct)}</td>`,
      `<td>${percent(e.fillRatio)}</td>`,
      `<td${over}>${fpr(e.estimatedFpr)}${over === '' ? '' : ' (over)'}</td>`,
      `<td>${e.fprTarget}</td>`,
      `<td>${e.slices}</td>`,
      `<td>${count(e.bytesOnDisk)}</td>`,
    ];
    return `<tr data-epoch="${e.epoch}">${cells.join('')}</tr>`;
  });
  return `<table class="epochs"><thead><tr>${head.map((h, i) => `<th${i >= 1 && i <= 4 ? ' class="left"' : ''}>${h}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function sizingTable(scope: ReportScope): string {
  const rows = scope.epochs.map((e) => {
    const inputs = Object.entries(e.sizing.inputs)
      .map(([k, v]) => `${escapeXml(k)}=${escapeXml(String(v))}`)
      .join(', ');
    return `<tr data-epoch="${e.epoch}"><td>${e.epoch}</td><td class="left">${escapeXml(e.sizing.policy)}</td><td class="left">${escapeXml(e.sizing.reason)}</td><td class="left">${inputs}</td><td class="left">${e.sliceCapacities.map(count).join(' + ')}</td></tr>`;
  });
  return `<table class="sizing"><thead><tr><th>epoch</th><th class="left">policy</th><th class="left">decision</th><th class="left">inputs</th><th class="left">slice capacities</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function scopeSection(scope: ReportScope, index: number): string {
  const pruned = scope.pruned.map((r) => (r.from === r.to ? `${r.from}` : `${r.from}–${r.to}`));
  const summary =
    `${scope.epochs.length} epoch${scope.epochs.length === 1 ? '' : 's'} kept` +
    `${scope.openEpoch === null ? '' : `, epoch ${scope.openEpoch} open`}` +
    `${pruned.length === 0 ? ', none pruned' : `; pruned: ${pruned.join(', ')}`}`;
  const id = `s${index}`;
  return (
    `<section class="scope" data-scope="${escapeXml(scope.name)}"><h2 id="scope-${index}">Scope ${escapeXml(scope.name)}</h2><p class="meta">${summary}</p>` +
    urlsChart(scope, `${id}-urls`) +
    fprChart(scope, `${id}-fpr`) +
    fillChart(scope, `${id}-fill`) +
    `<h3>Epochs</h3>${epochTable(scope)}` +
    '<p class="note">“new” is what the epoch itself answered as new (each epoch has its own filter and seeds). ' +
    'The store keeps no per-URL history across epochs, so “new since previous” is a lower bound: of the ~D₂ distinct URLs of an epoch, ' +
    'at least D₂ − D₁ were not in the previous epoch’s D₁ (shown only where the previous epoch still exists).</p>' +
    `<h3>Sizing decisions</h3>${sizingTable(scope)}</section>`
  );
}

/** The whole report page. */
export function renderReport(data: ReportData): string {
  const nav = data.scopes.map((s, i) => `<a href="#scope-${i}">${escapeXml(s.name)}</a>`).join('');
  const body =
    data.scopes.length === 0 ? '<p>This store has no scopes yet.</p>' : data.scopes.map(scopeSection).join('');
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>seenstore report: ${escapeXml(data.storeDir)}</title><style>${STYLE}</style></head><body>` +
    `<h1>seenstore report</h1><p class="meta">store ${escapeXml(data.storeDir)} · written ${day(data.generatedAtMs)} by seenstore ${escapeXml(data.version)}</p>` +
    `<nav>${nav}</nav>${body}</body></html>\n`
  );
}

/**
 * "At least N new since the previous epoch". An epoch that holds no more distinct URLs than the
 * one before gives no lower bound: "≥ 0" would say nothing, so the cell says that instead.
 */
function newSincePreviousCell(atLeast: number | null): string {
  if (atLeast === null) return '<td>–</td>';
  if (atLeast === 0)
    return '<td title="this epoch holds no more distinct URLs than the previous one, which bounds nothing">no bound</td>';
  return `<td>≥ ${count(atLeast)}</td>`;
}
