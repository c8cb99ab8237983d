// a user's trigger on a projection's table that writes another projection's table is refused by sync, import and health, and query warns of it
import path from 'node:path';
import { test, expect, runCli, runSqliteCli } from '../../support/fixtures.ts';
import { pythonExec } from '../../support/journal.ts';

/*
 * A trigger a user adds to a projection's table fires inside sync's own
 * connection and transaction, where protect's guards let every write
 * through and the hand-edit watch sees sluice's own commit. One whose
 * program writes the table of another projection (a mirror of another
 * table) would change that projection behind sluice's back: sync, import
 * and subscribe apply nothing to the projection whose tables carry it
 * (suspended, USER_TRIGGER_WRITES_PROJECTION, naming the trigger, its
 * table, the table it writes and the fix), health says so even before a
 * sync runs, and `sluice query` warns when it makes one.
 */

const TRIGGER = "CREATE TRIGGER audit AFTER INSERT ON t BEGIN UPDATE u SET w = 'touched by ' || NEW.id WHERE id = 1; END";

function source(tmp: string): string {
  const src = path.join(tmp, 'src.db');
  runSqliteCli(
    src,
    "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a'), (2, 'b'); CREATE TABLE u (id INTEGER PRIMARY KEY, w); INSERT INTO u VALUES (1, 'u1');",
  );
  const r = runCli(['enable', src, 't', 'u']);
  expect(r.status, r.stderr).toBe(0);
  return src;
}

function ok(args: string[]): { stdout: string; stderr: string } {
  const r = runCli(args);
  expect(r.status, r.stderr + r.stdout).toBe(0);
  return r;
}

function rows(file: string, sql: string): string {
  return runSqliteCli(file, sql).trim();
}

interface Projection {
  name: string;
  state: string;
  reason: string | null;
  detail: Record<string, unknown> | null;
  problems: string[];
}

function health(tgt: string): { status: number; projections: Projection[] } {
  const r = runCli(['health', tgt, '--json']);
  return { status: r.status, projections: (JSON.parse(r.stdout) as { projections: Projection[] }).projections };
}

test("sync suspends the projection whose table carries a user's trigger that writes another projection's table, and never fires it; query warns when it is made; health says it", ({
  tmp,
}) => {
  const src = source(tmp);
  const tgt = path.join(tmp, 'tgt.db');
  ok(['sync', src, tgt]);
  ok(['protect', tgt]);

  // Made through sluice query: it runs, and says what the trigger will do.
  const q = runCli(['query', tgt, TRIGGER, '--json']);
  expect(q.status, q.stderr).toBe(0);
  expect(q.stderr).toMatch(/^sluice: warning: USER_TRIGGER_WRITES_PROJECTION: .*audit.* t .*\bu\b/m);
  expect((JSON.parse(q.stdout) as { warnings?: unknown[] }).warnings).toEqual([
    expect.objectContaining({ code: 'USER_TRIGGER_WRITES_PROJECTION', trigger: 'audit', on: 't', projection: 't', table: 'u', owner: 'u' }),
  ]);

  // Health says it before any sync ran.
  const before = health(tgt);
  expect(before.status).toBe(3);
  const tBefore = before.projections.find((p) => p.name === 't');
  expect(tBefore?.problems.join('\n')).toMatch(/trigger audit on table t writes table u of projection u/);

  pythonExec(src, "INSERT INTO t VALUES (3, 'c')");
  const s = runCli(['sync', src, tgt, '--json']);
  expect(s.stdout + s.stderr).toMatch(/USER_TRIGGER_WRITES_PROJECTION/);
  // u is the source's: the trigger never fired.
  expect(rows(tgt, 'SELECT w FROM u WHERE id = 1')).toBe(rows(src, 'SELECT w FROM u WHERE id = 1'));
  expect(rows(tgt, 'SELECT count(*) FROM t')).toBe('2');

  const after = health(tgt);
  expect(after.status).toBe(3);
  const t = after.projections.find((p) => p.name === 't');
  expect(t).toMatchObject({ state: 'suspended', reason: 'USER_TRIGGER_WRITES_PROJECTION' });
  expect(t?.detail).toMatchObject({ trigger: 'audit', on: 't', table: 'u', owner: 'u' });
  expect(String(t?.detail?.message)).toMatch(/DROP TRIGGER/);
  expect(after.projections.find((p) => p.name === 'u')).toMatchObject({ state: 'active' });

  // Dropped, the next sync applies t's events (the suspension clears by itself) and all is the source's.
  ok(['query', tgt, 'DROP TRIGGER audit']);
  ok(['sync', src, tgt]);
  expect(health(tgt).status).toBe(0);
  expect(rows(tgt, 'SELECT id, v FROM t ORDER BY id')).toBe(rows(src, 'SELECT id, v FROM t ORDER BY id'));
  expect(rows(tgt, 'SELECT w FROM u')).toBe('u1');
  ok(['verify', src, tgt]);
});

