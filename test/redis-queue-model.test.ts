import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createClient } from 'redis';
import { mulberry32 } from '../src/cli/commands/demo.js';
import { QUEUE_STATE_KEYS } from '../src/store/redis/keys.js';
import { assembleLibrary } from '../src/store/redis/library.js';
import { redisMissing, startRedisCluster, type RedisCluster } from './helpers/redis-cluster.js';

/**
 * One partition of the Redis frontier's queues (key layout 3) against a model, on a Redis server:
 * a seeded random run of admits (duplicates, and dues out of order across calls, as moves from
 * several inboxes deliver them), takes, done (some with a refetch time), releases with data,
 * schedules (new URLs, moves, 0), forgets, purges and queue deletions, with enough URLs per queue
 * to cross FIFO chunks, pages and URL index splits and merges. After every step the partition's
 * counts and every queue's stats equal the model's; every take hands out exactly the model's
 * URLs in its order (due time, place, entry number); every few steps, the whole listing
 * (ss_fq_scan) equals the model entry by entry.
 */
const missing = redisMissing();

interface Entry {
  url: string;
  queue: string;
  due: number;
  place: number;
  where: 'waiting' | 'leased';
  attempts: number;
  data: string;
  /** When it was first stored; -1: by Redis's clock at a schedule (after every purge cutoff here). */
  created: number;
}

