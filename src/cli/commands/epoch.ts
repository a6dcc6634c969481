import type { Command } from 'commander';
import type { EpochDetails, EpochStats, Scope } from '../../epochs/scope.js';
import {
  openStore,
  openStoreReadOnly,
  parseCount,
  parseFpr,
  parseSeeds,
  requireScope,
  type GlobalOptions,
} from '../context.js';
import { formatCount, table } from '../output.js';
import { stopOnSignals } from '../interrupt.js';
import { parseDuration } from '../duration.js';
import { safePoint } from '../../store/interruption.js';
import { parseStrategy, strategyName } from '../../filters/strategy.js';

function when(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The columns of one epoch in `epoch list` and `stats`. */
export const EPOCH_COLUMNS = [
  'epoch',
  'state',
  'created',
  'sealed',
  'capacity',
  'adds',
  'new',
  'est.distinct',
  'fill',
  'est.FPR',
  'slices',
  'bytes',
];

export function epochCells(e: EpochStats): string[] {
  return [
    String(e.epoch),
    e.state,
    when(e.createdAtMs),
    when(e.sealedAtMs),
    formatCount(e.capacityUrls),
    formatCount(e.adds),
    formatCount(e.new),
    formatCount(e.estimatedDistinct),
    `${(e.fillRatio * 100).toFixed(2)}%`,
    e.estimatedFpr.toExponential(2),
    String(e.slices),
    formatCount(e.bytesOnDisk),
  ];
}

/** `epoch list`: one row per epoch. */
export async function epochList(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const store = await openStoreReadOnly(options);
  try {
    const scope = await requireScope(store, options);
    const { epochs } = await scope.stats();
    process.stdout.write(
      options.json
        ? `${JSON.stringify({ scope: scope.name, epochs })}\n`
        : table(EPOCH_COLUMNS, epochs.map(epochCells), 4),
    );
  } finally {
    await store.close();
  }
}

function renderDetails(d: EpochDetails): string {
  const lines = [
    `epoch ${d.epoch} (${d.state})`,
    `  created          ${when(d.createdAtMs)}`,
    `  sealed           ${when(d.sealedAtMs)}`,
    `  strategy         ${d.strategy}`,
    `  hash scheme      ${d.hashScheme}, normalisation ${d.normalize}`,
    `  plan             ${formatCount(d.capacityUrls)} URLs at FPR ${d.fprTarget}; growth x${d.growth.factor} per slice, error x${d.growth.tightening}`,
    `  sizing           ${d.sizing.policy}: ${d.sizing.reason}`,
    `  sizing inputs    ${Object.entries(d.sizing.inputs)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
    `  counts           adds ${formatCount(d.adds)}, new ${formatCount(d.new)}, est. distinct ${formatCount(d.estimatedDistinct)}`,
    `  now              fill ${(d.fillRatio * 100).toFixed(2)}%, est. FPR ${d.estimatedFpr.toExponential(2)}, ${formatCount(d.bytesOnDisk)} bytes on disk`,
  ];
  d.sliceDetails.forEach((s, j) => {
    lines.push(
      `  slice ${j}          ${s.layout}, m=${formatCount(s.mBits)} bits, k=${s.k}, capacity ${formatCount(s.capacityUrls)} at ${s.fprTarget.toExponential(2)}, new ${formatCount(s.added)}, fill ${(s.fillRatio * 100).toFixed(2)}%`,
      `  slice ${j} seeds    ${s.seeds.join(' ')}`,
    );
    if (s.keying?.kind === 'eigen-v1')
      lines.push(
        `  slice ${j} keying   eigen-v1: filter 0 hashes the URL; filter 1 its features, m=${formatCount(s.keying.featureMBits)} bits, k=${s.keying.featureK}`,
      );
    if (s.keying?.kind === 'multilayer-v1')
      lines.push(
        `  slice ${j} keying   multilayer-v1: filters 0..${s.keying.layers - 1} hash the URL's layers by depth, filter ${s.keying.layers} their XOR`,
      );
  });
  return `${lines.join('\n')}\n`;
}

/** `epoch show N`: header, seeds, geometry, sizing decision and inputs. */
export async function epochShow(epochText: string, command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const n = parseCount('epoch', epochText)!;
  const store = await openStoreReadOnly(options);
  try {
    const details = await (await requireScope(store, options)).epoch(n);
    process.stdout.write(options.json ? `${JSON.stringify(details)}\n` : renderDetails(details));
  } finally {
    await store.close();
  }
}

