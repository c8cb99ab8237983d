// verify of a lagging target shows its rewind on a terminal and says when sync first costs less
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { verify, type VerifyProgress } from '../../src/apply/check/index.ts';
import { enable } from '../../src/capture/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, onDatabase } from './support/cli.ts';
import { onTerminal, plain } from './support/pty.ts';

/*
 * A 1M-row target 900k events behind ran verify for 18 minutes with no
 * output at all (issue 19). On a terminal, verify's bar now counts what the
 * projection being compared is at: the events after its cursor read to
 * rewind the keys they changed, then the rows compared, each of its total,
 * from inside the statements that do the work (a statement reports as it
 * goes, not only when it ends). When the events to rewind outnumber the
 * table's rows, rewinding costs more than comparing the table again:
 * verify says so on stderr, and that `sluice sync` first is cheaper.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);

/** A source with `rows` rows in t and u, captured, a target synced from it, then `events` updates of t's rows by another program. */
async function lagging(name: string, rows: number, events: number): Promise<{ src: string; tgt: string }> {
  const src = at(`${name}.db`);
  const tgt = at(`${name}-cache.db`);
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript("""
CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER);
CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT);
""")
con.executemany("INSERT INTO t VALUES (?, ?, 0)", [(i, 'row %d' % i) for i in range(1, ${rows} + 1)])
con.executemany("INSERT INTO u VALUES (?, 'x')", [(i,) for i in range(1, ${rows} + 1)])
con.commit()`,
    [src],
  );
  onDatabase(src, (db) => enable(db, ['t', 'u']));
  await sync(src, tgt);
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(${events}):
    con.execute("UPDATE t SET n = n + 1 WHERE id = ?", (i % ${rows} + 1,))
con.commit()`,
    [src],
  );
  return { src, tgt };
}

let small: { src: string; tgt: string };
let long: { src: string; tgt: string };

beforeAll(async () => {
  dir = makeDir();
  // 1500 events behind 3000 rows: rewinding costs less than the comparison. 30000 behind 3000: more.
  small = await lagging('small', 3000, 1500);
  long = await lagging('long', 3000, 30000);
});
afterAll(() => removeDir(dir));

describe.skipIf(process.platform === 'win32')('verify of a lagging target', () => {
  test('reports its rewind from inside the statement that reads the events: events of the total, then rows', async () => {
    const seen: VerifyProgress[] = [];
    const notes: string[] = [];
    const r = await verify(long.src, long.tgt, { onProgress: (p) => seen.push(p), onNote: (n) => notes.push(n) });
    expect(r.projections.map((p) => [p.name, p.ok, p.inFlight])).toEqual([
      ['t', true, 3000],
      ['u', true, 0],
    ]);
    const rewind = seen.filter((p) => p.projection === 't' && p.step?.unit === 'events');
    expect(rewind[0]?.step).toEqual({ unit: 'events', done: 0, total: 30000 });
    // Between the start and the end of the one statement that reads the journal: it reported as it read.
    expect(rewind.some((p) => (p.step?.done ?? 0) > 0 && (p.step?.done ?? 0) < 30000)).toBe(true);
    expect(rewind.at(-1)?.step).toEqual({ unit: 'events', done: 30000, total: 30000 });
    const rows = seen.filter((p) => p.projection === 't' && p.step?.unit === 'rows');
    expect(rows.at(-1)?.step).toEqual({ unit: 'rows', done: 3000, total: 3000 });
    // Then the projection is counted as compared.
    expect(seen.at(-1)).toMatchObject({ projection: 'u', done: 2, count: 2 });
    // 30000 events to rewind on a table of 3000 rows: said once, with the command that makes verify cheaper.
    expect(notes).toEqual([expect.stringContaining(`sluice sync ${long.src} ${long.tgt}`)]);
  });

  test('on a terminal shows the events of the rewind on the bar, and no note when the rewind is cheap', async () => {
    const ver = onTerminal(['verify', small.src, small.tgt]);
    expect(await ver.exited, ver.output()).toBe(0);
    const out = plain(ver.output());
    expect(out).toMatch(/^verify \[[^\]]*\] \d+% \d+\/1500 events \| \d+ events\/s \| t: rewinding/m);
    expect(out).toContain('t: ok (3000 keys at seq');
    expect(out).not.toContain('sluice sync');
  });

  test('says on stderr that sync first costs less when the events to rewind outnumber the rows, and still verifies', async () => {
    const r = await runCliAsync(['verify', long.src, long.tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.verifyOutput).ok).toBe(true);
    expect(r.stderr).toMatch(/^sluice: note: t is 30000 events behind .*; `sluice sync \S+ \S+` first/m);
    expect(r.stderr).toContain(`sluice sync ${long.src} ${long.tgt}`);
  });
});
