// a mirror's table dropped, renamed away or given a column by hand, with no new source event: sync says TARGET_TABLE_CHANGED as health does, not "applied 0 events" with exit 0
import path from 'node:path';
import { test, expect, runCli, runSqliteCli } from '../../support/fixtures.ts';
import { scalar } from '../../cli/support/cli.ts';

/*
 * health's rule for a projection's tables (a table missing, or its shape
 * not what its kind makes: target-shape.ts) was checked by sync only when
 * it had a batch to apply. With nothing new on the source, a sync of a
 * target whose mirror table had been dropped or renamed away by hand said
 * "t: applied 0 events, at seq 0" and exited 0, and one with a column added
 * by hand too, while health exited 3 with TARGET_TABLE_CHANGED. Now a step
 * with nothing to apply checks the same rule: a missing table fails the
 * projection as a batch would (exit 1, recorded, health's message and
 * repair), a reshaped one is suspended as the batch path suspends it (exit 3).
 */

function synced(tmp: string): { src: string; tgt: string } {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
  expect(runCli(['enable', src, 't']).status).toBe(0);
  const s = runCli(['sync', src, tgt]);
  expect(s.status, s.stdout + s.stderr).toBe(0);
  return { src, tgt };
}

for (const [what, ddl] of [
  ['dropped', 'DROP TABLE t;'],
  ['renamed away', 'ALTER TABLE t RENAME TO t_old;'],
] as const) {
  test(`a mirror table ${what} by hand, nothing new on the source: sync fails it with TARGET_TABLE_CHANGED (exit 1), as health says`, ({
    tmp,
  }) => {
    const { src, tgt } = synced(tmp);
    runSqliteCli(tgt, ddl);
    const s = runCli(['sync', src, tgt]);
    const out = s.stdout + s.stderr;
    expect(s.status, out).toBe(1);
    expect(out).toMatch(/t: FAILED TARGET_TABLE_CHANGED: table t of projection t is missing from the target/);
    expect(out).toMatch(/sluice reinit /);
    expect(out).not.toMatch(/applied 0 events/);
    expect(scalar(tgt, "SELECT last_error_code FROM _sluice_projections WHERE name = 't'")).toBe('TARGET_TABLE_CHANGED');
    const h = runCli(['health', tgt]);
    expect(h.status, h.stdout).toBe(3);
    expect(h.stdout).toMatch(/TARGET_TABLE_CHANGED/);
    // The repair health names rebuilds it, and both are green again.
    const r = runCli(['reinit', src, tgt, 't']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(scalar(tgt, 'SELECT count(*) FROM t')).toBe(2n);
    expect(runCli(['sync', src, tgt]).status).toBe(0);
    expect(runCli(['health', tgt]).status).toBe(0);
  });
}

test('a column added by hand to a mirror table, nothing new on the source: sync suspends it with TARGET_TABLE_CHANGED (exit 3), as health says', ({
  tmp,
}) => {
  const { src, tgt } = synced(tmp);
  runSqliteCli(tgt, 'ALTER TABLE t ADD COLUMN x;');
  const s = runCli(['sync', src, tgt]);
  const out = s.stdout + s.stderr;
  expect(s.status, out).toBe(3);
  expect(out).toMatch(/t: SUSPENDED TARGET_TABLE_CHANGED .*not in the definition: x/);
  expect(out).toMatch(/sluice reinit /);
  expect(scalar(tgt, "SELECT state || ' ' || reason FROM _sluice_projections WHERE name = 't'")).toBe('suspended TARGET_TABLE_CHANGED');
  const h = runCli(['health', tgt]);
  expect(h.status, h.stdout).toBe(3);
  expect(h.stdout).toMatch(/suspended TARGET_TABLE_CHANGED/);
  expect(runCli(['reinit', src, tgt, 't']).status).toBe(0);
  expect(runCli(['health', tgt]).status).toBe(0);
});

test('a target table as its kind makes it, nothing new on the source: sync exits 0 and writes nothing', ({ tmp }) => {
  const { src, tgt } = synced(tmp);
  runSqliteCli(tgt, 'CREATE INDEX mine ON t (v);');
  const s = runCli(['sync', src, tgt]);
  expect(s.status, s.stdout + s.stderr).toBe(0);
  expect(s.stdout).toMatch(/t: applied 0 events, at seq 0/);
  expect(runCli(['health', tgt]).status).toBe(0);
});