describe('redis frontier: a queue partition against a model', { skip: missing }, () => {
  let server: RedisCluster;
  let client: ReturnType<typeof createClient>;
  const call = (...args: string[]): Promise<unknown> => client.sendCommand(args);

  before(async () => {
    server = await startRedisCluster({ cluster: false });
    client = createClient({ socket: { host: '127.0.0.1', port: server.nodes[0]!.port } });
    client.on('error', () => {});
    await client.connect();
    await call('FUNCTION', 'LOAD', 'REPLACE', assembleLibrary().text);
  });
  after(async () => {
    await client?.quit().catch(() => undefined);
    await server?.stop();
  });

  it('a random run of 400 steps: every take, count, queue and entry as the model says', async () => {
    // Seeded: the run is the same every time.
    const next = mulberry32(47);
    const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
    const state = QUEUE_STATE_KEYS.map((name) => `{m}:${name}`);
    const settings = ['1', '0', '0'];
    let answers = 0;
    const answered = (): string[] => [...state, `{m}:a:${++answers}`, `{m}:a:${answers}`];
    // Every queue function but ss_fq_scan reads the clock: '' last, Redis's TIME (common.lua `timed`).
    const fcall = (name: string, keys: string[], ...args: string[]): Promise<unknown> =>
      call('FCALL', name, String(keys.length), ...keys, ...settings, ...args, '');
    const once = (name: string, ...args: string[]): Promise<unknown> => fcall(name, answered(), '300', '', ...args);

    const baseMs = Date.now() - 3_600_000;
    const queues = ['a.example', 'b.example', 'c.example', 'd.example:8080', ''];
    const model = new Map<number, Entry>();
    const completed = new Map<string, number>();
    let inboxSeq = 0;
    let urlSeq = 0;
    const urls: string[] = [];
    // ss_fq_find takes no settings.
    const find = async (list: readonly string[]): Promise<(number | undefined)[]> => {
      const reply = (await call('FCALL', 'ss_fq_find', String(state.length), ...state, ...list, '')) as unknown[];
      return list.map((_, n) => (reply[2 + 2 * n] === '' ? undefined : Number(reply[1 + 2 * n])));
    };
    const ordered = (queue: string, nowMs: number): [number, Entry][] =>
      [...model]
        .filter(([, e]) => e.queue === queue && e.where === 'waiting' && e.due <= nowMs)
        .sort(([x, a], [y, b]) => a.due - b.due || a.place - b.place || x - y);

    const admit = async (): Promise<void> => {
      const count = 1 + Math.floor(next() * 300);
      const args: string[] = [];
      const offered: { url: string; queue: string; due: number; place: number; data: string }[] = [];
      for (let i = 0; i < count; i++) {
        // A tenth offered again (queued already, or earlier in this call): queued once.
        const url =
          urls.length > 0 && next() < 0.1
            ? pick(urls)
            : `https://${pick(['a', 'b', 'c', 'd'])}.example/${urlSeq++}/${'p'.repeat(Math.floor(next() * 40))}`;
        const queue = pick(queues);
        // Whole seconds and places from several clients' adds: equal due times ordered by place.
        const due = baseMs + 1_000 * Math.floor(next() * 600);
        const place = Math.floor(next() * 1_000_000);
        const data = next() < 0.2 ? JSON.stringify({ n: i }) : '';
        offered.push({ url, queue, due, place, data });
        args.push('0', `${baseMs}-${++inboxSeq}`, url, queue, '1', data, String(due), String(place));
      }
      const queued = Number(await fcall('ss_fq_admit', state, ...args));
      const fresh: typeof offered = [];
      const known = new Set([...model.values()].map((e) => e.url));
      for (const o of offered) {
        if (known.has(o.url)) continue;
        known.add(o.url);
        fresh.push(o);
      }
      assert.equal(queued, fresh.length, 'admit queued another number of URLs');
      const ids = await find(fresh.map((o) => o.url));
      fresh.forEach((o, n) => {
        assert.ok(ids[n] !== undefined, `${o.url} was not queued`);
        model.set(ids[n]!, {
          url: o.url,
          queue: o.queue,
          due: o.due,
          place: o.place,
          where: 'waiting',
          attempts: 0,
          data: o.data,
          created: o.due,
        });
        urls.push(o.url);
      });
    };

    const take = async (): Promise<void> => {
      const queue = pick(queues);
      const n = 1 + Math.floor(next() * 400);
      const reply = (await once('ss_fq_take', '3600000', 'owner', queue, String(n))) as unknown[][];
      const expected = ordered(queue, Date.now() - 1).slice(0, n);
      assert.deepEqual(
        reply.map((entry) => [Number(entry[0]), String(entry[1]), Number(entry[4]), String(entry[6])]),
        expected.map(([id, e]) => [id, e.url, e.attempts + 1, e.data]),
        `take of ${n} from ${queue}`,
      );
      for (const [, e] of expected) {
        e.where = 'leased';
        e.attempts++;
      }
    };

    const leased = (): number[] => [...model].filter(([, e]) => e.where === 'leased').map(([id]) => id);

    const done = async (): Promise<void> => {
      const ids = leased().filter(() => next() < 0.5);
      const refetch = ids.map(() => (next() < 0.3 ? baseMs + Math.floor(next() * 600_000) : 0));
      const failed = next() < 0.3;
      assert.equal(
        Number(
          await once('ss_fq_done', String(ids.length), ...ids.map(String), ...refetch.map(String), failed ? '1' : '0'),
        ),
        ids.length,
      );
      ids.forEach((id, n) => {
        const e = model.get(id)!;
        completed.set(e.queue, (completed.get(e.queue) ?? 0) + 1);
        if (refetch[n]! > 0) Object.assign(e, { where: 'waiting', due: refetch[n], place: 0, attempts: 0 });
        else model.delete(id);
      });
    };

    const release = async (): Promise<void> => {
      const ids = leased().filter(() => next() < 0.5);
      const data = ids.map((id) => (next() < 0.5 ? JSON.stringify({ released: id }) : ''));
      assert.equal(Number(await once('ss_fq_release', String(ids.length), ...ids.map(String), ...data)), ids.length);
      ids.forEach((id, n) => {
        const e = model.get(id)!;
        e.where = 'waiting';
        if (data[n] !== '') e.data = data[n]!;
      });
    };

    const schedule = async (): Promise<void> => {
      const items: { url: string; queue: string; at: number }[] = [];
      for (let i = 0; i < 1 + Math.floor(next() * 20); i++) {
        const url = urls.length > 0 && next() < 0.7 ? pick(urls) : `https://s.example/${urlSeq++}`;
        if (items.some((item) => item.url === url)) continue;
        const at = next() < 0.15 ? 0 : next() < 0.5 ? Date.now() + 3_600_000 : baseMs + Math.floor(next() * 600_000);
        items.push({ url, queue: pick(queues), at });
      }
      const ids = await find(items.map((item) => item.url));
      const waiting = Number(
        await once(
          'ss_fq_schedule',
          String(items.length),
          ...items.flatMap((item) => [item.url, item.queue, String(item.at), '']),
        ),
      );
      let expected = 0;
      const created = await find(items.map((item) => item.url));
      items.forEach((item, n) => {
        const id = ids[n];
        if (item.at === 0) {
          if (id !== undefined) {
            completed.set(model.get(id)!.queue, (completed.get(model.get(id)!.queue) ?? 0) + 1);
            model.delete(id);
          }
          return;
        }
        expected++;
        if (id === undefined) {
          model.set(created[n]!, {
            url: item.url,
            queue: item.queue,
            due: item.at,
            place: n,
            where: 'waiting',
            attempts: 0,
            data: '',
            created: -1,
          });
          urls.push(item.url);
        } else {
          Object.assign(model.get(id)!, { queue: item.queue, due: item.at, place: n, where: 'waiting' });
        }
      });
      assert.equal(waiting, expected);
    };

    const forget = async (): Promise<void> => {
      if (urls.length === 0) return;
      const gone = [...new Set(Array.from({ length: 1 + Math.floor(next() * 10) }, () => pick(urls)))];
      const ids = await find(gone);
      assert.equal(Number(await fcall('ss_fq_forget', state, ...gone)), ids.filter((id) => id !== undefined).length);
      for (const id of ids) if (id !== undefined) model.delete(id);
    };

    const purge = async (): Promise<void> => {
      const ids = [...model.keys()].filter(() => next() < 0.1);
      const cutoff = baseMs + Math.floor(next() * 600_000);
      const expected = ids.filter((id) => model.get(id)!.created !== -1 && model.get(id)!.created < cutoff);
      assert.equal(Number(await fcall('ss_fq_purge', state, String(cutoff), ...ids.map(String))), expected.length);
      for (const id of expected) model.delete(id);
    };

    const deleteQueue = async (): Promise<void> => {
      const queue = pick(queues);
      const held = [...model].filter(([, e]) => e.queue === queue);
      assert.equal(Number(await fcall('ss_fq_delete', state, queue)), held.length);
      for (const [id] of held) model.delete(id);
      completed.delete(queue);
    };

    const check = async (step: number, full: boolean): Promise<void> => {
      const stats = ((await fcall('ss_fq_stats', state)) as number[]).map(Number);
      assert.equal(stats[0], model.size, `step ${step}: entries`);
      assert.equal(stats[1], leased().length, `step ${step}: leased`);
      for (const queue of queues) {
        const mine = [...model.values()].filter((e) => e.queue === queue);
        const reply = ((await fcall('ss_fq_queue', state, queue)) as number[]).map(Number);
        const waiting = mine.filter((e) => e.where === 'waiting').length;
        if (reply.length === 0) {
          assert.equal(mine.length + (completed.get(queue) ?? 0), 0, `step ${step}: queue ${queue} is unknown`);
          continue;
        }
        assert.deepEqual(
          reply.slice(0, 3),
          [waiting, mine.length - waiting, completed.get(queue) ?? 0],
          `step ${step}: queue ${queue}`,
        );
      }
      if (!full) return;
      const listed = new Map<number, unknown>();
      let cursor = '0';
      do {
        const reply = (await call('FCALL', 'ss_fq_scan', String(state.length), ...state, cursor, '50')) as unknown[];
        cursor = String(reply[0]);
        for (let at = 1; at + 1 < reply.length; at += 2)
          listed.set(Number(reply[at]), JSON.parse(String(reply[at + 1])));
      } while (cursor !== '0');
      assert.equal(listed.size, model.size, `step ${step}: listed entries`);
      for (const [id, e] of model) {
        const entry = listed.get(id) as
          | { u: string; q: string; t: number; a: number; l: number; d?: string; c: number }
          | undefined;
        const created = e.created === -1 && entry !== undefined && entry.c > baseMs + 600_000 ? -1 : entry?.c;
        assert.deepEqual(
          entry && [entry.u, entry.q, entry.t, entry.a, entry.l > 0, entry.d ?? '', created],
          [e.url, e.queue, e.due, e.attempts, e.where === 'leased', e.data, e.created],
          `step ${step}: entry ${id}`,
        );
      }
    };

    const steps: [number, () => Promise<void>][] = [
      [30, admit],
      [25, take],
      [12, done],
      [8, release],
      [8, schedule],
      [5, forget],
      [5, purge],
      [1, deleteQueue],
    ];
    const total = steps.reduce((sum, [weight]) => sum + weight, 0);
    for (let step = 1; step <= 400; step++) {
      let roll = next() * total;
      const [, action] = steps.find(([weight]) => (roll -= weight) < 0)!;
      await action();
      await check(step, step % 25 === 0);
    }
    assert.ok(model.size > 500, `the run ended with ${model.size} entries: too few to cross chunks and pages`);
  });

  it("an entry number past the URL index's 5 bytes fails the admit whole: nothing cut, nothing written", async () => {
    const state = QUEUE_STATE_KEYS.map((name) => `{x}:${name}`);
    // Each from its own inbox entry: an inbox id at or before the source's mark is admitted already.
    let inboxSeq = 0;
    const admit = (url: string): Promise<unknown> =>
      call(
        'FCALL',
        'ss_fq_admit',
        String(state.length),
        ...state,
        '1',
        '0',
        '0',
        '0',
        `0-${++inboxSeq}`,
        url,
        'x.example',
        '1',
        '',
        '0',
        '0',
        '',
      );
    // The last number that fits: admitted and found.
    await call('SET', state[QUEUE_STATE_KEYS.indexOf('seq')]!, String(2 ** 40 - 2));
    assert.equal(Number(await admit('https://x.example/last')), 1);
    await assert.rejects(admit('https://x.example/past'), /does not fit in 5 bytes/);
    const found = (await call(
      'FCALL',
      'ss_fq_find',
      String(state.length),
      ...state,
      'https://x.example/past',
      '',
    )) as unknown[];
    assert.equal(found[2], '', 'the refused URL is not queued');
  });
});
