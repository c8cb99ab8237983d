// a follower applies a commit made at any moment of its first pass or right after it with or without a file watch
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { PythonWriter } from '../support/python-writer.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { makeDir, mapLimit, removeDir, startCli, type Spawned } from './support/cli.ts';

/*
 * A follower takes the source's PRAGMA data_version as the point its next
 * wait starts from. Taken after a pass, a commit that landed between that
 * pass's read of the journal and the start of the wait counted as seen: the
 * follower slept on it until an unrelated commit woke it (ten minutes once,
 * with health green). Found the way this test runs it: a source with five
 * captured tables, an external writer (Python's sqlite3) that commits one
 * row, waits until the follower made it visible, and commits a second row
 * at once; with five projections the first pass still has four to go, so
 * the second commit lands in its rest or right after it. Each trial starts
 * a new follower (the first pass is the one that raced), and commits its
 * second row after a different pause, so the commits fall at different
 * moments of the first pass and just after it; then a few more rounds test
 * the passes after it. SLUICE_NO_WATCH=1 runs the follower on its poll
 * alone (no file watch), the other path a wake can come by.
 */

const TABLES = ['t1', 't2', 't3', 't4', 't5'] as const;
/** Pauses (ms) between seeing the first row and committing the second, one per trial. */
const PAUSES = [0, 1, 3, 8] as const;
/** How long a committed row may take to show: far more than a follower needs, even on a loaded machine (a follower that slept on it waits for an unrelated commit: forever here). */
const SHOWS_WITHIN_MS = 10_000;
/** Rounds of "commit, see it, commit again" after the first pass, per trial. */
const LATER_ROUNDS = 2;

let dir: string;
beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

/** Five captured tables of 300 rows each, so that each projection's first pass takes a moment. */
function fiveTableSource(file: string): string {
  const db = openDatabase(file, { create: true, wal: true });
  try {
    for (const t of TABLES) {
      db.exec(`CREATE TABLE ${t}(id INTEGER PRIMARY KEY, v TEXT)`);
      db.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO ${t}(v) SELECT 'row ' || i FROM n`,
      );
    }
    enable(db, TABLES);
  } finally {
    db.close();
  }
  return file;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every millisecond or so; false when it is still false after `ms`. */
async function showsWithin(ms: number, check: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(1);
  }
}

/** Whether a row with v = marker is in the target's t1 (one read-only connection, opened once the target is in WAL mode). */
class TargetRows {
  #db: Db | undefined;
  constructor(readonly file: string) {}
  has(marker: string): boolean {
    try {
      // Not before the follower switched it to WAL: a reader then would keep it in rollback mode.
      if (this.#db === undefined && !fs.existsSync(`${this.file}-wal`)) return false;
      this.#db ??= openDatabase(this.file, { readonly: true });
      return this.#db.prepare('SELECT 1 FROM t1 WHERE v = ?').get(marker) !== undefined;
    } catch {
      return false; // t1 is not made yet
    }
  }
  close(): void {
    this.#db?.close();
  }
}

type Kind = 'sync' | 'export';

/** One follower from its start: the misses it had (empty when every row showed in time). */
async function trial(kind: Kind, watch: boolean, k: number): Promise<string[]> {
  const name = `${kind}-${watch ? 'watch' : 'poll'}-${k}`;
  const src = fiveTableSource(path.join(dir, `${name}.db`));
  const target = path.join(dir, `${name}-cache.db`);
  const out = path.join(dir, `${name}.jsonl`);
  const rows = new TargetRows(target);
  const visible =
    kind === 'sync'
      ? (marker: string) => rows.has(marker)
      : (marker: string) => fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes(`"${marker}"`);
  const writer = PythonWriter.start();
  let follower: Spawned | undefined;
  const misses: string[] = [];
  try {
    expect((await writer.send({ open: src })).ok).toBe(true);
    const commit = async (marker: string) => {
      const r = await writer.send({ sql: `INSERT INTO t1(v) VALUES ('${marker}')` });
      expect(r.ok, r.error).toBe(true);
    };
    const args = kind === 'sync' ? ['sync', src, target, '--follow', '--json'] : ['export', src, '--out', out, '--follow'];
    follower = startCli(args, watch ? {} : { SLUICE_NO_WATCH: '1' });
    const f = follower;
    // The first row races the follower's start; the first pass applies it (its snapshot or its catch-up).
    await commit(`${name}-first`);
    expect(await showsWithin(30_000, () => visible(`${name}-first`)), `${name}: the first row never showed; ${f.stderr()}`).toBe(true);
    const pause = PAUSES[k % PAUSES.length] as number;
    if (pause > 0) await sleep(pause);
    await commit(`${name}-second`);
    if (!(await showsWithin(SHOWS_WITHIN_MS, () => visible(`${name}-second`))))
      misses.push(`${name}: a row committed ${pause} ms after the first pass made the first one visible`);
    for (let r = 0; r < LATER_ROUNDS; r++) {
      await commit(`${name}-later-${r}-a`);
      if (!(await showsWithin(SHOWS_WITHIN_MS, () => visible(`${name}-later-${r}-a`)))) misses.push(`${name}: later round ${r}, first row`);
      await commit(`${name}-later-${r}-b`);
      if (!(await showsWithin(SHOWS_WITHIN_MS, () => visible(`${name}-later-${r}-b`))))
        misses.push(`${name}: later round ${r}, second row`);
    }
    f.child.kill('SIGTERM');
    const exit = await f.exited;
    expect(exit, f.stderr()).toEqual({ status: 0, signal: null });
    return misses;
  } finally {
    rows.close();
    await writer.stop();
    if (follower !== undefined && follower.child.exitCode === null && follower.child.signalCode === null) follower.child.kill('SIGKILL');
  }
}

async function trials(kind: Kind, watch: boolean): Promise<void> {
  const misses = (
    await mapLimit(
      PAUSES.map((_, k) => k),
      2,
      (k) => trial(kind, watch, k),
    )
  ).flat();
  expect(misses, `rows the follower slept on (not applied within ${SHOWS_WITHIN_MS} ms)`).toEqual([]);
}

// SIGTERM ends a follower cleanly; Windows has none to catch.
describe.skipIf(process.platform === 'win32')('a commit at any moment of the first pass or right after it is applied', () => {
  test('sync --follow, woken by its file watch', () => trials('sync', true), 90_000);
  test('sync --follow, on its poll alone (SLUICE_NO_WATCH=1)', () => trials('sync', false), 90_000);
  test('export --follow, woken by its file watch', () => trials('export', true), 90_000);
  test('export --follow, on its poll alone (SLUICE_NO_WATCH=1)', () => trials('export', false), 90_000);
});
