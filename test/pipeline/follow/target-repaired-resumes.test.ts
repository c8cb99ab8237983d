// a follower whose projection is suspended by a trigger or index in the target goes on once that is dropped, with no further commit on the source
import { test, expect, runCli, runSqliteCli } from '../../support/fixtures.ts';
import { scalar, waitFor, write } from '../../cli/support/cli.ts';
import { followers as followersOf, syncedApp } from '../support/follower.ts';

/*
 * A user's trigger on mirror t's table that writes mirror u's table makes
 * the follower suspend t (USER_TRIGGER_WRITES_PROJECTION), whose message
 * says: drop the trigger, t takes its events from where it stopped. The
 * user drops it, with the sqlite3 shell. The follower passed only on a
 * source commit, so t stayed suspended and behind (health exit 3, the row
 * missing) until the application happened to write again, however long
 * that was. It now takes a pass when the target's schema changed while a
 * projection waits for a repair there. The same for a UNIQUE index the
 * user added to the target (TARGET_CONSTRAINT) and dropped again.
 */

const followers = followersOf();

const setUp = (tmp: string) =>
  syncedApp(
    tmp,
    "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT); INSERT INTO t VALUES (1, 'a'); INSERT INTO u VALUES (1, 'u1');",
    ['t', 'u'],
  );

const state = (tgt: string, name: string) =>
  String(scalar(tgt, `SELECT state || ' ' || coalesce(reason, '') FROM _sluice_projections WHERE name = '${name}'`));

/**
 * A follower of a fresh source and target; `made` (DDL in the target), then `written` (a source write) suspends t with
 * `reason`; then `repair` (DDL in the target) while the source writes nothing more: t is active again with the row.
 */
async function suspendedThenRepaired(
  tmp: string,
  steps: { made: string; written: string; reason: string; repair: string },
  suspended?: (tgt: string) => void,
): Promise<string> {
  const { src, tgt } = setUp(tmp);
  await followers.start(src, tgt);
  runSqliteCli(tgt, steps.made);
  write(src, steps.written);
  await waitFor('t suspended', () => state(tgt, 't') === `suspended ${steps.reason}`);
  suspended?.(tgt);
  runSqliteCli(tgt, steps.repair);
  await waitFor('t active again with the row', () => state(tgt, 't') === 'active ' && scalar(tgt, 'SELECT count(*) FROM t') === 2n, 10_000);
  expect(runCli(['health', tgt]).status).toBe(0);
  return tgt;
}

test('a trigger that writes another projection, dropped while the source is idle: the suspended mirror catches up by itself', async ({
  tmp,
}) => {
  const tgt = await suspendedThenRepaired(
    tmp,
    {
      made: "CREATE TRIGGER sneaky AFTER INSERT ON t BEGIN UPDATE u SET w = 'touched' WHERE id = 1; END;",
      written: "INSERT INTO t VALUES (2, 'the last write of the day')",
      reason: 'USER_TRIGGER_WRITES_PROJECTION',
      // The repair the message asks for; the source writes nothing more.
      repair: 'DROP TRIGGER sneaky;',
    },
    (t) => expect(scalar(t, 'SELECT count(*) FROM t')).toBe(1n),
  );
  expect(scalar(tgt, 'SELECT w FROM u WHERE id = 1')).toBe('u1');
});

test('a UNIQUE index a user added to the target, dropped while the source is idle: the suspended mirror catches up by itself', async ({
  tmp,
}) => {
  await suspendedThenRepaired(tmp, {
    made: 'CREATE UNIQUE INDEX one_v ON t (v);',
    written: "INSERT INTO t VALUES (2, 'a')",
    reason: 'TARGET_CONSTRAINT',
    repair: 'DROP INDEX one_v;',
  });
});
