import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from './helpers/data.js';

/**
 * docs/architecture.md is the map of src: it drifted once (files added without a row, rows for
 * Lua files that were replaced, folders not described), so these check it both ways. A folder
 * with a file table (a section whose heading names the folder, `## The LMDB driver
 * (src/store/lmdb/)`) names each of its files in a row of that table; every other folder of src
 * is described by a line of the Layers block (`src/report/  ...`), or is a subfolder of a tabled one. Every file name in the doc
 * names a file that is there.
 */
const DOC = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
const SOURCE = /\.(ts|lua)$/;
/** A file name as the doc writes one: a path or a name with an extension, `*` for any characters. */
const FILE_NAME = /(?<![\w/.*-])(?:\.\.\/)*[\w*][\w./*-]*\.(?:ts|lua|wat|md|mjs|json|proto)(?![\w])/g;
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git']);

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/** The doc's sections: each heading, its folder (a `(src/.../)` in the heading, if any) and its lines. */
function sections(): { heading: string; folder: string | undefined; lines: string[] }[] {
  const out: { heading: string; folder: string | undefined; lines: string[] }[] = [];
  for (const line of DOC.split('\n')) {
    if (/^#{2,3} /.test(line)) out.push({ heading: line, folder: /\((src\/[\w/]+)\/\)/.exec(line)?.[1], lines: [] });
    else out.at(-1)?.lines.push(line);
  }
  return out;
}

const globRegExp = (name: string): RegExp =>
  new RegExp(`(^|/)${name.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);

describe('docs/architecture.md, the map of src', () => {
  const all = [
    ...filesUnder('src'),
    ...filesUnder('test'),
    ...filesUnder('docs'),
    ...filesUnder('scripts'),
    ...filesUnder('bench'),
    'package.json',
    'tsconfig.json',
  ];
  const tabled = sections().filter((s) => s.folder !== undefined && s.lines.some((l) => l.startsWith('|')));

  it('names every source file of a folder that has a file table (its subfolders too) in a row of that table', () => {
    assert.ok(tabled.length >= 3, `file tables found: ${tabled.map((s) => s.heading).join(', ')}`);
    const missing: string[] = [];
    for (const section of tabled) {
      const rows = section.lines.filter((l) => l.startsWith('|')).join('\n');
      const names = [...rows.matchAll(FILE_NAME)].map((m) => globRegExp(m[0].replace(/^(\.\.\/)+/, '')));
      for (const file of all.filter((f) => SOURCE.test(f) && f.startsWith(`${section.folder}/`))) {
        const inFolder = relative(section.folder!, file);
        if (!names.some((name) => name.test(inFolder))) missing.push(`${file} (table of ${section.heading})`);
      }
    }
    assert.deepEqual(missing, [], `files the tables do not name:\n${missing.join('\n')}`);
  });

  it('describes every other folder of src in the Layers block', () => {
    const layers = sections()
      .find((s) => s.heading === '## Layers')!
      .lines.join('\n');
    const folders = new Set(
      all.filter((f) => f.startsWith('src/') && SOURCE.test(f)).map((f) => f.slice(0, f.lastIndexOf('/'))),
    );
    const undescribed = [...folders].filter(
      (folder) =>
        !tabled.some((s) => folder === s.folder || folder.startsWith(`${s.folder}/`)) &&
        !new RegExp(`(^|[\\s,])${folder}/`, 'm').test(layers),
    );
    assert.deepEqual(undescribed, [], `folders of src the doc does not describe:\n${undescribed.join('\n')}`);
  });

  it('names no file that is not there', () => {
    const gone = [...new Set([...DOC.matchAll(FILE_NAME)].map((m) => m[0]))].filter((name) => {
      if (name.includes('/') && !name.includes('*') && existsSync(join(ROOT, name))) return false;
      const pattern = globRegExp(name.replace(/^(\.\.\/)+/, ''));
      return !all.some((file) => pattern.test(file));
    });
    assert.deepEqual(gone, [], `file names in the doc with no file:\n${gone.join('\n')}`);
  });
});
