import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { SeenStore } from '../src/index.js';
import { QUEUE_STATE_KEYS } from '../src/store/redis/keys.js';
import {
  assembleLibrary,
  LIBRARY_VERSION,
  LUA_FILES,
  libraryOrder,
  sourceOfLine,
  withSourceLines,
} from '../src/store/redis/library.js';
import { ROOT } from './helpers/data.js';
import { redisMissing } from './helpers/redis-cluster.js';
import { luaServer } from './helpers/redis-lua.js';

const LUACHECK_MISSING =
  spawnSync('luacheck', ['--version'], { encoding: 'utf8' }).status === 0
    ? false
    : 'luacheck is not installed (apt-get install lua-check; CI installs it)';
const REDIS_MISSING = redisMissing() ?? false;
/** The last argument of every call of a function that reads the clock (`timed`): '', Redis's TIME. */
const REDIS_TIME = '';

describe('the Redis function library as Lua', () => {
  it('every file is under 500 lines', () => {
    for (const name of LUA_FILES) {
      const lines = readFileSync(`${ROOT}/src/store/redis/lua/${name}.lua`, 'utf8').split('\n').length;
      assert.ok(lines <= 500, `${name}.lua has ${lines} lines`);
    }
  });

  it('luacheck finds nothing in the library as Redis loads it', { skip: LUACHECK_MISSING }, () => {
    const result = spawnSync('luacheck', ['--config', `${ROOT}/.luacheckrc`, '--formatter', 'plain', '--codes', '-'], {
      input: assembleLibrary().text,
      encoding: 'utf8',
    });
    const warnings = result.stdout
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => line.replace(/^stdin:(\d+):/, (_, n: string) => `${sourceOfLine(Number(n))}:`));
    assert.deepEqual(warnings, [], `luacheck:\n${warnings.join('\n')}`);
    assert.equal(result.status, 0, result.stderr);
  });

  it('maps a line of the joined library back to its file', () => {
    const { text, starts } = assembleLibrary();
    const lines = text.split('\n');
    const bits = starts.find((s) => s.file === 'bits.lua')!;
    const line = lines.findIndex((l) => l.startsWith('local function ss_add(')) + 1;
    const expected =
      readFileSync(`${ROOT}/src/store/redis/lua/bits.lua`, 'utf8')
        .split('\n')
        .findIndex((l) => l.startsWith('local function ss_add(')) + 1;
    assert.ok(line > bits.line);
    assert.equal(sourceOfLine(line), `bits.lua:${expected}`);
    assert.equal(
      withSourceLines(`ERR user_function:${line}: attempt to index a nil value`),
      `ERR bits.lua:${expected}: attempt to index a nil value`,
    );
  });

  it('orders versions by release; the same release from other sources is neither older nor newer', () => {
    const [release, hash] = LIBRARY_VERSION.split('+') as [string, string];
    const [major, minor, patch] = release.split('.').map(Number) as [number, number, number];
    assert.match(hash, /^[0-9a-f]{16}$/);
    assert.equal(libraryOrder(LIBRARY_VERSION), 'same');
    assert.equal(libraryOrder('13'), 'older', 'a library numbered by hand, before versions named the sources');
    assert.equal(libraryOrder(`${major}.${minor}.${patch + 1}+${'0'.repeat(16)}`), 'newer');
    assert.equal(libraryOrder(`${major + 1}.0.0+${'0'.repeat(16)}`), 'newer');
    assert.equal(libraryOrder(`0.0.0+${'0'.repeat(16)}`), 'older');
    assert.equal(libraryOrder(`${release}+${'0'.repeat(16)}`), 'other');
    assert.equal(libraryOrder('something else'), 'other');
  });
});

