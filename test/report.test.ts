import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { SeenStore } from '../src/index.js';
import { prunedRanges } from '../src/report/collect.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/tmp.js';

const CHROMIUM = '/usr/bin/chromium';
/** Flags for a headless Chromium that reaches nothing outside this machine. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Where the screenshot goes; kept after the run so that CI can print its path. */
const SCREENSHOT_DIR = join(tmpdir(), 'seenstore-report-test');

/** The few DOM members the test reads inside the page (the project compiles without the DOM library). */
interface PageElement {
  readonly textContent: string | null;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
  getBoundingClientRect(): { readonly height: number };
}

function urls(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `https://${prefix}.example/page/${i}`);
}

/**
 * A store with a history: scope `shop` over five crawls, the second and fourth outgrowing their
 * capacity (two slices), epochs 1 and 2 pruned; scope `news` over two crawls, the first with its own capacity.
 */
async function storeWithHistory(dir: string): Promise<void> {
  const store = await SeenStore.open(dir);
  const shop = store.scope('shop', { capacityUrls: 2_000, fprTarget: 0.01 });
  await shop.add(urls('shop', 1_500));
  await shop.rotate();
  await shop.add(urls('shop', 5_000));
  await shop.rotate({ capacityUrls: 6_000 });
  await shop.add(urls('shop', 5_500));
  await shop.rotate();
  await shop.add([...urls('shop', 4_000), ...urls('shop-new', 5_000)]);
  await shop.rotate();
  await shop.add(urls('shop', 800));
  await shop.prune({ keepLast: 3 });
  const news = store.scope('news', { capacityUrls: 500, fprTarget: 0.001, strategy: 'blocked' });
  await news.add(urls('news', 400));
  await news.rotate();
  await news.add(urls('news', 300));
  await store.close();
}

/** A scope of `epochs` crawls, each a little larger than the one before except the last, which is smaller. */
async function storeOfEpochs(dir: string, epochs: number): Promise<void> {
  const store = await SeenStore.open(dir);
  const scope = store.scope('shop', { capacityUrls: 2_000, fprTarget: 0.01 });
  for (let e = 0; e < epochs; e++) {
    await scope.add(urls('shop', e === epochs - 1 ? 500 : 1_000 + 300 * e));
    if (e < epochs - 1) await scope.rotate();
  }
  await store.close();
}

