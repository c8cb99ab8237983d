// import export and verify show progress on a terminal
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { makeDir, removeDir, trackerSource, sourceSeq, scalar } from './support/cli.ts';
import { onTerminal, plain } from './support/pty.ts';

/*
 * On a terminal, the long commands other than sync show a progress bar on
 * stderr too: export (events of the range), import (bytes of the file) and
 * verify (projections compared, and the rows of each), each with its rate.
 */

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['comments', 'labels']);
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for r in range(20):
    con.execute("UPDATE comments SET body = body || ' more' WHERE id <= 200")
con.commit()`,
    [src],
  );
});
afterAll(() => removeDir(dir));

/** The bar lines a command drew for `label`, with their share in percent. */
function bars(output: string, label: string): { line: string; share: number }[] {
  return plain(output)
    .split('\n')
    .filter((l) => l.startsWith(`${label} [`))
    .map((line) => ({ line, share: Number(/\] (\d+)% /.exec(line)?.[1]) }));
}

describe.skipIf(process.platform === 'win32')('on a terminal', () => {
  test('export, then import of its file, then verify each show a bar with a share and a rate, and do their work', async () => {
    const out = at('changes.jsonl');
    const exp = onTerminal(['export', src, '--out', out, '--batch', '5']);
    expect(await exp.exited, exp.output()).toBe(0);
    const e = bars(exp.output(), 'export');
    expect(e.length, exp.output()).toBeGreaterThan(0);
    expect(
      e.some((b) => b.share < 100 && /\/\d+ events \| \d+ events\/s/.test(b.line)),
      exp.output(),
    ).toBe(true);

    const tgt = at('cache.db');
    const imp = onTerminal(['import', tgt, out]);
    expect(await imp.exited, imp.output()).toBe(0);
    const i = bars(imp.output(), 'import');
    expect(i.length, imp.output()).toBeGreaterThan(0);
    expect(
      i.some((b) => /bytes \| \d+ bytes\/s \| \d+ batches applied, 0 skipped/.test(b.line)),
      imp.output(),
    ).toBe(true);
    expect(Number(scalar(tgt, "SELECT seq FROM main._sluice_projections WHERE name = 'comments'"))).toBe(sourceSeq(src));

    const ver = onTerminal(['verify', src, tgt]);
    expect(await ver.exited, ver.output()).toBe(0);
    const v = bars(ver.output(), 'verify');
    expect(v.length, ver.output()).toBeGreaterThan(0);
    // Projections compared, and (verify-progress.ts) the rows of each as they are compared.
    expect(
      v.some((b) => /\d\/2 projections \| \d+ projections\/s \| \w+ compared/.test(b.line)),
      ver.output(),
    ).toBe(true);
    expect(
      v.some((b) => /\d+\/\d+ rows \| \d+ rows\/s \| \w+: comparing rows \(\d of 2 projections\)/.test(b.line)),
      ver.output(),
    ).toBe(true);
    expect(plain(ver.output())).toContain('comments: ok');
  });
});
