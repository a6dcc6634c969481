/**
 * Bar charts as plain inline SVG, drawn when the report is written: no script, no library, nothing
 * fetched. Each series has a fill pattern as well as a colour and every bar is labelled with its
 * value, so the charts read the same in grey or in print. One column per epoch, in order; a
 * pruned run of epochs is a narrow labelled gap.
 */

export interface Series {
  readonly key: string;
  readonly label: string;
  /** Index into PATTERNS: solid, hatched, dotted or outlined. */
  readonly pattern: number;
}

export interface ChartColumn {
  readonly kind: 'epoch';
  readonly epoch: number;
  /** Lines under the column: "epoch N", then e.g. the date or the slice count. */
  readonly labels: readonly string[];
  /** One value per series (null: not known, no bar). */
  readonly values: readonly (number | null)[];
  /** A reference value drawn as a dashed line across the column (capacity, FPR target). */
  readonly marker?: number;
  /** A note written above the column when something needs attention ("over target"). */
  readonly flag?: string;
  /** The tooltip. */
  readonly title: string;
}

export interface GapColumn {
  readonly kind: 'pruned';
  readonly label: string;
}

export interface BarChart {
  readonly id: string;
  readonly series: readonly Series[];
  readonly columns: readonly (ChartColumn | GapColumn)[];
  readonly scale: 'linear' | 'log';
  /** The upper end of a linear axis when it is fixed (fill: 1). */
  readonly maxValue?: number;
  readonly markerLabel?: string;
  readonly format: (value: number) => string;
}

const PATTERNS = [
  { fill: '#2f5d8a', stroke: '#1d3a57' },
  { fill: 'url(#ID-hatch)', stroke: '#8a4b0f' },
  { fill: 'url(#ID-dots)', stroke: '#2d6b33' },
  { fill: '#ffffff', stroke: '#333333' },
] as const;

const BAR_PX = 16;
const COLUMN_GAP_PX = 18;
/** Wide enough for the "epoch 12" under a column of one bar. */
const COLUMN_MIN_PX = 66;
const GAP_COLUMN_PX = 34;
const PLOT_HEIGHT_PX = 180;
const TOP_PX = 46;
const LEFT_PX = 64;
const LABEL_LINES_PX = 30;

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]!};`);
}

interface Axis {
  readonly y: (value: number) => number;
  readonly ticks: readonly number[];
}

function linearAxis(values: readonly number[], fixedMax: number | undefined): Axis {
  const max = fixedMax ?? niceCeiling(Math.max(1, ...values));
  const y = (v: number): number => TOP_PX + PLOT_HEIGHT_PX * (1 - Math.min(v, max) / max);
  return { y, ticks: [0, max / 4, max / 2, (3 * max) / 4, max] };
}

/** Decades a log axis shows below its highest value: smaller values sit on the floor, labelled with their value. */
const LOG_DECADES_MAX = 7;

function logAxis(values: readonly number[]): Axis {
  const positive = values.filter((v) => v > 0);
  const high = Math.ceil(Math.log10(Math.max(...positive, 1e-3)));
  const low = Math.max(high - LOG_DECADES_MAX, Math.min(high - 1, Math.floor(Math.log10(Math.min(...positive, 1e-4)))));
  const y = (v: number): number => {
    const exponent = v > 0 ? Math.min(Math.max(Math.log10(v), low), high) : low;
    return TOP_PX + PLOT_HEIGHT_PX * (1 - (exponent - low) / (high - low));
  };
  const ticks: number[] = [];
  for (let e = low; e <= high; e++) ticks.push(10 ** e);
  return { y, ticks };
}

/** 1, 2 or 5 times a power of ten, at or above `value`. */
function niceCeiling(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

/** Widest an epoch column is drawn when few columns share a chart as wide as its legend. */
const COLUMN_MAX_PX = 260;

function columnWidth(chart: BarChart, column: ChartColumn | GapColumn, stretchPx = 0): number {
  return column.kind === 'pruned'
    ? GAP_COLUMN_PX
    : Math.max(COLUMN_MIN_PX, chart.series.length * BAR_PX + COLUMN_GAP_PX, stretchPx);
}

function legendWidth(chart: BarChart): number {
  return (
    LEFT_PX +
    chart.series.reduce((sum, s) => sum + 28 + s.label.length * 6.4, 0) +
    (chart.markerLabel === undefined ? 0 : 40 + chart.markerLabel.length * 6.4)
  );
}

/**
 * The width epoch columns are stretched to, so that a chart of few epochs fills the width its
 * legend takes instead of leaving most of its plot empty (two epochs under a three-item legend).
 */
function stretchedColumnPx(chart: BarChart): number {
  const epochs = chart.columns.filter((c) => c.kind === 'epoch').length;
  if (epochs === 0) return 0;
  const gaps = chart.columns.length - epochs;
  const room = legendWidth(chart) - LEFT_PX - 16 - gaps * GAP_COLUMN_PX;
  return Math.min(COLUMN_MAX_PX, Math.floor(room / epochs));
}

function defs(id: string): string {
  return (
    `<defs><pattern id="${id}-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
    '<rect width="6" height="6" fill="#f6d7b5"/><line x1="0" y1="0" x2="0" y2="6" stroke="#8a4b0f" stroke-width="3"/></pattern>' +
    `<pattern id="${id}-dots" width="5" height="5" patternUnits="userSpaceOnUse"><rect width="5" height="5" fill="#d5ecd4"/>` +
    '<circle cx="2.5" cy="2.5" r="1.3" fill="#2d6b33"/></pattern></defs>'
  );
}

