// a follow process stops cleanly on sigterm and a killed one resumes from the target cursor
import path from 'node:path';
import { beforeAll, afterAll, afterEach } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  scalar,
  sourceSeq,
  startCli,
  waitFor,
  type Spawned,
} from './support/cli.ts';

/*
 * `sync --follow` as a user runs it: a separate process, stopped by a
 * signal. SIGTERM finishes the work in flight and exits 0; SIGKILL (a crash)
 * loses nothing, because a later `sync` resumes from the target's cursor.
 * Writes come from an external Python writer.
 */

const TABLES = ['comments', 'issues', 'labels', 'repositories'];

let dir: string;
let src: string;
let tgt: string;
let running: Spawned | undefined;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  tgt = at('cache.db');
});
afterEach(() => {
  // A failed test must not leave a follower behind.
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
});
afterAll(() => removeDir(dir));

function python(script: string): void {
  runPython(`import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.execute("PRAGMA busy_timeout = 10000")\n${script}`, [src]);
}

/** One update per comment, in one transaction: `n` events to catch up on. */
function pendingEvents(tag: string): void {
  python(`con.execute("UPDATE comments SET body = body || ' ${tag}' WHERE id <= 120")\ncon.commit()`);
}

function targetSeq(): number {
  return Number(scalar(tgt, 'SELECT min(seq) FROM main._sluice_projections') ?? -1n);
}

async function expectVerified(): Promise<void> {
  const v = await runCliAsync(['verify', src, tgt, '--json']);
  expect(v.status, v.stderr).toBe(0);
  const report = parseJson(v, S.verifyOutput);
  expect(report.ok).toBe(true);
  expect(report.projections.map((p) => p.name).sort()).toEqual(TABLES);
}

// Windows has no SIGTERM to catch: child.kill() there terminates the process outright.
describe.skipIf(process.platform === 'win32')('sync --follow', () => {
  test('applies commits as they happen, and on SIGTERM exits 0 leaving a consistent target', async () => {
    running = startCli(['sync', src, tgt, '--follow', '--json']);
    const f = running;
    await waitFor('the first pass (snapshot)', () => f.stdout().includes('\n'));
    const first = S.syncOutput.parse(JSON.parse(f.stdout().split('\n')[0] as string));
    expect(first.projections.every((p) => p.state === 'active' && p.snapshotRows !== undefined)).toBe(true);

    python(`for n in range(1, 21):
    con.execute("UPDATE issues SET title = 'follow ' || number WHERE repo_id = 5 AND number = ?", (n,))
    con.commit()`);
    await waitFor('the follower to apply 20 commits', () => scalar(tgt, "SELECT count(*) FROM issues WHERE title LIKE 'follow %'") === 20n);

    f.child.kill('SIGTERM');
    const exit = await f.exited;
    expect(exit, f.stderr()).toEqual({ status: 0, signal: null });
    expect(f.stderr()).toBe('');
    // Every line it printed is one pass, in the documented shape.
    for (const line of f.stdout().trimEnd().split('\n')) S.syncOutput.parse(JSON.parse(line));
    expect(targetSeq()).toBe(sourceSeq(src));
    await expectVerified();
  });

  test('SIGTERM in the middle of a long catch-up stops after the batch in flight, exits 0, and a later sync continues from there', async () => {
    for (let round = 0; round < 10; round++) pendingEvents(`(term ${round})`);
    // --batch 1: one target transaction per event, 1,200 of them, so the catch-up is long enough to be interrupted.
    running = startCli(['sync', src, tgt, '--follow', '--batch', '1', '--log', 'json', '--json']);
    const f = running;
    await waitFor('the catch-up to start', () => f.stderr().includes('"phase":"catch-up"'));
    f.child.kill('SIGTERM');
    const exit = await f.exited;
    expect(exit, f.stderr()).toEqual({ status: 0, signal: null });
    // The progress lines are JSON, and nothing else was written to stderr.
    for (const line of f.stderr().trimEnd().split('\n')) expect(JSON.parse(line)).toHaveProperty('phase');
    // It stopped short of the source, and said so: what it committed is a consistent prefix.
    const pass = S.syncOutput.parse(JSON.parse(f.stdout().trimEnd().split('\n').at(-1) as string));
    const comments = pass.projections.find((p) => p.name === 'comments');
    expect(comments?.stopped).toBe(true);
    expect(comments?.seq).toBeLessThan(sourceSeq(src));
    expect(Number(scalar(tgt, "SELECT seq FROM main._sluice_projections WHERE name = 'comments'"))).toBe(comments?.seq);
    await expectVerified();
    const rest = await runCliAsync(['sync', src, tgt, '--json']);
    expect(rest.status, rest.stderr).toBe(0);
    const done = parseJson(rest, S.syncOutput).projections.find((p) => p.name === 'comments');
    expect([done?.stopped, done?.snapshotRows, done?.seq]).toEqual([undefined, undefined, sourceSeq(src)]);
    expect(done?.applied).toBe(sourceSeq(src) - (comments?.seq ?? 0));
  });

  test('killed with SIGKILL mid catch-up, then more writes, then a new sync: the target equals the source', async () => {
    pendingEvents('(kill)');
    running = startCli(['sync', src, tgt, '--follow', '--batch', '1', '--log', 'json']);
    const f = running;
    await waitFor('the catch-up to start', () => f.stderr().includes('"phase":"catch-up"'));
    f.child.kill('SIGKILL');
    expect(await f.exited).toEqual({ status: null, signal: 'SIGKILL' });
    // Whatever it committed is a consistent prefix: verify compares at the target's own cursor.
    await expectVerified();

    python(`con.execute("UPDATE comments SET id = id + 10000 WHERE id <= 5")
con.execute("DELETE FROM comments WHERE id BETWEEN 100 AND 110")
con.execute("INSERT INTO labels (repo_id, name, color) VALUES (1, 'after-crash', x'')")
con.execute("UPDATE repositories SET stars = stars + 1")
con.commit()`);

    const resumed = await runCliAsync(['sync', src, tgt, '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    const report = parseJson(resumed, S.syncOutput);
    // It resumed from the cursor: no projection was rebuilt from a snapshot.
    for (const p of report.projections) {
      expect(p.state).toBe('active');
      expect(p.snapshotRows).toBeUndefined();
      expect(p.seq).toBe(sourceSeq(src));
    }
    expect(report.projections.find((p) => p.name === 'comments')?.applied).toBeGreaterThan(0);
    await expectVerified();
    expect(dumpTables(tgt)).toEqual(dumpTables(src, TABLES));
  });
});
