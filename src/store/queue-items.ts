import type { QueueItems } from './backend.js';

/** The items of the keys at `indices`, in that order. */
export function pickQueue(items: QueueItems, indices: readonly number[]): QueueItems {
  const data = items.data;
  return {
    urls: indices.map((i) => items.urls[i]!),
    queues: indices.map((i) => items.queues[i]!),
    ...(data === undefined ? {} : { data: indices.map((i) => data[i]) }),
  };
}

/** Items start..end - 1 of a call's queue items (one part of a call split into batches). */
export function queuePart(items: QueueItems, start: number, end: number): QueueItems {
  return {
    urls: items.urls.slice(start, end),
    queues: items.queues.slice(start, end),
    ...(items.data === undefined ? {} : { data: items.data.slice(start, end) }),
  };
}
