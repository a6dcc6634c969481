import { SeenStoreError } from '../errors.js';
import { keyCount, pickKeys, sliceKeys, type Keys } from '../hash/xxhash.js';
import { PartlyDecided, type DeliveryWrite, type EpochBits, type QueueItems } from '../store/backend.js';
import { pickQueue, queuePart } from '../store/queue-items.js';
import { TurnQueue } from '../store/turns.js';
import type { NormalizeMode } from '../url/normalize.js';
import { anyUrlKeys } from '../url/url-keys.js';
import { MAX_BATCH_URLS } from './epoch-queries.js';
import type { ScopeContext } from './scope.js';
import type { ScopeEpochs } from './scope-epochs.js';
import type { AddOptions } from './scope-types.js';

/**
 * The adds of one scope handle (scope.ts): checked, issued in the order they were made, cut into
 * parts of at most MAX_BATCH_URLS, each part to the open epoch and on through rotations.
 */
export class ScopeAdds {
  readonly #ctx: ScopeContext;
  readonly #epochs: ScopeEpochs;
  /** The handle's adds in the order they were made: each issues its batches after the one before (add). */
  readonly #addOrder = new TurnQueue();

  constructor(ctx: ScopeContext, epochs: ScopeEpochs) {
    this.#ctx = ctx;
    this.#epochs = epochs;
  }

  /** `urls`: an array (addIfAbsent and add check) or UTF-8 keys of the right shape (addIfAbsentUtf8 checks). */
  async add(
    urls: Keys,
    answers: boolean[] | undefined,
    options: AddOptions,
    enqueue?: QueueItems,
    deliver?: DeliveryWrite,
  ): Promise<number> {
    this.#ctx.assertOpen();
    this.#ctx.assertWritable('add');
    if (keyCount(urls) === 0) return 0;
    if (deliver !== undefined && (answers === undefined || keyCount(urls) > MAX_BATCH_URLS)) {
      throw new TypeError(`a delivered add wants its answers and at most ${MAX_BATCH_URLS} URLs`);
    }
    // Calls of one handle reach the backend in the order they were made: the next waits until this
    // one has issued its last batch (a backend deciding batches in flight out of order would answer
    // a URL given in two of them "new" at its later occurrence).
    const turn = this.#addOrder.take();
    try {
      await turn.ready;
      return await this.#addInTurn(urls, answers, options, enqueue, deliver, turn.done);
    } finally {
      turn.done();
    }
  }

  async #addInTurn(
    urls: Keys,
    answers: boolean[] | undefined,
    options: AddOptions,
    enqueue: QueueItems | undefined,
    deliver: DeliveryWrite | undefined,
    issued: () => void,
  ): Promise<number> {
    const epochs = this.#epochs;
    const count = keyCount(urls);
    const known = epochs.addTarget;
    const existing =
      known !== undefined && (options.epoch === undefined || options.epoch === known.header.epoch)
        ? known
        : await epochs.open(false);
    // Every URL is checked before anything is written, the scope's creation included.
    let keys = anyUrlKeys(urls, epochs.normalizeOf(existing), count <= MAX_BATCH_URLS);
    const epoch = existing ?? (await epochs.created());
    if (existing === undefined && epoch.header.normalize !== epochs.plan.normalize) {
      // Another process created the scope meanwhile, normalising otherwise.
      keys = anyUrlKeys(urls, epoch.header.normalize as NormalizeMode, count <= MAX_BATCH_URLS);
    }
    if (options.epoch !== undefined && options.epoch !== epoch.header.epoch) {
      throw new SeenStoreError(
        'EPOCH_SEALED',
        `epoch ${epochs.name}/${options.epoch} is not open (the open epoch is ${epoch.header.epoch})`,
      );
    }
    let added = 0;
    const route: AddRoute = {
      epoch,
      followRotation: options.epoch === undefined,
      reopen: () => epochs.open(false),
      scope: epochs.name,
    };
    for (let start = 0; start < count; ) {
      const part = sliceKeys(keys, start, Math.min(count, start + MAX_BATCH_URLS));
      const partCount = keyCount(part);
      // One part (the usual call): its answers are the call's.
      const partAnswers = answers === undefined || partCount === count ? answers : new Array<boolean>(partCount);
      const last = start + partCount === count;
      const partQueue =
        enqueue === undefined || partCount === count ? enqueue : queuePart(enqueue, start, start + partCount);
      added += await addFollowingRotations(route, part, partAnswers, partQueue, deliver, last ? issued : undefined);
      if (answers !== undefined && partAnswers !== answers)
        for (let i = 0; i < partCount; i++) answers[start + i] = partAnswers![i]!;
      start += partCount;
    }
    return added;
  }
}