describe('seenstore report', () => {
  test('charts of 2 and of 12 epochs: lines never strike a value label, few epochs fill the chart, no "≥ 0"', async () => {
    for (const epochs of [2, 12]) {
      const dir = tempDir();
      await storeOfEpochs(dir, epochs);
      const out = await runCli(['report', '--store', dir]);
      assert.equal(out.code, 0, out.stderr);
      const svgs = [...out.stdout.matchAll(/<svg class="chart"[^>]* width="(\d+)"[^>]*>([\s\S]*?)<\/svg>/g)];
      assert.equal(svgs.length, 3, `${epochs} epochs: three charts`);
      for (const [, width, body] of svgs) {
        for (const [column] of body!.matchAll(/<g class="epoch"[\s\S]*?<\/g>/g)) {
          const marker = column.indexOf('class="marker"');
          const firstValue = column.indexOf('class="value"');
          const lastBar = column.lastIndexOf('class="bar"');
          assert.ok(firstValue > lastBar, `${epochs} epochs: every label is painted after every bar of its column`);
          if (marker >= 0)
            assert.ok(
              marker < column.indexOf('class="bar"'),
              `${epochs} epochs: the reference line is painted under the bars and labels`,
            );
        }
        const centres = [...body!.matchAll(/<text x="([\d.]+)"[^>]*class="xlabel"/g)].map((m) => Number(m[1]));
        assert.equal(centres.length, epochs);
        const widthPx = Number(width);
        if (epochs === 2)
          assert.ok(
            centres.at(-1)! > 0.6 * widthPx,
            `2 epochs: the last column is centred at ${centres.at(-1)} of ${widthPx} px: the plot is mostly empty`,
          );
      }
      assert.doesNotMatch(out.stdout, /≥ 0</, 'a lower bound of 0 says nothing');
      assert.match(out.stdout, /<td title="[^"]*">no bound<\/td>/, 'the last, smaller epoch');
    }
  });

  test('prunedRanges: the gaps in epoch numbering', () => {
    assert.deepEqual(prunedRanges([3, 4, 5]), [{ from: 1, to: 2 }]);
    assert.deepEqual(prunedRanges([1, 2]), []);
    assert.deepEqual(prunedRanges([2, 5, 6]), [
      { from: 1, to: 1 },
      { from: 3, to: 4 },
    ]);
    assert.deepEqual(prunedRanges([]), []);
  });

  test('one self-contained page; headless Chromium opens it from disk with no errors and one chart column per epoch', {
    skip: existsSync(CHROMIUM) ? false : `no ${CHROMIUM} (apt-get install chromium; CI installs it)`,
    timeout: 180_000,
  }, async (t) => {
    const dir = tempDir();
    await storeWithHistory(dir);
    const out = join(tempDir(), 'report.html');
    const written = await runCli(['report', '--store', dir, '--out', out]);
    assert.equal(written.code, 0, written.stderr);
    assert.match(written.stdout, /^wrote .*report\.html \(2 scopes, 5 epochs, [\d,]+ bytes\)\n$/);
    const html = readFileSync(out, 'utf8');
    assert.doesNotMatch(
      html,
      /<script|<link|@import|url\((?!#)|src=|href="(?!#)/,
      'nothing to fetch: no scripts, links, or external URLs',
    );

    const onlyNews = await runCli(['report', '--store', dir, '--scope', 'news']);
    assert.equal(onlyNews.code, 0, onlyNews.stderr);
    assert.match(onlyNews.stdout, /^<!doctype html>/);
    assert.ok(onlyNews.stdout.includes('data-scope="news"') && !onlyNews.stdout.includes('data-scope="shop"'));
    assert.equal((await runCli(['report', '--store', dir, '--scope', 'nope'])).code, 11);

    const profile = tempDir('seenstore-chromium-');
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1200, height: 900 },
    });
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning')
          problems.push(`console ${message.type()}: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('request', (request) => {
        if (!request.url().startsWith('file://')) problems.push(`fetched ${request.url()}`);
      });
      await page.goto(pathToFileURL(out).href, { waitUntil: 'load' });

      const shape = await page.evaluate(() =>
        [...(globalThis as unknown as { document: PageElement }).document.querySelectorAll('section.scope')].map(
          (section) => ({
            scope: section.getAttribute('data-scope'),
            charts: [...section.querySelectorAll('svg.chart')].map((svg) => ({
              chart: svg.getAttribute('data-chart'),
              epochs: [...svg.querySelectorAll('g.epoch')].map((g) => Number(g.getAttribute('data-epoch'))),
              pruned: [...svg.querySelectorAll('g.pruned')].map((g) => g.textContent),
              bars: svg.querySelectorAll('rect.bar').length,
              drawnHeight: svg.getBoundingClientRect().height,
            })),
            rows: section.querySelectorAll('table.epochs tbody tr').length,
            text: section.textContent ?? '',
          }),
        ),
      );
      assert.deepEqual(problems, [], 'no console errors, no page errors, nothing fetched');
      assert.deepEqual(
        shape.map((s) => s.scope),
        ['news', 'shop'],
      );
      const [news, shop] = shape;
      for (const chart of shop!.charts) {
        assert.deepEqual(chart.epochs, [3, 4, 5], `${chart.chart}: one column per kept epoch`);
        assert.equal(chart.pruned.length, 1, `${chart.chart}: the pruned gap`);
        assert.match(chart.pruned[0]!, /epochs 1–2 pruned/);
        assert.ok(chart.drawnHeight > 200, `${chart.chart} is drawn`);
      }
      assert.deepEqual(
        shop!.charts.map((c) => c.chart),
        ['s1-urls', 's1-fpr', 's1-fill'],
      );
      assert.deepEqual(
        shop!.charts.map((c) => c.bars),
        [9, 3, 3],
        'three bars per epoch for URLs, one for FPR and fill',
      );
      for (const chart of news!.charts) assert.deepEqual(chart.epochs, [1, 2]);
      assert.equal(shop!.rows, 3);
      assert.match(shop!.text, /pruned: 1–2/);
      assert.match(shop!.text, /history-v1/, 'the sizing decision');
      assert.match(shop!.text, /explicit/, 'epoch 3 was sized by the caller');
      assert.match(news!.text, /blocked/);

      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const png = join(SCREENSHOT_DIR, 'report.png');
      await page.screenshot({ path: png, fullPage: true });
      assert.ok(statSync(png).size > 10_000, 'a screenshot with something on it');
      t.diagnostic(`report screenshot: ${png}`);
      console.log(`report screenshot: ${png}`);
    } finally {
      await context.close();
    }
  });
});