function legend(chart: BarChart): string {
  let x = LEFT_PX;
  const items = chart.series.map((s) => {
    const p = PATTERNS[s.pattern]!;
    const item = `<g class="legend-item"><rect x="${x}" y="8" width="14" height="12" fill="${p.fill.replace('ID', chart.id)}" stroke="${p.stroke}"/><text x="${x + 19}" y="18">${escapeXml(s.label)}</text></g>`;
    x += 28 + s.label.length * 6.4;
    return item;
  });
  if (chart.markerLabel !== undefined) {
    items.push(
      `<g class="legend-item"><line x1="${x}" y1="14" x2="${x + 18}" y2="14" class="marker"/><text x="${x + 23}" y="18">${escapeXml(chart.markerLabel)}</text></g>`,
    );
  }
  return items.join('');
}

function yAxis(chart: BarChart, axis: Axis, width: number): string {
  return axis.ticks
    .map((t) => {
      const y = axis.y(t).toFixed(1);
      return `<line x1="${LEFT_PX - 4}" y1="${y}" x2="${width - 8}" y2="${y}" class="grid"/><text x="${LEFT_PX - 7}" y="${y}" dy="3" text-anchor="end" class="tick">${escapeXml(chart.format(t))}</text>`;
    })
    .join('');
}

/**
 * One epoch's column. Painted in this order: the reference line (capacity, target), the bars, then
 * every value label with its white halo, so that neither the line nor a neighbouring bar ever
 * strikes through a number.
 */