/** Where a batch goes, and how it follows a rotation. */
export interface AddRoute {
  /** The epoch the batch goes to; the next one after a rotation that sealed it. */
  epoch: EpochBits;
  /** Follow a rotation (false: an add to an explicit epoch fails with EPOCH_SEALED instead). */
  readonly followRotation: boolean;
  /** The scope's open epoch as the store says now (undefined: the scope is gone). */
  readonly reopen: () => Promise<EpochBits | undefined>;
  readonly scope: string;
}

/**
 * One batch into the route's epoch. A rotation that sealed it first (EPOCH_SEALED) sends the batch
 * to the next epoch — or only its undecided keys, when a partitioned epoch had decided some
 * (PartlyDecided): each key lands in exactly one epoch and keeps the answer it got there.
 * `issued` runs once the batch is handed to the backend (the next call of the handle may then go).
 */
export async function addFollowingRotations(
  route: AddRoute,
  keys: Keys,
  answers: boolean[] | undefined,
  enqueue: QueueItems | undefined,
  deliver: DeliveryWrite | undefined,
  issued?: () => void,
): Promise<number> {
  let added = 0;
  /** Indices of the keys still to decide (undefined: all of them). */
  let rest: number[] | undefined;
  for (;;) {
    const restAnswers = rest === undefined || answers === undefined ? answers : new Array<boolean>(rest.length);
    const copyBack = (decided?: Uint8Array): void => {
      if (rest === undefined || answers === undefined) return;
      rest.forEach((i, t) => {
        if (decided === undefined || decided[t] === 1) answers[i] = restAnswers![t]!;
      });
    };
    try {
      const restQueue = enqueue === undefined || rest === undefined ? enqueue : pickQueue(enqueue, rest);
      const restDeliver = deliver === undefined || rest === undefined ? deliver : deliverRest(deliver, answers!, rest);
      const adding = route.epoch.addIfAbsent(
        rest === undefined ? keys : pickKeys(keys, rest),
        restAnswers,
        restQueue,
        restDeliver,
      );
      issued?.();
      added += await adding;
      copyBack();
      return added;
    } catch (error) {
      const rotated = error instanceof SeenStoreError && error.code === 'EPOCH_SEALED' && route.followRotation;
      const next = rotated ? await route.reopen() : undefined;
      if (next === undefined || next === route.epoch) throw error;
      if (next.header.normalize !== route.epoch.header.normalize) {
        throw new SeenStoreError(
          'EPOCH_SEALED',
          `epoch ${route.scope}/${route.epoch.header.epoch} was rotated to an epoch with another normalisation`,
        );
      }
      route.epoch = next;
      if (error instanceof PartlyDecided) {
        added += error.added;
        copyBack(error.decided);
        rest = (rest ?? Array.from({ length: keyCount(keys) }, (_, i) => i)).filter((_, t) => error.decided[t] !== 1);
      }
    }
  }
}

/**
 * A delivered batch's rest after a partial decision: its lines are the whole batch's new URLs, the
 * ones the sealed epoch decided (already in `answers`) and the rest's.
 */
function deliverRest(deliver: DeliveryWrite, answers: readonly boolean[], rest: readonly number[]): DeliveryWrite {
  return {
    ...deliver,
    lines: (restAnswers) => {
      const whole = answers.slice();
      rest.forEach((i, t) => {
        whole[i] = restAnswers[t]!;
      });
      return deliver.lines(whole);
    },
  };
}
