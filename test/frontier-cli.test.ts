import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

test('CLI: frontier config, per-queue takes, queue settings, listing, revisits, status, delete', async () => {
  const store = join(tempDir(), 'store');
  const cli = (args: readonly string[], input = '') =>
    runCli(['--store', store, '--scope', 's', '--quiet', ...args], input);
  const ok = async (args: readonly string[], input = ''): Promise<string> => {
    const result = await cli(args, input);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  assert.equal(
    await ok(['frontier', 'config', '--delay-ms', '0']),
    'queue key host, delay 0 ms, in flight per queue unlimited\n',
  );
  await ok(['frontier', 'push'], 'http://a.test/1\nhttp://a.test/2\nhttp://a.test/3\nhttp://b.test:8080/1\n');
  const taken = (await ok(['frontier', 'take', '--count', '10', '--per-queue', '2'])).trim().split('\n');
  assert.deepEqual(
    taken.map((line) => line.split('\t')[1]),
    ['http://a.test/1', 'http://a.test/2', 'http://b.test:8080/1'],
  );
  const queues = (await ok(['frontier', 'queues']))
    .trim()
    .split('\n')
    .map((line) => line.split('\t').slice(0, 3).join(' '));
  assert.deepEqual(queues, ['a.test waiting 1 leased 2', 'b.test:8080 waiting 0 leased 1']);
  assert.match(await ok(['frontier', 'set-delay', 'a.test', '600000']), /^a\.test\t.*delay 600000 ms/);
  assert.equal(await ok(['frontier', 'take', '--count', '10']), '', 'a queue was handed out inside its own delay');
  assert.match(await ok(['frontier', 'set-delay', 'a.test', 'default']), /^a\.test\twaiting 1/);
  assert.match(await ok(['frontier', 'block', 'a.test', '1h']), /blocked until/);
  assert.equal(await ok(['frontier', 'take', '--count', '10']), '');
  await ok(['frontier', 'block', 'a.test', '0']);
  assert.match(await ok(['frontier', 'take']), /\thttp:\/\/a\.test\/3\n$/);
  // A page done and due again in a week; a URL scheduled for later; status of each.
  await ok(['frontier', 'done', '--refetch-in', '7d'], `${taken[0]}\n`);
  assert.match(await ok(['frontier', 'status', 'http://a.test/1']), /^scheduled in queue "a\.test" from 20\d\d-/);
  await ok(['frontier', 'schedule', '--in', '2h'], 'http://c.test/x\n');
  assert.match(await ok(['frontier', 'status', 'http://c.test/x']), /^scheduled in queue "c\.test"/);
  assert.equal(await ok(['frontier', 'status', 'http://nowhere.test/']), 'not queued\n');
  assert.match(await ok(['frontier', 'crawl-limit', 'c.test', '5']), /crawl limit 5/);
  assert.equal((await cli(['frontier', 'delete-queue', 'c.test'])).code, 0);
  assert.match(await ok(['--json', 'frontier', 'stats']), /"queues":2/);
  // Bad values: USAGE (exit 2), nothing changed.
  for (const bad of [
    ['frontier', 'set-delay', 'a.test', '-1'],
    ['frontier', 'block', 'a.test', '5'],
    ['frontier', 'take', '--per-queue', '0'],
    ['frontier', 'config', '--queue-key', 'path'],
    ['frontier', 'schedule'],
  ]) {
    const result = await cli(bad, '');
    assert.equal(result.code, 2, `${bad.join(' ')}: exit ${result.code} ${result.stderr}`);
  }
  const refused = await cli(['frontier', 'config', '--queue-key', 'domain']);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /cannot change once URLs were queued/);
  assert.equal(await ok(['frontier', 'queue', 'a.test']).then((line) => line.split('\t')[1]), 'waiting 1');
});

test('CLI: frontier reclaim gives back the leases of a dead owner at once, and only them', async () => {
  const store = join(tempDir(), 'store');
  const cli = (args: readonly string[], input = '') =>
    runCli(['--store', store, '--scope', 's', '--quiet', ...args], input);
  assert.equal((await cli(['frontier', 'config', '--delay-ms', '0'])).code, 0);
  assert.equal((await cli(['frontier', 'push'], 'http://a.test/1\nhttp://b.test/1\nhttp://c.test/1\n')).code, 0);
  assert.equal(
    (await cli(['frontier', 'take', '--count', '2', '--owner', 'worker-1'])).stdout.trim().split('\n').length,
    2,
  );
  assert.equal(
    (await cli(['frontier', 'take', '--count', '1', '--owner', 'worker-2'])).stdout.trim().split('\n').length,
    1,
  );
  assert.equal((await cli(['frontier', 'take', '--count', '5'])).stdout, '', 'everything is leased');
  const reclaimed = await cli(['frontier', 'reclaim', 'worker-1']);
  assert.equal(reclaimed.code, 0, reclaimed.stderr);
  assert.equal(reclaimed.stderr, 'reclaimed 2 leases of worker-1\n');
  assert.equal(
    (await cli(['frontier', 'take', '--count', '5'])).stdout.trim().split('\n').length,
    2,
    "worker-1's URLs are takeable again, worker-2's are not",
  );
  assert.deepEqual(JSON.parse((await cli(['--json', 'frontier', 'reclaim', 'worker-1'])).stderr), {
    owner: 'worker-1',
    reclaimed: 0,
  });
  const bad = await cli(['frontier', 'reclaim', 'no spaces']);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /owner must be 1-128 of/);
});

test('CLI: a queue setting on a queue that holds nothing says so; block names its positional DURATION when refusing', async () => {
  const store = join(tempDir(), 'store');
  const cli = (args: readonly string[], input = '') => runCli(['--store', store, '--scope', 's', ...args], input);
  assert.equal((await cli(['--quiet', 'frontier', 'push'], 'http://a.test/1\n')).code, 0);
  const known = await cli(['frontier', 'block', 'a.test', '1h']);
  assert.equal(known.code, 0, known.stderr);
  assert.equal(known.stderr, '');
  for (const args of [
    ['block', 'nosuchhost.example', '1h'],
    ['set-delay', 'other.example', '5000'],
    ['crawl-limit', 'third.example', '5'],
  ]) {
    const made = await cli(['frontier', ...args]);
    assert.equal(made.code, 0, made.stderr);
    assert.match(
      made.stderr,
      new RegExp(
        `^seenstore: warning: the frontier had no queue "${args[1]!.replace(/\./g, '\\.')}": made it, empty, with this setting`,
      ),
    );
  }
  const bare = await cli(['frontier', 'block', 'a.test', '10']);
  assert.equal(bare.code, 2, bare.stderr);
  assert.match(bare.stderr, /the DURATION of frontier block must be a duration: .*; "10" has no unit/);
  assert.doesNotMatch(bare.stderr, /--block/);
});