/** `epoch rotate`: seal the open epoch, open the next, and say how it was sized. */
export async function epochRotate(command: Command): Promise<void> {
  const options = command.optsWithGlobals<
    GlobalOptions & {
      capacity?: string;
      fpr?: string;
      seeds?: string;
      strategy?: string;
      ifEpoch?: string;
      ifOlderThan?: string;
    }
  >();
  const capacityUrls = parseCount('capacity', options.capacity);
  let ifEpoch = parseCount('if-epoch', options.ifEpoch);
  const olderThanMs =
    options.ifOlderThan === undefined ? undefined : parseDuration('if-older-than', options.ifOlderThan);
  const strategy = options.strategy === undefined ? undefined : strategyName(parseStrategy(options.strategy));
  const seeds = parseSeeds(options.seeds);
  const fprTarget = parseFpr(options.fpr);
  const signal = stopOnSignals();
  const store = await openStore(options, false);
  try {
    const scope = await requireScope(store, options);
    if (olderThanMs !== undefined) {
      const judged = await judgeOpenEpoch(scope, olderThanMs, ifEpoch);
      if (judged.young !== undefined) {
        const young = judged.young;
        process.stdout.write(
          options.json
            ? `${JSON.stringify({ rotated: false, openEpoch: young.epoch, ageMs: young.ageMs, ifOlderThanMs: olderThanMs })}\n`
            : `${young.line}\n`,
        );
        return;
      }
      // Old enough: rotate the epoch that was judged and no other (not the open epoch read again,
      // which another scheduler may have rotated meanwhile), so that two schedulers rotate once.
      ifEpoch ??= judged.epoch;
    }
    // The rotation is one transaction: the one safe point is before it.
    await safePoint(signal, `rotating ${scope.name}`);
    const result = await scope.rotate({
      ...(capacityUrls === undefined ? {} : { capacityUrls }),
      ...(fprTarget === undefined ? {} : { fprTarget }),
      ...(seeds === undefined ? {} : { seeds }),
      ...(strategy === undefined ? {} : { strategy }),
      ...(ifEpoch === undefined ? {} : { ifEpoch }),
    });
    if (result === null) {
      const open = await scope.openEpoch();
      const line = `epoch ${ifEpoch} is not the open epoch (${open} is): nothing rotated`;
      process.stdout.write(
        options.json ? `${JSON.stringify({ rotated: false, ifEpoch, openEpoch: open })}\n` : `${line}\n`,
      );
      return;
    }
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      process.stdout.write(
        `sealed epoch ${result.sealed.epoch}: ${formatCount(result.sealed.new)} new URLs, ~${formatCount(result.sealed.estimatedDistinct)} distinct\n${renderDetails(result.opened)}`,
      );
    }
  } finally {
    await store.close();
  }
}

/** 3d 4h, 2h 5m, 40s: an age for a human. */
function age(ms: number): string {
  const parts: string[] = [];
  let rest = Math.max(0, Math.floor(ms / 1000));
  for (const [unit, seconds] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= seconds || (unit === 's' && parts.length === 0)) parts.push(`${Math.floor(rest / seconds)}${unit}`);
    rest %= seconds;
  }
  return parts.slice(0, 2).join(' ');
}

/**
 * For --if-older-than: the open epoch as read once, and, when it is younger than `olderThanMs`
 * (nothing to rotate), the line that says so. An --if-epoch that is not the open epoch is left to
 * the rotation to answer.
 */
async function judgeOpenEpoch(
  scope: Scope,
  olderThanMs: number,
  ifEpoch: number | undefined,
): Promise<{ epoch: number | undefined; young?: { epoch: number; ageMs: number; line: string } }> {
  const open = await scope.openEpoch();
  if (open === null || (ifEpoch !== undefined && ifEpoch !== open)) return { epoch: open ?? undefined };
  const ageMs = Date.now() - (await scope.epoch(open)).createdAtMs;
  if (ageMs > olderThanMs) return { epoch: open };
  return {
    epoch: open,
    young: {
      epoch: open,
      ageMs,
      line: `epoch ${open} is ${age(ageMs)} old, not older than ${age(olderThanMs)}: nothing rotated`,
    },
  };
}

/** `epoch prune`: drop sealed epochs beyond the retention, reporting each drop. */
export async function epochPrune(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions & { keepLast?: string; sealedWithin?: string }>();
  const keepLast = parseCount('keep-last', options.keepLast);
  const sealedWithinMs =
    options.sealedWithin === undefined ? undefined : parseDuration('sealed-within', options.sealedWithin);
  const signal = stopOnSignals();
  const store = await openStore(options, false);
  try {
    const scope = await requireScope(store, options);
    const dropped = await scope.prune({
      signal,
      ...(keepLast === undefined ? {} : { keepLast }),
      ...(sealedWithinMs === undefined ? {} : { sealedWithinMs }),
    });
    if (options.json) process.stdout.write(`${JSON.stringify({ scope: scope.name, dropped })}\n`);
    else if (dropped.length === 0) process.stdout.write('nothing to drop\n');
    else {
      for (const d of dropped) {
        process.stdout.write(
          `dropped epoch ${d.epoch} (sealed ${when(d.sealedAtMs)}), freed ${formatCount(d.bytesFreed)} bytes\n`,
        );
      }
    }
  } finally {
    await store.close();
  }
}
