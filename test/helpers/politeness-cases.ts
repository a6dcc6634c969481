/**
 * The frontier's politeness rule as a table of cases: inputs and the answer the rule gives. One
 * table drives both copies of the rule, src/store/politeness.ts and the Redis library's
 * politeness.lua (test/politeness-rule.test.ts), so that a change of one that the other does not
 * follow fails here. Times are plain numbers of ms; a case leaves an input out where the queue has
 * none (never taken, no own delay, no crawl limit, nothing waiting).
 */

/** queueRoom: how many more URLs of a queue may be out on lease (Infinity: no limit). */
export interface RoomCase {
  readonly name: string;
  readonly maxInFlightPerQueue: number;
  readonly leased: number;
  readonly completed: number;
  readonly crawlLimit?: number;
  readonly room: number;
}

/** readyAtMs: when take may next hand a queue out (undefined: not while it stays as it is). */
export interface ReadyCase {
  readonly name: string;
  readonly firstDueMs?: number;
  readonly lastTakeMs?: number;
  readonly delayMs?: number;
  readonly defaultDelayMs: number;
  readonly blockedUntilMs: number;
  readonly room: number;
  readonly readyAtMs: number | undefined;
}

/** takeAllowance: how many URLs one take may lease from a ready queue. */
export interface AllowanceCase {
  readonly name: string;
  readonly perQueue: number;
  readonly countLeft: number;
  readonly room: number;
  readonly allowance: number;
}

/** compareReady: the take order of ready queues (a queue without lastTakeMs was never taken). */
export interface OrderCase {
  readonly name: string;
  readonly queues: readonly { readonly key: string; readonly readyAtMs: number; readonly lastTakeMs?: number }[];
  readonly order: readonly string[];
}

const T = 1_764_158_400_000;

export const ROOM_CASES: readonly RoomCase[] = [
  { name: 'no limits', maxInFlightPerQueue: 0, leased: 7, completed: 3, room: Infinity },
  { name: 'in-flight limit, some leased', maxInFlightPerQueue: 3, leased: 1, completed: 0, room: 2 },
  { name: 'in-flight limit reached', maxInFlightPerQueue: 3, leased: 3, completed: 0, room: 0 },
  { name: 'in-flight limit lowered under those leased', maxInFlightPerQueue: 2, leased: 5, completed: 0, room: 0 },
  {
    name: 'crawl limit counts completed and leased',
    maxInFlightPerQueue: 0,
    leased: 2,
    completed: 5,
    crawlLimit: 10,
    room: 3,
  },
  {
    name: 'crawl limit reached by leased ones',
    maxInFlightPerQueue: 0,
    leased: 4,
    completed: 6,
    crawlLimit: 10,
    room: 0,
  },
  {
    name: 'crawl limit passed (lowered after)',
    maxInFlightPerQueue: 0,
    leased: 0,
    completed: 12,
    crawlLimit: 10,
    room: 0,
  },
  { name: 'crawl limit 0', maxInFlightPerQueue: 0, leased: 0, completed: 0, crawlLimit: 0, room: 0 },
  { name: 'the lower of the two: in-flight', maxInFlightPerQueue: 2, leased: 1, completed: 0, crawlLimit: 10, room: 1 },
  { name: 'the lower of the two: crawl', maxInFlightPerQueue: 5, leased: 1, completed: 7, crawlLimit: 10, room: 2 },
];

