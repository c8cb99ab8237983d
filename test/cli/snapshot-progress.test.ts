// a snapshot shows its rows of the total while it runs on a terminal and in the json log
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, runSqliteCli } from '../support/fixtures.ts';
import { enable, openDatabase } from '../../src/index.ts';
import { makeDir, removeDir, runCliAsync } from './support/cli.ts';
import { onTerminal, plain } from './support/pty.ts';

/*
 * A first sync of a big table shows its progress while the snapshot runs:
 * the rows read of the table's rows, and rows/s (a 1M-row sync once showed
 * nothing for its whole run, then "100% snapshot seq 0/0 | 1000000 events
 * | 0 ev/s"). With --log json each report is a line; on a terminal, the bar.
 * Nothing here is timed: the reports come per part of the snapshot (20,000
 * rows), and the bar's last line is read, not how often it was drawn.
 */

const BIG = 400_000;
const SMALL = 45_000;

let dir: string;
let src: string;
const defs: string[] = [];

beforeAll(() => {
  dir = makeDir();
  src = path.join(dir, 'app.db');
  runSqliteCli(
    src,
    `CREATE TABLE big (id INTEGER PRIMARY KEY, name TEXT, n INTEGER);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${BIG}) INSERT INTO big SELECT i, 'row ' || i, i % 97 FROM s;
CREATE TABLE small (code TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${SMALL}) INSERT INTO small SELECT 'k' || i, i FROM s;`,
  );
  const db = openDatabase(src);
  try {
    enable(db, ['big', 'small']);
  } finally {
    db.close();
  }
  // A mirror built in SQL, a map of a WITHOUT ROWID table with a text key, and a custom handler that reads the rows one by one.
  fs.writeFileSync(
    path.join(dir, 'seen.mjs'),
    `export default { version: '1', async init(rows) { for (const r of rows) void r; }, apply() {} };\n`,
  );
  for (const d of [
    { name: 'big', source: 'big', kind: 'mirror' },
    { name: 'small_map', source: 'small', kind: 'map', target: 'small_v', columns: { code: 'code', v: 'v' } },
    { name: 'seen', source: 'small', kind: 'custom', module: './seen.mjs' },
  ]) {
    const file = path.join(dir, `${d.name}.json`);
    fs.writeFileSync(file, JSON.stringify(d));
    defs.push('--projection', file);
  }
});
afterAll(() => removeDir(dir));

interface Report {
  readonly projection: string;
  readonly phase: string;
  readonly rows?: number;
  readonly rowsTotal?: number;
}

test("with --log json, a first sync reports each projection's snapshot rows of the total as it reads them, and its last report is the whole table", async () => {
  const tgt = path.join(dir, 'json.db');
  const r = await runCliAsync(['sync', src, tgt, ...defs, '--log', 'json']);
  expect(r.status, r.stderr).toBe(0);
  const reports = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Report);
  for (const [name, total] of [
    ['big', BIG],
    ['small_map', SMALL],
    ['seen', SMALL],
  ] as const) {
    const mine = reports.filter((x) => x.projection === name);
    const during = mine.filter((x) => x.phase === 'snapshot' && x.rows !== undefined && x.rows > 0 && x.rows < total);
    expect(during.length, `${name}: ${JSON.stringify(mine.slice(0, 5))}`).toBeGreaterThanOrEqual(name === 'big' ? 10 : 2);
    for (const x of during) expect(x.rowsTotal, name).toBe(total);
    const rows = during.map((x) => x.rows as number);
    expect(rows, name).toEqual([...rows].sort((a, b) => a - b));
    // The last report says what the snapshot did: every row of the table.
    expect(mine.at(-1), name).toMatchObject({ rows: total, rowsTotal: total });
  }
  // Read in parts, and nothing lost or doubled.
  const v = await runCliAsync(['verify', src, tgt, '--json']);
  expect(v.status, v.stdout + v.stderr).toBe(0);

  // A reinit builds beside the live mirror, a part per transaction: the rows copied, of the table's rows.
  const again = await runCliAsync(['sync', src, tgt, ...defs, '--reinit', 'big', '--log', 'json']);
  expect(again.status, again.stderr).toBe(0);
  const copied = again.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Report)
    .filter((x) => x.projection === 'big' && x.phase === 'snapshot');
  expect(copied.filter((x) => x.rows !== undefined && x.rows > 0 && x.rows < BIG && x.rowsTotal === BIG).length).toBeGreaterThanOrEqual(10);
  expect(copied.at(-1)).toMatchObject({ rows: BIG, rowsTotal: BIG });
});

test.skipIf(process.platform === 'win32')(
  "on a terminal, the bar's last line for a snapshot is its rows of the total and rows/s, not a seq range of 0 events",
  async () => {
    const tgt = path.join(dir, 'terminal.db');
    const run = onTerminal(['sync', src, tgt, '--projection', path.join(dir, 'big.json')]);
    expect(await run.exited, run.output()).toBe(0);
    const bars = plain(run.output())
      .split('\n')
      .filter((l) => l.startsWith('big ['));
    expect(bars.length, run.output()).toBeGreaterThan(0);
    const last = (bars.at(-1) as string).trimEnd();
    expect(last).toMatch(new RegExp(`\\] 100% snapshot ${BIG}/${BIG} rows \\| [1-9]\\d* rows/s \\| lag 0$`));
    expect(last).not.toMatch(/seq 0\/0|0 ev\/s/);
    for (const l of bars) expect(l).toMatch(new RegExp(`snapshot \\d+/${BIG} rows`));
  },
);
