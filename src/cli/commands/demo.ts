import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { SeenStoreError } from '../../errors.js';
import { storeDir, type GlobalOptions } from '../context.js';
import { formatCount } from '../output.js';

const MAIN = fileURLToPath(new URL('../bin.cjs', import.meta.url));

/** A small deterministic PRNG so the demo crawl is the same on every machine. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Links a crawler discovers on a shop site: every page links to others, so most links repeat. */
function discoveredLinks(pages: number, linksPerPage: number, seed: number): { lines: string[]; distinct: number } {
  const random = mulberry32(seed);
  const page = (i: number): string => {
    const category = ['books', 'music', 'garden', 'tools', 'toys', 'kitchen'][i % 6];
    return i % 10 === 0
      ? `https://shop.example.com/${category}/?page=${i / 10}`
      : `https://shop.example.com/${category}/item-${i}.html`;
  };
  const lines: string[] = [];
  const seen = new Set<number>();
  for (let p = 0; p < pages; p++) {
    for (let l = 0; l < linksPerPage; l++) {
      const target = l === 0 ? p : Math.floor(random() * pages);
      seen.add(target);
      lines.push(page(target));
    }
  }
  return { lines, distinct: seen.size };
}

function runFilterNew(dir: string, scope: string, input: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [MAIN, 'filter-new', '--store', dir, '--scope', scope, '--capacity', '100000'],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    let printed = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      for (const byte of chunk) if (byte === 0x0a) printed++;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(printed);
      else reject(new SeenStoreError('INTERNAL', `filter-new exited with code ${code}`));
    });
    child.stdin.end(input);
  });
}

/** Runs two crawls of a synthetic site through `filter-new` on the default store, and reports. */
export async function demo(command: Command): Promise<void> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const dir = storeDir(options);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  const scope = `demo-${stamp}`;
  const first = discoveredLinks(20_000, 5, 1);
  const second = discoveredLinks(25_000, 5, 2);
  const out = (text: string): boolean => process.stdout.write(`${text}\n`);
  out(`seenstore demo: store ${dir}, scope ${scope}`);
  const printed1 = await runFilterNew(dir, scope, `${first.lines.join('\n')}\n`);
  out(
    `crawl 1: ${formatCount(first.lines.length)} links discovered, ${formatCount(first.distinct)} distinct pages; filter-new printed ${formatCount(printed1)} to fetch`,
  );
  const printed2 = await runFilterNew(dir, scope, `${second.lines.join('\n')}\n`);
  const grown = second.distinct - first.distinct;
  out(
    `crawl 2: ${formatCount(second.lines.length)} links discovered, about ${formatCount(grown)} pages are new; filter-new printed ${formatCount(printed2)} to fetch`,
  );
  out(`pages wrongly skipped (false positives): ${formatCount(first.distinct - printed1)} in crawl 1`);
  out(`inspect it: node ${MAIN} stats --store ${dir} --scope ${scope}`);
}