export const READY_CASES: readonly ReadyCase[] = [
  {
    name: 'never taken: its first due entry',
    firstDueMs: T,
    defaultDelayMs: 1_000,
    blockedUntilMs: 0,
    room: Infinity,
    readyAtMs: T,
  },
  { name: 'nothing waits', defaultDelayMs: 1_000, blockedUntilMs: 0, room: Infinity, readyAtMs: undefined },
  { name: 'no room', firstDueMs: T, defaultDelayMs: 1_000, blockedUntilMs: 0, room: 0, readyAtMs: undefined },
  {
    name: 'no room, taken before, blocked',
    firstDueMs: T,
    lastTakeMs: T,
    defaultDelayMs: 1_000,
    blockedUntilMs: T + 9_000,
    room: 0,
    readyAtMs: undefined,
  },
  {
    name: 'last take plus the default delay',
    firstDueMs: T,
    lastTakeMs: T + 500,
    defaultDelayMs: 1_000,
    blockedUntilMs: 0,
    room: 1,
    readyAtMs: T + 1_500,
  },
  {
    name: 'last take plus its own delay',
    firstDueMs: T,
    lastTakeMs: T + 500,
    delayMs: 3_000,
    defaultDelayMs: 1_000,
    blockedUntilMs: 0,
    room: 1,
    readyAtMs: T + 3_500,
  },
  {
    name: 'its own delay of 0 over the default',
    firstDueMs: T,
    lastTakeMs: T + 500,
    delayMs: 0,
    defaultDelayMs: 1_000,
    blockedUntilMs: 0,
    room: 1,
    readyAtMs: T + 500,
  },
  {
    name: 'a due time after the delay',
    firstDueMs: T + 60_000,
    lastTakeMs: T,
    defaultDelayMs: 1_000,
    blockedUntilMs: 0,
    room: 2,
    readyAtMs: T + 60_000,
  },
  {
    name: 'blocked past the delay',
    firstDueMs: T,
    lastTakeMs: T,
    defaultDelayMs: 1_000,
    blockedUntilMs: T + 10_000,
    room: 2,
    readyAtMs: T + 10_000,
  },
  {
    name: 'a block that ended',
    firstDueMs: T + 2_000,
    lastTakeMs: T,
    defaultDelayMs: 1_000,
    blockedUntilMs: T - 5_000,
    room: 2,
    readyAtMs: T + 2_000,
  },
  {
    name: 'taken at time 0',
    firstDueMs: 0,
    lastTakeMs: 0,
    defaultDelayMs: 250,
    blockedUntilMs: 0,
    room: 1,
    readyAtMs: 250,
  },
  {
    name: 'delay 0: ready again at its last take',
    firstDueMs: T,
    lastTakeMs: T + 40,
    defaultDelayMs: 0,
    blockedUntilMs: 0,
    room: 1,
    readyAtMs: T + 40,
  },
];

export const ALLOWANCE_CASES: readonly AllowanceCase[] = [
  { name: 'perQueue', perQueue: 2, countLeft: 100, room: Infinity, allowance: 2 },
  { name: 'the count the take has left', perQueue: 10, countLeft: 3, room: Infinity, allowance: 3 },
  { name: "the queue's room", perQueue: 10, countLeft: 100, room: 4, allowance: 4 },
  { name: 'no room', perQueue: 10, countLeft: 100, room: 0, allowance: 0 },
];

export const ORDER_CASES: readonly OrderCase[] = [
  {
    name: 'ready first goes first',
    queues: [
      { key: 'a', readyAtMs: T + 10, lastTakeMs: T - 5_000 },
      { key: 'b', readyAtMs: T },
      { key: 'c', readyAtMs: T + 5 },
    ],
    order: ['b', 'c', 'a'],
  },
  {
    name: 'ready at once: taken longest ago first, so a queue just taken waits behind the others',
    queues: [
      { key: 'a', readyAtMs: T, lastTakeMs: T },
      { key: 'b', readyAtMs: T, lastTakeMs: T - 2_000 },
      { key: 'c', readyAtMs: T, lastTakeMs: T - 1_000 },
    ],
    order: ['b', 'c', 'a'],
  },
  {
    name: 'ready at once: never taken before taken',
    queues: [
      { key: 'a', readyAtMs: T, lastTakeMs: 0 },
      { key: 'z', readyAtMs: T },
    ],
    order: ['z', 'a'],
  },
  {
    name: 'ready and taken at once: key order',
    queues: [
      { key: 'b.example', readyAtMs: T },
      { key: 'a.example:8080', readyAtMs: T },
      { key: 'a.example', readyAtMs: T },
    ],
    order: ['a.example', 'a.example:8080', 'b.example'],
  },
  {
    name: 'ready time before last take',
    queues: [
      { key: 'a', readyAtMs: T + 1, lastTakeMs: 0 },
      { key: 'b', readyAtMs: T, lastTakeMs: T - 1 },
      { key: 'c', readyAtMs: T + 1 },
    ],
    order: ['b', 'c', 'a'],
  },
];