function epochColumn(chart: BarChart, column: ChartColumn, x: number, axis: Axis, width: number): string {
  const baseY = TOP_PX + PLOT_HEIGHT_PX;
  const firstBarX = x + (width - chart.series.length * BAR_PX) / 2;
  const bars: string[] = [];
  const values: string[] = [];
  column.values.forEach((value, i) => {
    if (value === null) return;
    const p = PATTERNS[chart.series[i]!.pattern]!;
    const top = axis.y(value);
    const bx = firstBarX + i * BAR_PX;
    const height = Math.max(baseY - top, value > 0 ? 1 : 0);
    const labelY = (baseY - height - 4).toFixed(1);
    bars.push(
      `<rect class="bar" data-series="${chart.series[i]!.key}" x="${bx}" y="${(baseY - height).toFixed(1)}" width="${BAR_PX - 2}" height="${height.toFixed(1)}" fill="${p.fill.replace('ID', chart.id)}" stroke="${p.stroke}"/>`,
    );
    values.push(
      `<text x="${bx + BAR_PX / 2}" y="${labelY}" transform="rotate(-90 ${bx + BAR_PX / 2} ${labelY})" class="value">${escapeXml(chart.format(value))}</text>`,
    );
  });
  const marker =
    column.marker === undefined
      ? ''
      : `<line class="marker" x1="${x + 4}" y1="${axis.y(column.marker).toFixed(1)}" x2="${x + width - 4}" y2="${axis.y(column.marker).toFixed(1)}"/>`;
  const flag =
    column.flag === undefined
      ? ''
      : `<text x="${x + width / 2}" y="${TOP_PX - 4}" text-anchor="middle" class="flag">${escapeXml(column.flag)}</text>`;
  const labels = column.labels.map(
    (text, i) =>
      `<text x="${x + width / 2}" y="${baseY + 14 + 12 * i}" text-anchor="middle" class="${i === 0 ? 'xlabel' : 'xnote'}">${escapeXml(text)}</text>`,
  );
  return `<g class="epoch" data-epoch="${column.epoch}"><title>${escapeXml(column.title)}</title>${marker}${bars.join('')}${values.join('')}${flag}${labels.join('')}</g>`;
}

function gapColumn(column: GapColumn, x: number): string {
  const baseY = TOP_PX + PLOT_HEIGHT_PX;
  const cx = x + GAP_COLUMN_PX / 2;
  return (
    `<g class="pruned"><title>${escapeXml(column.label)}</title><rect x="${x + 4}" y="${TOP_PX}" width="${GAP_COLUMN_PX - 8}" height="${PLOT_HEIGHT_PX}" class="gap"/>` +
    `<text x="${cx}" y="${TOP_PX + PLOT_HEIGHT_PX / 2}" transform="rotate(-90 ${cx} ${TOP_PX + PLOT_HEIGHT_PX / 2})" text-anchor="middle" dy="4" class="gaplabel">${escapeXml(column.label)}</text>` +
    `<text x="${cx}" y="${baseY + 14}" text-anchor="middle" class="xnote">gap</text></g>`
  );
}

/** The chart as one `<svg>` element, sized to its columns. */
export function renderBarChart(chart: BarChart, caption: string): string {
  const values = chart.columns.flatMap((c) =>
    c.kind === 'epoch'
      ? [...c.values.filter((v): v is number => v !== null), ...(c.marker === undefined ? [] : [c.marker])]
      : [],
  );
  const axis = chart.scale === 'log' ? logAxis(values) : linearAxis(values, chart.maxValue);
  const stretchPx = stretchedColumnPx(chart);
  const width = LEFT_PX + chart.columns.reduce((sum, c) => sum + columnWidth(chart, c, stretchPx), 0) + 16;
  const svgWidth = Math.ceil(Math.max(width, legendWidth(chart)));
  const height = TOP_PX + PLOT_HEIGHT_PX + LABEL_LINES_PX + 12;
  let x = LEFT_PX;
  const columns = chart.columns.map((c) => {
    const columnPx = columnWidth(chart, c, stretchPx);
    const drawn = c.kind === 'pruned' ? gapColumn(c, x) : epochColumn(chart, c, x, axis, columnPx);
    x += columnPx;
    return drawn;
  });
  return (
    `<svg class="chart" data-chart="${chart.id}" role="img" aria-label="${escapeXml(caption)}" xmlns="http://www.w3.org/2000/svg" width="${svgWidth}" height="${height}" viewBox="0 0 ${svgWidth} ${height}">` +
    `${defs(chart.id)}${legend(chart)}${yAxis(chart, axis, svgWidth)}${columns.join('')}</svg>`
  );
}
