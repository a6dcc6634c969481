import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { KeyWriter, scopePrefix } from '../src/store/lmdb/frontier-keys.js';
import { compareReady, NEVER_TAKEN_MS, queueRoom, readyAtMs, takeAllowance } from '../src/store/politeness.js';
import { pickQueues } from '../src/store/redis/queue-picks.js';
import { ROOT } from './helpers/data.js';
import { ALLOWANCE_CASES, ORDER_CASES, READY_CASES, ROOM_CASES, type OrderCase } from './helpers/politeness-cases.js';
import { redisMissing } from './helpers/redis-cluster.js';
import { luaServer } from './helpers/redis-lua.js';

const REDIS_MISSING = redisMissing() ?? false;

/** The queues of an order case as the take order compares them. */
const readyQueues = (c: OrderCase) =>
  c.queues.map((q) => ({ key: q.key, readyAtMs: q.readyAtMs, lastTakeMs: q.lastTakeMs ?? NEVER_TAKEN_MS }));

describe('the politeness rule in TypeScript (store/politeness.ts), case by case', () => {
  it('room: the in-flight and crawl limits', () => {
    for (const c of ROOM_CASES) assert.equal(queueRoom(c, c.maxInFlightPerQueue), c.room, c.name);
  });

  it('ready time: first due, last take plus delay, block; none without room or waiting URLs', () => {
    for (const c of READY_CASES)
      assert.equal(readyAtMs(c, c.firstDueMs, c.defaultDelayMs, c.room), c.readyAtMs, c.name);
  });

  it('allowance: perQueue, the count left, the room', () => {
    for (const c of ALLOWANCE_CASES) assert.equal(takeAllowance(c.perQueue, c.countLeft, c.room), c.allowance, c.name);
  });

  it('order: ready first, then taken longest ago, then key', () => {
    for (const c of ORDER_CASES) {
      for (const queues of [readyQueues(c), readyQueues(c).reverse()])
        assert.deepEqual(
          queues.sort(compareReady).map((q) => q.key),
          c.order,
          c.name,
        );
    }
  });

  it("order: LMDB's ready index key sorts as compareReady (its bytes, as LMDB compares them)", () => {
    for (const c of ORDER_CASES) {
      const writer = new KeyWriter(scopePrefix(1));
      const keys = readyQueues(c).map((q) => ({
        q,
        bytes: Buffer.from(writer.ready(q.readyAtMs, q.lastTakeMs, q.key)),
      }));
      assert.deepEqual(
        keys.sort((a, b) => Buffer.compare(a.bytes, b.bytes)).map(({ q }) => q.key),
        c.order,
        c.name,
      );
    }
  });

  it("order: Redis's take picks the ready queues of its partitions in that order", () => {
    const request = { count: 100, leaseMs: 1_000, perQueue: 1, maxQueues: 0 };
    for (const c of ORDER_CASES) {
      const candidates = readyQueues(c).map((q, i) => ({ ...q, partition: i % 2, available: 1 }));
      const picks = [...pickQueues(candidates, request, 0, 0, new Set(), new Map()).values()].flat();
      assert.deepEqual(
        picks.sort((a, b) => a.order - b.order).map((p) => p.key),
        c.order,
        c.name,
      );
    }
  });
});

/**
 * Runs every room and ready case through politeness.lua in one EVAL: the file alone (it calls
 * nothing of the rest of the library), then a loop over the cases. -1 stands for no limit (a room
 * of Infinity) and for no ready time, both ways.
 */
const LUA_CASES = `
local cases = cjson.decode(ARGV[1])
local out = {}
for _, c in ipairs(cases.room) do
  local r = queue_room(c.maxInFlightPerQueue, c.leased, c.completed, c.crawlLimit)
  out[#out + 1] = r == math.huge and -1 or r
end
for _, c in ipairs(cases.ready) do
  local room = c.room == -1 and math.huge or c.room
  local at = queue_ready_at(c.firstDueMs, c.lastTakeMs, c.delayMs, c.defaultDelayMs, c.blockedUntilMs, room)
  out[#out + 1] = at or -1
end
return out
`;

describe('the politeness rule in Lua (redis/lua/politeness.lua), the same cases through a real Redis', {
  skip: REDIS_MISSING,
}, () => {
  const { call } = luaServer();

  it('gives every room and ready time the table gives', async () => {
    const source = readFileSync(`${ROOT}/src/store/redis/lua/politeness.lua`, 'utf8');
    const finite = (n: number): number => (n === Infinity ? -1 : n);
    const cases = JSON.stringify({ room: ROOM_CASES, ready: READY_CASES.map((c) => ({ ...c, room: finite(c.room) })) });
    const reply = (await call('EVAL', `${source}\n${LUA_CASES}`, '0', cases)) as number[];
    assert.equal(reply.length, ROOM_CASES.length + READY_CASES.length);
    ROOM_CASES.forEach((c, i) => assert.equal(reply[i], finite(c.room), `room: ${c.name}`));
    READY_CASES.forEach((c, i) =>
      assert.equal(reply[ROOM_CASES.length + i], c.readyAtMs ?? -1, `ready time: ${c.name}`),
    );
  });
});