describe('the library on a Redis server', { skip: REDIS_MISSING }, () => {
  const lua = luaServer();
  const call = lua.call;
  const loadedVersion = async (): Promise<string> => String(await call('FCALL', 'ss_version', '0'));
  const open = () => SeenStore.open(lua.server.location(), { onWarning: () => {} });

  it('loads itself where none is loaded, and replaces an earlier release', async () => {
    await call('FUNCTION', 'FLUSH');
    await (await open()).close();
    assert.equal(await loadedVersion(), LIBRARY_VERSION);
    await call('FUNCTION', 'LOAD', 'REPLACE', assembleLibrary(`0.0.1+${'0'.repeat(16)}`).text);
    await (await open()).close();
    assert.equal(await loadedVersion(), LIBRARY_VERSION);
  });

  it('never replaces a later release, nor another build of its own: FORMAT_UNSUPPORTED', async () => {
    const release = LIBRARY_VERSION.split('+')[0]!;
    for (const other of [`99.0.0+${'0'.repeat(16)}`, `${release}+${'f'.repeat(16)}`]) {
      await call('FUNCTION', 'LOAD', 'REPLACE', assembleLibrary(other).text);
      await assert.rejects(
        open(),
        (error: Error & { code?: string }) => error.code === 'FORMAT_UNSUPPORTED' && error.message.includes(other),
      );
      assert.equal(await loadedVersion(), other, 'the loaded library was left as it was');
    }
    await call('FUNCTION', 'FLUSH');
  });

  describe("the clock: a timed function's caller passes it last, '' for Redis's TIME", () => {
    const HOUR_MS = 3_600_000;
    const redisMs = async (): Promise<number> => {
      const [s, us] = (await call('TIME')) as [string, string];
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const beat = (address: string, ttlMs: number, clock: string): Promise<unknown> =>
      call('FCALL', 'ss_node_beat', '1', '{clock}:nodes', address, String(ttlMs), clock);
    const live = (clock: string): Promise<unknown> => call('FCALL', 'ss_nodes', '1', '{clock}:nodes', clock);

    before(async () => {
      await call('FUNCTION', 'LOAD', 'REPLACE', assembleLibrary().text);
    });

    it("takes the time given as now, else Redis's TIME; an entry lives by the clock that reads it", async () => {
      const before = await redisMs();
      const now = Number(await beat('b:1', 60_000, REDIS_TIME));
      assert.ok(before <= now && now <= (await redisMs()), `Redis's now ${now} is not its TIME`);
      assert.equal(Number(await beat('a:1', 1000, '1000000')), 1_000_000, "a test's clock was not taken as now");
      assert.deepEqual(await live('1000500'), ['a:1', 'b:1'], 'entries did not live by the clock that read them');
      assert.deepEqual(await live(REDIS_TIME), ['b:1'], 'an entry of a clock in 1970 lived on');
      assert.deepEqual(
        await live(String(now + HOUR_MS)),
        [],
        'a node outlived its time to live on a clock an hour ahead',
      );
    });

    it('refuses a call without its clock, or with one that is not whole ms since 1970', async () => {
      for (const bad of [[], ['x'], ['1.5'], ['-1']]) {
        await assert.rejects(
          call('FCALL', 'ss_nodes', '1', '{clock}:nodes', ...bad),
          /last argument is its clock/,
          JSON.stringify(bad),
        );
      }
    });

    it("queues inbox entries at the test's time, their ids still growing when that clock goes back", async () => {
      const keys = ['state', 'slices', 'batch:0', 'batch:0', 'in', 'q', 'f0'].map((name) => `{clockin}:${name}`);
      const geometry = JSON.stringify({ filters: [[0, 2, 0]], bytes: [128], caps: [100], planned: [], max: 1 });
      await call('FCALL', 'ss_init', '3', keys[0]!, keys[1]!, keys[6]!, '{}', '1', '128');
      const string = (value: string): Buffer =>
        Buffer.concat([Buffer.from(Uint32Array.of(Buffer.byteLength(value)).buffer), Buffer.from(value)]);
      const addOne = (n: number, clock: string): Promise<unknown> => {
        const item = Buffer.concat([
          Buffer.from(Uint32Array.of(n, 0).buffer),
          string(`https://a.com/${n}`),
          string('a.com'),
          string(''),
        ]);
        const batch = `{clockin}:batch:${n}`;
        return call(
          'FCALL',
          'ss_add',
          '7',
          keys[0]!,
          keys[1]!,
          batch,
          batch,
          keys[4]!,
          keys[5]!,
          keys[6]!,
          '1',
          '1',
          geometry,
          Buffer.from(Uint32Array.of(2 * n, 2 * n + 1).buffer),
          '60',
          '',
          item,
          '1',
          clock,
        );
      };
      const ids = async (): Promise<string[]> =>
        ((await call('XRANGE', '{clockin}:in', '-', '+')) as [string][]).map(([id]) => id);
      await addOne(1, '5000000');
      await addOne(2, '4000000');
      await addOne(3, '6000000');
      assert.deepEqual(await ids(), ['5000000-0', '5000000-1', '6000000-0']);
    });
  });

  it("rebuilds a queue partition's ready set of plain queue keys (before its members held the last take) on its first call", async () => {
    let nowMs = 1_700_000_000_000;
    const location = lua.server.location();
    const prefix = new URL(location).searchParams.get('prefix')!;
    const store = await SeenStore.open(location, { clock: () => nowMs, onWarning: () => {} });
    try {
      const scope = store.scope('rm', { capacityUrls: 1_000, fprTarget: 1e-9 });
      const frontier = scope.frontier();
      await frontier.configure({ delayMs: 0 });
      await scope.enqueue(['https://a.example/1', 'https://b.example/1']);
      assert.equal((await frontier.stats()).pending, 2);
      const readyKeys = (await call('KEYS', `{${prefix}/rm/q*}:ready`)) as string[];
      assert.ok(readyKeys.length > 0);
      // As a partition written before: its ready set holds the queue keys alone, its cfg no `rm`.
      for (const ready of readyKeys) {
        const members = (await call('ZRANGE', ready, '0', '-1')) as string[];
        const scores = await Promise.all(members.map((member) => call('ZSCORE', ready, member)));
        await call('DEL', ready);
        for (const [i, member] of members.entries()) await call('ZADD', ready, String(scores[i]), member.slice(14));
        await call('HDEL', ready.replace(/:ready$/, ':cfg'), 'rm');
      }
      nowMs += 1;
      const taken = await frontier.take(10, { perQueue: 1, leaseMs: 60_000 });
      assert.deepEqual(
        taken.map((entry) => entry.queue).sort(),
        ['a.example', 'b.example'],
        'a queue of the old ready set was not found',
      );
      for (const ready of readyKeys) {
        for (const member of (await call('ZRANGE', ready, '0', '-1')) as string[])
          assert.match(member, /^\d{14}/, `${ready} kept a member of the old form`);
        assert.equal(await call('HGET', ready.replace(/:ready$/, ':cfg'), 'rm'), '2');
      }
    } finally {
      await store.close();
    }
  });

  describe('each refusal of an add, called directly', () => {
    // One classic filter of 1024 bits, k = 2, a slice of 3 URLs; the epoch may grow to 2 slices, none planned yet.
    const geometry = JSON.stringify({ filters: [[0, 2, 0]], bytes: [128], caps: [3], planned: [], max: 2 });
    const positions = (...bits: number[]): Buffer => {
      const out = Buffer.alloc(bits.length * 4);
      bits.forEach((bit, i) => out.writeUInt32LE(bit, i * 4));
      return out;
    };
    const keys = (tag: string): string[] => [
      `{${tag}}:state`,
      `{${tag}}:slices`,
      `{${tag}}:batch:1`,
      `{${tag}}:batch:1`,
      `{${tag}}:in`,
      `{${tag}}:q`,
      `{${tag}}:f0`,
    ];
    const add = (
      tag: string,
      n: number,
      blob: Buffer,
      slices = '1',
      extra: (string | Buffer)[] = [],
    ): Promise<unknown> =>
      call('FCALL', 'ss_add', '7', ...keys(tag), slices, String(n), geometry, blob, '60', '', ...extra, REDIS_TIME);
    /** Queue items (encodeQueueItems): batch number, index, then URL, queue key and data, each length-prefixed. */
    const item = (url: string, queue: string, index = 0): Buffer => {
      const string = (value: string): Buffer =>
        Buffer.concat([Buffer.from(Uint32Array.of(Buffer.byteLength(value)).buffer), Buffer.from(value)]);
      return Buffer.concat([Buffer.from(Uint32Array.of(0, index).buffer), string(url), string(queue), string('')]);
    };
    const init = (tag: string, open = '1'): Promise<unknown> =>
      call('FCALL', 'ss_init', '3', `{${tag}}:state`, `{${tag}}:slices`, `{${tag}}:f0`, '{}', open, '128');

    before(async () => {
      await call('FUNCTION', 'LOAD', 'REPLACE', assembleLibrary().text);
    });

    it('missing: the partition does not exist', async () => {
      assert.deepEqual(await add('missing', 1, positions(1, 2)), ['missing']);
    });

    it('sealed: the partition was sealed', async () => {
      await init('sealed', '0');
      assert.deepEqual(await add('sealed', 1, positions(1, 2)), ['sealed']);
    });

    it('stale: the caller assumed another number of slices', async () => {
      await init('stale');
      assert.deepEqual(await add('stale', 1, positions(1, 2), '2'), ['stale', 1]);
    });

    it('short: more URLs than the slice and the plan can take', async () => {
      await init('short');
      assert.deepEqual(await add('short', 4, positions(1, 2, 3, 4, 5, 6, 7, 8)), ['short', 0]);
    });

    it('malformed: queue items that are not n items', async () => {
      await init('malformed');
      assert.deepEqual(await add('malformed', 1, positions(1, 2), '1', [Buffer.from([9, 0, 0, 0]), '1']), [
        'malformed',
      ]);
      assert.deepEqual(await add('malformed', 2, positions(1, 2, 3, 4), '1', [item('https://a.com/', 'a.com'), '1']), [
        'malformed',
      ]);
    });

    it('old-frontier: an enqueue beside a frontier stream of key layout 1, nothing written', async () => {
      await init('old');
      await call('XADD', '{old}:q', '*', 'v', '1', 'u', 'https://old.example/', 'e', '1');
      assert.deepEqual(await add('old', 1, positions(1, 2), '1', [item('https://a.com/', 'a.com'), '1']), [
        'old-frontier',
      ]);
      assert.equal(await call('BITCOUNT', '{old}:f0'), 0, 'a refused add set bits');
      assert.equal(await call('EXISTS', '{old}:in'), 0);
      assert.deepEqual(
        await add('old', 1, positions(1, 2)),
        ['ok', '1', 1, 1],
        'an add without enqueue is not refused',
      );
    });

    it('done: the same batch again gets its first answers, and changes nothing', async () => {
      await init('done');
      assert.deepEqual(await add('done', 2, positions(1, 2, 1, 2)), ['ok', '10', 1, 1]);
      assert.deepEqual(await add('done', 2, positions(9, 10, 11, 12)), ['done', '10']);
      assert.equal(await call('BITCOUNT', '{done}:f0'), 2, 'the retried batch set no bit');
    });

    it('a frontier call answered once: the same take again returns what it took; a repeated admit queues nothing twice', async () => {
      await init('q');
      await add('q', 1, positions(1, 2), '1', [item('https://a.com/', 'a.com'), '1']);
      const [id, fields] = ((await call('XRANGE', '{q}:in', '-', '+')) as [string, string[]][])[0]!;
      assert.deepEqual(fields, ['v', '2', 'u', 'https://a.com/', 'k', 'a.com', 'e', '1', 'b', '1', 'n', '0']);
      const state = QUEUE_STATE_KEYS.map((name) => `{q}:${name}`);
      const settings = ['1', '0', '0'];
      const admit = (...entries: string[][]): Promise<unknown> =>
        call('FCALL', 'ss_fq_admit', String(state.length), ...state, ...settings, ...entries.flat(), REDIS_TIME);
      const entry = (inboxId: string, url: string): string[] => [
        '0',
        inboxId,
        url,
        'a.com',
        '1',
        '',
        inboxId.split('-')[0]!,
        '0',
      ];
      assert.equal(await admit(entry(id, 'https://a.com/')), 1);
      assert.equal(await admit(entry(id, 'https://a.com/')), 0, 'an inbox entry was admitted twice');
      assert.equal(await admit(entry('1-0', 'https://a.com/other')), 0, 'an inbox entry before the mark was admitted');
      const take = (answer: string, previous: string, drop: string): Promise<unknown> =>
        call(
          'FCALL',
          'ss_fq_take',
          String(state.length + 2),
          ...state,
          `{q}:a:${answer}`,
          `{q}:a:${previous}`,
          ...settings,
          '60',
          drop,
          '60000',
          'crawler',
          'a.com',
          '10',
          REDIS_TIME,
        );
      const first = (await take('1', '1', '')) as unknown[][];
      assert.equal(first.length, 1);
      assert.deepEqual(first[0]!.slice(1, 5), ['https://a.com/', 'a.com', 1, 1]);
      assert.deepEqual(await take('1', '1', ''), first);
      assert.deepEqual(await take('2', '1', '1'), [], 'a queue with nothing due was handed out');
      assert.equal(await call('EXISTS', '{q}:a:1'), 0, 'the previous answer was dropped');
    });
  });
});
