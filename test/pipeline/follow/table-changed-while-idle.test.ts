// a follower whose mirror table is renamed away or reshaped by hand while the source is idle says TARGET_TABLE_CHANGED at once and does not exit 0 on SIGTERM
import { test, expect, runCli, runSqliteCli } from '../../support/fixtures.ts';
import { scalar, waitFor } from '../../cli/support/cli.ts';
import { followers as followersOf, syncedApp } from '../support/follower.ts';

/*
 * A follower passes on source commits. A mirror table renamed away by hand
 * (or given a column) while the source was idle went unseen: the follower
 * said nothing, and on SIGTERM printed "lag 0 events" and exited 0, while
 * health exited 3 with TARGET_TABLE_CHANGED. Now a change of the target's
 * schema brings a pass while the source is idle, and a step with nothing to
 * apply checks health's rule for the tables: the follower says the failure
 * (a table missing) or the suspension (a table reshaped) on stderr, and its
 * exit on SIGTERM is a one-shot sync's (1, 3).
 */

const followers = followersOf();

const setUp = (tmp: string) => syncedApp(tmp, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');", ['t']);

test('a mirror table renamed away while the source is idle: the follower fails it (TARGET_TABLE_CHANGED) and exits 1 on SIGTERM', async ({
  tmp,
}) => {
  const { src, tgt } = setUp(tmp);
  const f = await followers.start(src, tgt);
  runSqliteCli(tgt, 'ALTER TABLE t RENAME TO t_old;');
  await waitFor('the failure said', () => f.stderr().includes('t: FAILED TARGET_TABLE_CHANGED'), 10_000);
  expect(f.stderr()).toMatch(/table t of projection t is missing from the target/);
  expect(scalar(tgt, "SELECT last_error_code FROM _sluice_projections WHERE name = 't'")).toBe('TARGET_TABLE_CHANGED');
  f.child.kill('SIGTERM');
  const { status } = await f.exited;
  expect(status, f.stdout() + f.stderr()).toBe(1);
  expect(runCli(['health', tgt]).status).toBe(3);
});

test('a column added to a mirror table while the source is idle: the follower suspends it (TARGET_TABLE_CHANGED) and exits 3 on SIGTERM', async ({
  tmp,
}) => {
  const { src, tgt } = setUp(tmp);
  const f = await followers.start(src, tgt);
  runSqliteCli(tgt, 'ALTER TABLE t ADD COLUMN x;');
  await waitFor('the suspension said', () => f.stderr().includes('t: SUSPENDED TARGET_TABLE_CHANGED'), 10_000);
  expect(scalar(tgt, "SELECT state || ' ' || reason FROM _sluice_projections WHERE name = 't'")).toBe('suspended TARGET_TABLE_CHANGED');
  f.child.kill('SIGTERM');
  const { status } = await f.exited;
  expect(status, f.stdout() + f.stderr()).toBe(3);
  expect(f.stdout()).toMatch(/t suspended TARGET_TABLE_CHANGED/);
});
