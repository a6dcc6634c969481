import { SeenStoreError } from '../errors.js';
import { keyCount, pickKeys, type Keys } from '../hash/xxhash.js';
import { PartlyDecided, type DeliveryWrite, type EpochBits, type QueueItems } from '../store/backend.js';
import { pickQueue } from '../store/queue-items.js';

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
