/**
 * Crawl-like URLs made from a seed, for a bare clone without ../shared/data: many hosts, deep and
 * similar paths, query strings, a few long lines and non-ASCII characters, as a crawl's frontier
 * has them. The same seed always gives the same list; different seeds give disjoint lists.
 */
import { mulberry32 } from '../../src/cli/commands/demo.js';

const TLDS = ['com', 'org', 'net', 'de', 'co.uk', 'io', 'fr', 'jp', 'com.br', 'edu'];
const WORDS = [
  'news',
  'blog',
  'shop',
  'product',
  'category',
  'article',
  'archive',
  'tag',
  'user',
  'search',
  'docs',
  'api',
  'static',
  'assets',
  'img',
  'video',
  'forum',
  'thread',
  'page',
  'help',
  'about',
  'contact',
  'wiki',
  'release',
  'download',
  'sports',
  'weather',
  'travel',
  'münchen',
  'café',
];
const PARAMS = ['id', 'page', 'q', 'ref', 'utm_source', 'sort', 'lang', 'session', 'offset', 'v'];

/** `count` distinct crawl-like URLs; `seed` picks the list (and its hosts). */
export function generatedUrls(count: number, seed: number): string[] {
  const random = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const hosts = Array.from({ length: 300 }, (_, i) => `${random() < 0.5 ? 'www.' : ''}site${seed}-${i}.${pick(TLDS)}`);
  const urls = new Set<string>();
  while (urls.size < count) {
    // A skewed host choice: a few hosts hold most URLs, as in a real crawl.
    const host = hosts[Math.floor(hosts.length * random() ** 3)]!;
    const depth = 1 + Math.floor(random() * 6);
    const segments = Array.from({ length: depth }, () =>
      random() < 0.3 ? String(Math.floor(random() * 100_000)) : pick(WORDS),
    );
    let url = `${random() < 0.8 ? 'https' : 'http'}://${host}/${segments.join('/')}${random() < 0.3 ? '.html' : ''}`;
    if (random() < 0.4) {
      const pairs = 1 + Math.floor(random() * 3);
      url += `?${Array.from({ length: pairs }, () => `${pick(PARAMS)}=${Math.floor(random() * 10_000)}`).join('&')}`;
    }
    if (random() < 0.01) url += `${url.includes('?') ? '&' : '?'}token=${'x'.repeat(200 + Math.floor(random() * 800))}`;
    urls.add(url);
  }
  return [...urls];
}
