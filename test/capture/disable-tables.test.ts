// disable with tables takes capture off those tables only and health names the mirrors left behind
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  scalar,
  expectOneLineError,
  sha256,
  startCli,
  waitFor,
} from '../cli/support/cli.ts';

/*
 * `sluice disable SRC TABLE...` takes capture off the named tables only, in
 * one write transaction beside live writers: their triggers, catalog rows
 * and journal rows go, the generation moves (TABLE_DISABLED), and the other
 * tables' readers go on from their cursors. A mirror of a table no longer
 * captured is not left behind silently: sync suspends it, health exits 3
 * naming both fixes, verify does not call it ok; enabling the table again
 * rebuilds it.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeEach(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels', 'comments']);
  tgt = at('cache.db');
});
afterEach(() => removeDir(dir));

const WRITE = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute(sys.argv[2])
con.commit()
`;
const py = (sql: string) => runPython(WRITE, [src, sql]);
const tidOf = (table: string) => scalar(src, 'SELECT tid FROM _sluice_tables WHERE name = ?', table);

describe('disable SRC TABLE', () => {
  test('takes capture off that table only: the others keep their triggers, journal and readers; status and --json say so', async () => {
    await sync(src, tgt);
    py("UPDATE labels SET color = x'00' WHERE repo_id = 1");
    const labelsTid = tidOf('labels');
    expect(Number(scalar(src, 'SELECT count(*) FROM _sluice_journal WHERE tid = ?', labelsTid))).toBeGreaterThan(0);
    // A change-stream reader of issues, positioned before the disable.
    const before = await runCliAsync(['changes', src, '--table', 'issues']);
    expect(before.status, before.stderr).toBe(0);
    const cursor = (JSON.parse(before.stdout.trim().split('\n').at(-1) as string) as { cursor: string }).cursor;
    const generation = Number(scalar(src, 'SELECT generation FROM _sluice_state'));

    const r = await runCliAsync(['disable', src, 'labels', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const d = parseJson(r, S.disableOutput);
    expect(d.tables).toEqual([{ table: 'labels', reason: 'TABLE_DISABLED' }]);
    expect(d.generation).toBe(generation + 1);
    expect(d.removed.length).toBeGreaterThan(0);
    expect(d.removed.every((n) => n.startsWith(`_sluice_t${String(labelsTid)}_`))).toBe(true);
    expect(d.purgedEvents).toBeGreaterThan(0);
    // Its events went in the same transaction: each is a tombstone now, its images gone, no table's, holding the digest
    // a cursor anchored on it compares (the journal's newest row among them: the next seq counts from it); no trigger of it is left.
    expect(scalar(src, 'SELECT count(*) FROM _sluice_journal WHERE tid = ?', labelsTid)).toBe(0n);
    expect(
      scalar(src, 'SELECT count(*) FROM _sluice_journal WHERE tid = -1 AND op = 0 AND length(mask) = 16 AND c0 IS NULL AND c1 IS NULL'),
    ).toBe(BigInt(d.purgedEvents ?? 0));
    expect(scalar(src, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'labels'")).toBe(0n);

    // The application writes on: nothing of labels is journaled, issues still is.
    const hw = Number(scalar(src, 'SELECT max(seq) FROM _sluice_journal'));
    py("UPDATE labels SET color = x'01' WHERE repo_id = 2");
    expect(Number(scalar(src, 'SELECT max(seq) FROM _sluice_journal'))).toBe(hw);
    py("UPDATE issues SET title = 'after disable' WHERE repo_id = 1 AND number = 1");
    expect(Number(scalar(src, 'SELECT max(seq) FROM _sluice_journal'))).toBe(hw + 1);

    const status = await runCliAsync(['status', src, '--json']);
    expect(status.status, status.stdout).toBe(0);
    const s = parseJson(status, S.statusOutput);
    expect(s.tables.map((t) => t.name).sort()).toEqual(['comments', 'issues']);
    expect(s.generation).toBe(generation + 1);
    expect(s.lastReason).toContain('TABLE_DISABLED');
    expect(s.lastReason).toContain('labels');
    const text = await runCliAsync(['status', src]);
    expect(text.stdout).toContain('TABLE_DISABLED');

    // The reader of issues goes on from its cursor (sluice's own DDL is no schema window for it).
    const after = await runCliAsync(['changes', src, '--since', cursor]);
    expect(after.status, after.stderr).toBe(0);
    expect(after.stdout).toContain('after disable');
  });

  test("the other tables' projections go on from their cursors when the last event the target applied was one of the disabled table's", async () => {
    await sync(src, tgt);
    py("UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
    py("UPDATE labels SET color = x'02' WHERE repo_id = 1");
    // The target's cursors end on a labels event (their anchor, the newest event at or below their seq).
    const synced = await runCliAsync(['sync', src, tgt]);
    expect(synced.status, synced.stderr).toBe(0);
    expect(scalar(src, 'SELECT tid FROM _sluice_journal ORDER BY seq DESC LIMIT 1')).toBe(tidOf('labels'));
    py("UPDATE issues SET title = 'two' WHERE repo_id = 1 AND number = 1");
    const d = await runCliAsync(['disable', src, 'labels']);
    expect(d.status, d.stderr).toBe(0);

    const h = await runCliAsync(['health', tgt, '--json']);
    const issues = parseJson(h, S.healthOutput).projections.find((p) => p.name === 'issues');
    expect(issues, h.stdout).toMatchObject({ rebuild: null, needsAction: false });
    expect(h.stdout).not.toContain('HISTORY_DIVERGED');
    const s = await runCliAsync(['sync', src, tgt, '--json']);
    const out = parseJson(s, S.syncOutput).projections;
    for (const name of ['issues', 'comments']) {
      const p = out.find((x) => x.name === name);
      expect(p, s.stdout).toMatchObject({ state: 'active' });
      expect(p?.rebuilt, `${name}: ${s.stdout}`).toBeUndefined();
    }
    expect(out.find((x) => x.name === 'issues')?.applied).toBe(1);
    expect(scalar(tgt, 'SELECT title FROM issues WHERE repo_id = 1 AND number = 1')).toBe('two');
  });

  test("readers of another table that record no position on the source (export, changes --table) go on when their last event was one of the disabled table's", async () => {
    py("UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
    py("UPDATE labels SET color = x'02' WHERE repo_id = 1");
    py("UPDATE labels SET color = x'03' WHERE repo_id = 1");
    // Both readers' cursors end on a labels event (seq is global): their anchor.
    const out = at('issues.jsonl');
    const ex = await runCliAsync(['export', src, '--table', 'issues', '--out', out]);
    expect(ex.status, ex.stderr).toBe(0);
    const read = await runCliAsync(['changes', src, '--table', 'issues']);
    expect(read.status, read.stderr).toBe(0);
    const cursor = (JSON.parse(read.stdout.trim().split('\n').at(-1) as string) as { cursor: string }).cursor;
    expect(scalar(src, 'SELECT tid FROM _sluice_journal ORDER BY seq DESC LIMIT 1')).toBe(tidOf('labels'));
    py("UPDATE issues SET title = 'two' WHERE repo_id = 1 AND number = 1");
    py("UPDATE labels SET color = x'04' WHERE repo_id = 1");
    const d = await runCliAsync(['disable', src, 'labels']);
    expect(d.status, d.stderr).toBe(0);

    const resumed = await runCliAsync(['export', src, '--table', 'issues', '--out', out]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).not.toContain('HISTORY_DIVERGED');
    expect(fs.readFileSync(out, 'utf8')).toContain('"two"');
    const after = await runCliAsync(['changes', src, '--since', cursor, '--table', 'issues']);
    expect(after.status, after.stderr).toBe(0);
    expect(after.stdout).toContain('"two"');
    // Only what followed the cursor: that one update (whose old image is 'one').
    expect(after.stdout.trim().split('\n')).toHaveLength(2);
  });

  test('an older copy restored in place and written past a cursor is still told when the restored copy then disables the table the cursor anchors on', async () => {
    py("UPDATE issues SET title = 'one' WHERE repo_id = 1 AND number = 1");
    runPython(`import sqlite3, sys\nsqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(truncate)')`, [src]);
    const backup = fs.readFileSync(src);
    py("UPDATE labels SET color = x'02' WHERE repo_id = 1");
    const read = await runCliAsync(['changes', src, '--table', 'issues']);
    expect(read.status, read.stderr).toBe(0);
    const cursor = (JSON.parse(read.stdout.trim().split('\n').at(-1) as string) as { cursor: string }).cursor;
    // The backup written over the same file, then the same kind of writes: labels again at the cursor's seq, issues after.
    for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
    fs.writeFileSync(src, backup);
    py("UPDATE labels SET color = x'05' WHERE repo_id = 1");
    py("UPDATE issues SET title = 'other history' WHERE repo_id = 1 AND number = 1");
    const d = await runCliAsync(['disable', src, 'labels']);
    expect(d.status, d.stderr).toBe(0);

    const after = await runCliAsync(['changes', src, '--since', cursor, '--table', 'issues']);
    expect(after.status, after.stderr).toBe(3);
    expectOneLineError(after, 'HISTORY_DIVERGED');
    expect(after.stdout).toBe('');
  });

  test('its mirror is reported, not left green: sync suspends it, health exits 3 with both fixes, verify is not ok; enable again rebuilds it', async () => {
    await sync(src, tgt);
    const r = await runCliAsync(['disable', src, 'labels']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('labels');
    expect(r.stdout).toContain('TABLE_DISABLED');
    py("UPDATE labels SET color = x'02' WHERE repo_id = 3");
    py("UPDATE issues SET title = 'moved on' WHERE repo_id = 1 AND number = 2");

    const health = await runCliAsync(['health', tgt, '--json']);
    expect(health.status, health.stdout).toBe(3);
    const labels = parseJson(health, S.healthOutput).projections.find((p) => p.name === 'labels');
    const said = labels?.problems.join('\n') ?? '';
    expect(said).toContain(`sluice enable ${src} labels`);
    expect(said).toContain(`sluice drop ${tgt} labels`);

    const synced = await runCliAsync(['sync', src, tgt, '--json']);
    expect(synced.status, synced.stderr).toBe(3);
    const out = parseJson(synced, S.syncOutput);
    expect(out.projections.find((p) => p.name === 'labels')).toMatchObject({ state: 'suspended', reason: 'TABLE_UNTRACKED' });
    // The others go on from their cursors.
    const issues = out.projections.find((p) => p.name === 'issues');
    expect(issues).toMatchObject({ state: 'active', applied: 1 });
    expect(issues?.rebuilt).toBeUndefined();
    expect(dumpTables(tgt, ['issues'])).toEqual(dumpTables(src, ['issues']));

    const text = await runCliAsync(['sync', src, tgt]);
    expect(text.status).toBe(3);
    expect(text.stdout).toContain(`sluice drop ${tgt} labels`);

    const verify = await runCliAsync(['verify', src, tgt, '--json']);
    expect(verify.status, verify.stdout).toBe(3);
    const v = parseJson(verify, S.verifyOutput).projections.find((p) => p.name === 'labels');
    expect(v).toMatchObject({ ok: false });
    expect(v?.repair).toContain(`sluice drop ${tgt} labels`);

    const again = await runCliAsync(['enable', src, 'labels']);
    expect(again.status, again.stderr).toBe(0);
    const rebuilt = await runCliAsync(['sync', src, tgt, '--json']);
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    expect(parseJson(rebuilt, S.syncOutput).projections.find((p) => p.name === 'labels')).toMatchObject({ state: 'active' });
    expect(dumpTables(tgt, ['labels'])).toEqual(dumpTables(src, ['labels']));
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });

  test('sync --follow says the suspension of its mirror once, with the enable of that table by name', async () => {
    await sync(src, tgt);
    const follower = startCli(['sync', src, tgt, '--follow']);
    try {
      await waitFor('the follower to start', () => follower.stdout().includes('following'));
      const r = await runCliAsync(['disable', src, 'labels']);
      expect(r.status, r.stderr).toBe(0);
      await waitFor('the suspension to be said', () => follower.stderr().includes('SUSPENDED TABLE_UNTRACKED'));
      const said = follower.stderr();
      expect(said).toContain(`sluice enable ${src} labels --mode images`);
      expect(said).not.toMatch(/\bTABLE\b(?!_)/);
    } finally {
      follower.child.kill('SIGTERM');
      await follower.exited;
    }
  });

  test('a table it does not capture is refused, naming the ones it does, and nothing changes', async () => {
    const before = sha256(src);
    const r = await runCliAsync(['disable', src, 'repositories', '--json']);
    expect(r.status).toBe(1);
    expectOneLineError(r, 'TABLE_UNTRACKED');
    expect(r.stderr).toContain('comments, issues, labels');
    expect(sha256(src)).toBe(before);
    const nosuch = await runCliAsync(['disable', src, 'issues', 'nosuch']);
    expect(nosuch.status).toBe(1);
    expect(scalar(src, "SELECT count(*) FROM _sluice_tables WHERE name = 'issues'")).toBe(1n);
  });

  test('it waits for a live writer holding the write lock, then commits', async () => {
    const holder = openDatabase(src);
    try {
      holder.exec('BEGIN IMMEDIATE');
      holder.exec("UPDATE issues SET title = 'held' WHERE repo_id = 1 AND number = 3");
      const pending = runCliAsync(['disable', src, 'comments', '--json']);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      holder.exec('COMMIT');
      const r = await pending;
      expect(r.status, r.stderr).toBe(0);
      expect(parseJson(r, S.disableOutput).tables).toEqual([{ table: 'comments', reason: 'TABLE_DISABLED' }]);
    } finally {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
    }
    expect(scalar(src, "SELECT group_concat(name, ',') FROM (SELECT name FROM _sluice_tables ORDER BY name)")).toBe('issues,labels');
  });
});