test("a user's trigger that only writes the user's own table (an audit log) is left alone, and query says nothing of it", ({ tmp }) => {
  const src = source(tmp);
  const tgt = path.join(tmp, 'tgt.db');
  ok(['sync', src, tgt]);
  ok(['query', tgt, 'CREATE TABLE log (x)']);
  const q = ok(['query', tgt, 'CREATE TRIGGER t_log AFTER INSERT ON t BEGIN INSERT INTO log VALUES (NEW.id); END']);
  expect(q.stderr).toBe('');
  pythonExec(src, "INSERT INTO t VALUES (3, 'c')");
  ok(['sync', src, tgt]);
  expect(rows(tgt, 'SELECT x FROM log')).toBe('3');
  expect(health(tgt).status).toBe(0);
});

test("a trigger made with the sqlite3 shell that writes sluice's own table through a user's table suspends the projection, and import refuses it too", ({
  tmp,
}) => {
  const src = source(tmp);
  const jsonl = path.join(tmp, 'changes.jsonl');
  const tgt = path.join(tmp, 'imported.db');
  ok(['export', src, '--out', jsonl]);
  ok(['import', tgt, jsonl]);
  // Through a user's table: the chain is followed (the trigger on log writes u).
  runSqliteCli(
    tgt,
    'CREATE TABLE log (x); CREATE TRIGGER t_log AFTER DELETE ON t BEGIN INSERT INTO log VALUES (OLD.id); END; CREATE TRIGGER log_u AFTER INSERT ON log BEGIN DELETE FROM u; END;',
  );
  pythonExec(src, 'DELETE FROM t WHERE id = 2');
  ok(['export', src, '--out', jsonl]);
  const r = runCli(['import', tgt, jsonl, '--json']);
  expect(r.status).not.toBe(0);
  expect(r.stdout + r.stderr).toMatch(/USER_TRIGGER_WRITES_PROJECTION/);
  expect(rows(tgt, 'SELECT count(*) FROM u')).toBe('1');
  expect(rows(tgt, 'SELECT count(*) FROM t')).toBe('2');
  const t = health(tgt).projections.find((p) => p.name === 't');
  expect(t).toMatchObject({ state: 'suspended', reason: 'USER_TRIGGER_WRITES_PROJECTION' });
  expect(t?.detail).toMatchObject({ trigger: 'log_u', on: 'log', table: 'u', owner: 'u' });

  // A trigger that writes sluice's own bookkeeping is refused the same way.
  const tgt2 = path.join(tmp, 'synced.db');
  ok(['sync', src, tgt2]);
  runSqliteCli(tgt2, 'CREATE TRIGGER t_own AFTER INSERT ON t BEGIN UPDATE _sluice_projections SET seq = 0; END;');
  pythonExec(src, "INSERT INTO t VALUES (4, 'd')");
  runCli(['sync', src, tgt2]);
  const t2 = health(tgt2).projections.find((p) => p.name === 't');
  expect(t2).toMatchObject({ state: 'suspended', reason: 'USER_TRIGGER_WRITES_PROJECTION' });
  expect(t2?.detail).toMatchObject({ trigger: 't_own', on: 't', table: '_sluice_projections', owner: null });
});
