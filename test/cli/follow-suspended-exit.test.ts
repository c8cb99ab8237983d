// sync --follow stopped while a projection is suspended and behind: the final summary counts its lag and the exit is 3, as a one-shot sync's
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, runCli, runSqliteCli, runPython } from '../support/fixtures.ts';
import { scalar, startCli, waitFor, write, type Spawned } from './support/cli.ts';

/*
 * A follower whose projection another program edited (TARGET_EDITED)
 * while it ran, with source events after that, said on SIGTERM "0 source
 * events applied (t 0); lag 0 events" and exited 0: a suspended projection
 * was left out of the lag, and the exit did not look at the projections at
 * all, while health said "suspended ... lag 1" (exit 3) and a one-shot sync
 * exited 3. Now the final summary counts the events a suspended projection
 * has not applied, names it, and the follower exits 3.
 */

let follower: Spawned | undefined;
afterEach(() => {
  follower?.child.kill('SIGKILL');
  follower = undefined;
});

test('a projection suspended by a hand edit and behind when the follower stops: lag counted, named, exit 3', async ({ tmp }) => {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  runSqliteCli(src, "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
  expect(runCli(['enable', src, 't']).status).toBe(0);
  expect(runCli(['sync', src, tgt]).status).toBe(0);
  const f = startCli(['sync', src, tgt, '--follow']);
  follower = f;
  await waitFor('the follower started', () => f.stdout().includes('following'));
  runPython('import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE t SET v = \'HACK\' WHERE id = 1"); c.commit()', [
    tgt,
  ]);
  await waitFor('t suspended', () => f.stderr().includes('t: SUSPENDED TARGET_EDITED'), 10_000);
  write(src, "INSERT INTO t VALUES (3, 'c')");
  // (A pass runs on the commit; the stored suspension stands, so nothing shows in the target.)
  await new Promise((r) => setTimeout(r, 1000));
  f.child.kill('SIGTERM');
  const { status } = await f.exited;
  const last = f.stdout().trim().split('\n').at(-1) ?? '';
  expect(last).toMatch(/^stopped by SIGTERM/);
  expect(last).toMatch(/lag 1 events/);
  expect(last).toMatch(/t suspended TARGET_EDITED at seq 0/);
  expect(status, f.stdout() + f.stderr()).toBe(3);
  expect(runCli(['sync', src, tgt]).status).toBe(3);
  expect(runCli(['health', tgt]).status).toBe(3);
});

test('a follower with every projection active and caught up still exits 0 on SIGTERM', async ({ tmp }) => {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  runSqliteCli(src, "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');");
  expect(runCli(['enable', src, 't']).status).toBe(0);
  const f = startCli(['sync', src, tgt, '--follow']);
  follower = f;
  await waitFor('the follower started', () => f.stdout().includes('following'));
  write(src, "INSERT INTO t VALUES (2, 'b')");
  await waitFor('the row applied', () => {
    try {
      return scalar(tgt, 'SELECT count(*) FROM t') === 2n;
    } catch {
      return false;
    }
  });
  f.child.kill('SIGTERM');
  const { status } = await f.exited;
  expect(status, f.stdout() + f.stderr()).toBe(0);
  expect(f.stdout().trim().split('\n').at(-1)).toMatch(/lag 0 events; committed t at seq 1/);
});
