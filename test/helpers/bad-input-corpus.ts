/** The input corpus of issue 7: each a buffer, fed on stdin (test/bad-input.test.ts, and every combination in soak/corpus.ts). */
export const CORPUS: Record<string, Buffer> = {
  empty: Buffer.alloc(0),
  'only newlines': Buffer.from('\n\n\r\n\n'),
  'NUL bytes': Buffer.from('https://a.example/\u0000x\n\u0000\u0000\nhttps://b.example/\n'),
  'invalid UTF-8': Buffer.concat([
    Buffer.from('https://a.example/'),
    Buffer.from([0xff, 0xfe, 0xc3]),
    Buffer.from('\nhttps://c.example/\n'),
  ]),
  'UTF-8 BOM': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('https://bom.example/\n')]),
  CRLF: Buffer.from('https://crlf.example/a\r\nhttps://crlf.example/b\r\n'),
  '10 MB line': Buffer.concat([
    Buffer.from('https://big.example/'),
    Buffer.alloc(10 * 2 ** 20, 0x61),
    Buffer.from('\nhttps://after.example/\n'),
  ]),
  'binary garbage': Buffer.from(Array.from({ length: 65_536 }, (_, i) => (i * 7919 + 13) % 256)),
  'spaces, IDN, percent-encoding': Buffer.from(
    'https://a.example/with space\nhttps://bücher.example/straße\nhttps://xn--bcher-kva.example/%E2%82%AC?q=%zz\n  https://lead.example/  \n',
  ),
};

/**
 * Every command that reads URLs from stdin, on a store with a default scope of one epoch and a
 * counting scope `counts`; `summaryFile` is a set-difference summary to reconcile against, and
 * `summaryOut` where `setdiff summarize` may write one.
 */
export function urlReadingCommands(exportFile: string, summaryFile: string, summaryOut: string): string[][] {
  return [
    ['filter-new'],
    ['add'],
    ['has'],
    ['has', '--epochs', 'all', '--mode', 'all'],
    ['classify'],
    ['diff', '--from', '1', '--to', '1'],
    ['diff', '--against', exportFile],
    ['count', '--scope', 'counts'],
    ['delete', '--scope', 'counts'],
    ['setdiff', 'summarize', '--out', summaryOut],
    ['setdiff', '--against', summaryFile],
  ];
}
