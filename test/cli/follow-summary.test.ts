// sync follow summaries count source events once and each projection apart
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, runPython } from '../support/fixtures.ts';
import { makeDir, removeDir, scalar, sourceSeq, waitFor } from './support/cli.ts';
import { onTerminal, plain } from './support/pty.ts';
import { enable, openDatabase } from '../../src/index.ts';

/*
 * The follow summary counts what the source committed: each journal event
 * once, however many projections read it and however many row changes it
 * makes in each (a key change is a delete and an insert in a mirror), and
 * then each projection's share apart. It once said "553 events applied"
 * for 286 source events.
 */

let dir: string;
let src: string;
let tgt: string;
const defs: string[] = [];

beforeAll(() => {
  dir = makeDir();
  src = path.join(dir, 'app.db');
  tgt = path.join(dir, 'cache.db');
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
con.execute("CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT)")
con.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(1, 51)])
con.executemany("INSERT INTO u VALUES (?, ?)", [(i, f"w{i}") for i in range(1, 11)])
con.commit()`,
    [src],
  );
  const db = openDatabase(src);
  try {
    enable(db, ['t', 'u']);
  } finally {
    db.close();
  }
  // Two projections of t, one of u.
  for (const d of [
    { name: 't_mirror', source: 't', kind: 'mirror' },
    { name: 't_map', source: 't', kind: 'map', target: 't_values', columns: { id: 'id', v: 'v' } },
    { name: 'u_mirror', source: 'u', kind: 'mirror' },
  ]) {
    const file = path.join(dir, `${d.name}.json`);
    fs.writeFileSync(file, JSON.stringify(d));
    defs.push('--projection', file);
  }
});
afterAll(() => removeDir(dir));

test.skipIf(process.platform === 'win32')(
  'summaries and the final line count each source event once, with each projection apart, not the row changes they made',
  async () => {
    const run = onTerminal(['sync', src, tgt, ...defs, '--follow', '--summary-interval', '200']);
    const text = () => plain(run.output());
    await waitFor('a first summary', () => /following: \d+ source events in the last 0\.2s/.test(text()), 20_000);

    // 20 key changes of t (each a delete and an insert in both of its projections) and 5 updates of u.
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE t SET id = id + 1000 WHERE id <= 20")
con.execute("UPDATE u SET w = w || '!' WHERE id <= 5")
con.commit()`,
      [src],
    );
    await waitFor('a summary of the 25 source events', () => / 25 since start /.test(text()), 20_000);
    expect(text()).toMatch(
      /following: \d+ source events in the last 0\.2s, 25 since start \(t_mirror 20, t_map 20, u_mirror 5\); lag 0 events/,
    );
    // Never the 2 x 2 x 20 + 5 = 85 row changes.
    expect(text()).not.toMatch(/\b85\b/);

    run.interrupt();
    expect(await run.exited, text()).toBe(0);
    const seq = sourceSeq(src);
    expect(text()).toMatch(
      new RegExp(
        `stopped by SIGINT after \\d+\\.\\ds: 25 source events applied \\(t_mirror 20, t_map 20, u_mirror 5\\); lag 0 events; committed t_mirror at seq ${seq}, t_map at seq ${seq}, u_mirror at seq ${seq}, where the next sync resumes`,
      ),
    );
    // And the rows moved: the summary counted what was applied.
    expect(Number(scalar(tgt, 'SELECT count(*) FROM t WHERE id > 1000'))).toBe(20);
    expect(Number(scalar(tgt, 'SELECT count(*) FROM t_values WHERE id > 1000'))).toBe(20);
    expect(Number(scalar(tgt, "SELECT count(*) FROM u WHERE w LIKE '%!'"))).toBe(5);
  },
);
