// every command prints its documented json and exit code on the happy path
import { positionOf, readResumePoint, exportLineSchema } from '../../src/export/index.ts';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { eventLineSchema, cursorLineSchema, decodeCursor } from '../../src/feed/index.ts';
import { NatsServer } from '../support/nats-server.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write, scalar, sourceSeq, dumpTables } from './support/cli.ts';

/*
 * One source goes through the whole life cycle, one command per test, in
 * order: enable, status, changes, sync, verify, health, export, import,
 * publish and subscribe (with a real nats-server), query, prune, bump, strip, disable. Every --json output is parsed with
 * the zod schema docs/cli.md names for it.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), []);
  tgt = at('cache.db');
});
afterAll(() => removeDir(dir));

describe('the happy path of every command', () => {
  test('enable captures the named tables, then adds more with a mode and retention (exit 0)', async () => {
    const first = await runCliAsync(['enable', src, 'issues', 'comments', '--json']);
    expect(first.status, first.stderr).toBe(0);
    const a = parseJson(first, S.enableOutput);
    expect(a).toMatchObject({ created: true, generation: 1, added: ['issues', 'comments'], rearmed: [] });
    expect(a.sourceId).toMatch(/^[0-9a-f-]{36}$/);

    const second = await runCliAsync(['enable', src, 'repositories', '--mode', 'images', '--retention', '1024', '--json']);
    expect(second.status, second.stderr).toBe(0);
    const b = parseJson(second, S.enableOutput);
    expect(b).toMatchObject({ created: false, sourceId: a.sourceId, added: ['repositories'] });
  });

  test('status reports the captured tables and the retention (exit 0)', async () => {
    write(src, "UPDATE issues SET title = 'first run ' || number WHERE repo_id = 1 AND number <= 3; DELETE FROM comments WHERE id = 1");
    const r = await runCliAsync(['status', src, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const s = parseJson(r, S.statusOutput);
    expect(s.enabled).toBe(true);
    expect(s.retention).toBe(1024);
    expect(s.seq).toBe(4);
    expect(s.tables.map((t) => [t.name, t.mode, t.armed]).sort()).toEqual([
      ['comments', 'images', true],
      ['issues', 'images', true],
      ['repositories', 'images', true],
    ]);
    expect(s.tables.find((t) => t.name === 'issues')?.keyColumns).toEqual(['repo_id', 'number']);
  });

  test('changes prints schema-valid event lines and a cursor line (exit 0)', async () => {
    const r = await runCliAsync(['changes', src, '--limit', '3']);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    expect(lines).toHaveLength(4);
    const events = lines.slice(0, 3).map((l) => eventLineSchema.parse(l));
    expect(events.map((e) => [e.seq, e.table, e.op])).toEqual([
      [1, 'issues', 'update'],
      [2, 'issues', 'update'],
      [3, 'issues', 'update'],
    ]);
    const { cursor } = cursorLineSchema.parse(lines[3]);
    expect(decodeCursor(cursor).seq).toBe(3);
  });

  test('sync snapshots on the first run and applies only the new events on the next (exit 0)', async () => {
    const first = await runCliAsync(['sync', src, tgt, '--json']);
    expect(first.status, first.stderr).toBe(0);
    const a = parseJson(first, S.syncOutput);
    expect(a.sourceSeq).toBe(4);
    expect(a.projections.map((p) => p.name).sort()).toEqual(['comments', 'issues', 'repositories']);
    for (const p of a.projections) expect(p).toMatchObject({ state: 'active', applied: 0, seq: 4 });
    expect(a.projections.find((p) => p.name === 'issues')?.snapshotRows).toBe(200);

    write(
      src,
      "UPDATE issues SET title = 'second run' WHERE repo_id = 2 AND number = 1; INSERT INTO repositories (id, owner, name, created_at) VALUES (99, 'o', 'new', '2026-03-01')",
    );
    const second = await runCliAsync(['sync', src, tgt, '--json']);
    expect(second.status, second.stderr).toBe(0);
    const b = parseJson(second, S.syncOutput);
    expect(b.sourceSeq).toBe(6);
    const byName = Object.fromEntries(b.projections.map((p) => [p.name, p]));
    expect(byName.issues).toMatchObject({ state: 'active', applied: 1, seq: 6 });
    expect(byName.repositories).toMatchObject({ state: 'active', applied: 1, seq: 6 });
    expect(byName.comments).toMatchObject({ state: 'active', applied: 0, seq: 6 });
    for (const p of b.projections) expect(p.snapshotRows).toBeUndefined();
    expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments', 'issues', 'repositories']));
  });

  test('verify compares both sides at one seq and finds them equal (exit 0)', async () => {
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const v = parseJson(r, S.verifyOutput);
    expect(v.ok).toBe(true);
    expect(v.sourceSeq).toBe(6);
    expect(Object.fromEntries(v.projections.map((p) => [p.name, [p.ok, p.checked, p.diffs.length]]))).toEqual({
      comments: [true, 599, 0],
      issues: [true, 200, 0],
      repositories: [true, 6, 0],
    });
  });

  test('health lists every projection with no lag (exit 0)', async () => {
    const r = await runCliAsync(['health', tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const h = parseJson(r, S.healthOutput);
    expect(h.ok).toBe(true);
    expect(h.projections.map((p) => [p.name, p.kind, p.state, p.lagEvents, p.sourceSeq, p.needsAction]).sort()).toEqual([
      ['comments', 'mirror', 'active', 0, 6, false],
      ['issues', 'mirror', 'active', 0, 6, false],
      ['repositories', 'mirror', 'active', 0, 6, false],
    ]);
  });

  test('export writes a snapshot as schema-valid JSONL and keeps its cursor beside it (exit 0)', async () => {
    const out = at('export.jsonl');
    const r = await runCliAsync(['export', src, '--out', out, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const e = parseJson(r, S.exportOutput);
    expect(e).toMatchObject({ out, rows: 6 + 200 + 599, events: 0, batches: 0 });
    const lines = fs
      .readFileSync(out, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => exportLineSchema.parse(JSON.parse(l)));
    expect(lines.filter((l) => 'type' in l && l.type === 'row')).toHaveLength(805);
    expect(lines.at(-1)).toMatchObject({ type: 'snapshot', seq: 6, cursor: e.cursor });
    // The cursor file: that cursor, with the offset where the file's complete part ends (resume-point.ts).
    const saved = readResumePoint(`${out}.cursor`);
    expect(positionOf(saved.cursor as string)).toBe(e.cursor);
    expect(saved.offset).toBe(fs.statSync(out).size);
  });

  test('import applies an export file to a new target (exit 0)', async () => {
    const imported = at('imported.db');
    const r = await runCliAsync(['import', imported, at('export.jsonl'), '--json']);
    expect(r.status, r.stderr).toBe(0);
    const i = parseJson(r, S.importOutput);
    expect(i).toMatchObject({ lines: 3 + 805 + 1, batchesApplied: 0, batchesSkipped: 0, incompleteTail: 0 });
    expect(i.projections.map((p) => [p.name, p.state, p.seq]).sort()).toEqual([
      ['comments', 'active', 6],
      ['issues', 'active', 6],
      ['repositories', 'active', 6],
    ]);
    expect(dumpTables(imported)).toEqual(dumpTables(tgt));
  });

  test('publish sends a snapshot to a JetStream stream and subscribe applies it to a new target (exit 0)', async () => {
    const nats = await NatsServer.start();
    try {
      const p = await runCliAsync(['publish', src, '--nats', nats.url, '--json']);
      expect(p.status, p.stderr).toBe(0);
      const pub = parseJson(p, S.publishOutput);
      expect(pub).toMatchObject({
        seq: 6,
        batches: 0,
        events: 0,
        snapshots: [{ seq: 6, rows: 805, reason: 'STREAM_HAD_NO_SNAPSHOT', aliases: ['NO_SNAPSHOT_PUBLISHED'] }],
      });
      const r = await runCliAsync(['subscribe', at('subscribed.db'), '--nats', nats.url, '--source', pub.sourceId, '--json']);
      expect(r.status, r.stderr).toBe(0);
      const sub = parseJson(r, S.subscribeOutput);
      expect(sub).toMatchObject({ stream: pub.stream, started: 'snapshot', batchesApplied: 0, incompleteTail: 0 });
      expect(sub.projections.map((x) => [x.name, x.state, x.seq]).sort()).toEqual([
        ['comments', 'active', 6],
        ['issues', 'active', 6],
        ['repositories', 'active', 6],
      ]);
      expect(dumpTables(at('subscribed.db'))).toEqual(dumpTables(tgt));
    } finally {
      await nats.dispose();
    }
  });

  test('query runs a read and prints columns and typed rows (exit 0)', async () => {
    const r = await runCliAsync([
      'query',
      tgt,
      'SELECT repo_id, number, score, title FROM issues WHERE repo_id = 2 AND number = 1',
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    const q = parseJson(r, S.queryOutput);
    expect(q.columns).toEqual(['repo_id', 'number', 'score', 'title']);
    expect(q.rows).toHaveLength(1);
    expect(q.rows[0]?.slice(0, 2)).toEqual([2, 1]);
    expect(q.rows[0]?.[2]).toHaveProperty('$f'); // a REAL keeps its storage class
    expect(q.rows[0]?.[3]).toBe('second run');
    expect(q.changes).toBe(0);
  });

  test('prune deletes the journal entries past the retention and reports them (exit 0)', async () => {
    // 2 x 599 more events: seq 1204, and the retention (1024) keeps seqs 181..1204;
    // writers already pruned through 1200 - 1024 = 176 (every 16 seqs), so 4 are left to delete.
    write(src, "UPDATE comments SET body = body || ' +'; UPDATE comments SET body = body || ' +'");
    expect(sourceSeq(src)).toBe(1204);
    const r = await runCliAsync(['prune', src, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.pruneOutput)).toEqual({ deleted: 4, prunedThrough: 180 });
    expect(scalar(src, 'SELECT min(seq) FROM main._sluice_journal')).toBe(181n);
  });

  test('alter runs DDL on a captured table, re-arms it and keeps the generation; --dry-run says what each consumer will do (exit 0)', async () => {
    const dry = await runCliAsync(['alter', src, 'ALTER TABLE comments ADD COLUMN edited INTEGER', '--dry-run', '--json']);
    expect(dry.status, dry.stderr).toBe(0);
    const plan = parseJson(dry, S.alterOutput);
    expect(plan).toMatchObject({
      dryRun: true,
      statements: 1,
      generation: 1,
      tables: [{ table: 'comments', change: 'altered', added: ['edited'] }],
    });
    expect(plan.consumers.length).toBeGreaterThan(0);
    expect(scalar(src, "SELECT count(*) FROM pragma_table_info('comments') WHERE name = 'edited'")).toBe(0n);
    const r = await runCliAsync(['alter', src, 'ALTER TABLE comments ADD COLUMN edited INTEGER', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.alterOutput)).toMatchObject({ dryRun: false, generation: 1, tables: [{ table: 'comments', change: 'altered' }] });
    const s = await runCliAsync(['status', src, '--json']);
    expect(parseJson(s, S.statusOutput).tables.every((t) => t.armed)).toBe(true);
  });

  test('bump advances the generation and records the reason (exit 0)', async () => {
    const r = await runCliAsync(['bump', src, '--reason', 'bulk reload', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.bumpOutput)).toEqual({ generation: 2 });
    const s = await runCliAsync(['status', src, '--json']);
    expect(parseJson(s, S.statusOutput)).toMatchObject({ generation: 2, lastReason: 'bump: bulk reload' });
  });

  test('strip writes a copy without sluice objects (exit 0)', async () => {
    const copy = at('copy.db');
    const r = await runCliAsync(['strip', src, '--out', copy, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const s = parseJson(r, S.stripOutput);
    expect(s.out).toBe(copy);
    expect(s.removed).toEqual(expect.arrayContaining(['_sluice_state', '_sluice_journal']));
    expect(s.removed.every((n) => n.startsWith('_sluice_'))).toBe(true);
    expect(fs.existsSync(copy)).toBe(true);
  });

  test('reinit rebuilds one projection by a swap and syncs the others (exit 0)', async () => {
    const r = await runCliAsync(['reinit', src, tgt, 'issues', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const out = parseJson(r, S.syncOutput);
    expect(out.projections.find((p) => p.name === 'issues')).toMatchObject({ state: 'active', rebuilt: 'REINIT', swapped: true });
    // (The others rebuild too here, for the bump before: reinit asks for one.)
    expect(out.projections.filter((p) => p.rebuilt === 'REINIT').map((p) => p.name)).toEqual(['issues']);
  });

  test('drop removes one projection and its table from the target; the others stay (exit 0)', async () => {
    const r = await runCliAsync(['drop', tgt, 'comments', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.dropOutput)).toEqual({ projection: 'comments', dropped: ['comments'] });
    expect(scalar(tgt, "SELECT group_concat(name, ',') FROM (SELECT name FROM _sluice_projections ORDER BY name)")).toBe(
      'issues,repositories',
    );
    expect(scalar(tgt, "SELECT count(*) FROM sqlite_schema WHERE name = 'comments'")).toBe(0n);
  });

  test("forget removes one consumer's acknowledgement row from the source (exit 0)", async () => {
    const name = `comments@${fs.realpathSync(tgt)}`;
    expect(scalar(src, 'SELECT count(*) FROM _sluice_consumers WHERE name = ?', name)).toBe(1n);
    const r = await runCliAsync(['forget', src, name, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.forgetOutput)).toMatchObject({ consumer: name, projection: 'comments', target: fs.realpathSync(tgt) });
    expect(scalar(src, 'SELECT count(*) FROM _sluice_consumers WHERE name = ?', name)).toBe(0n);
  });

  test('disable of one table takes capture off it only, moving the generation (exit 0)', async () => {
    const r = await runCliAsync(['disable', src, 'comments', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const d = parseJson(r, S.disableOutput);
    expect(d).toMatchObject({ tables: [{ table: 'comments', reason: 'TABLE_DISABLED' }], generation: 3 });
    const s = await runCliAsync(['status', src, '--json']);
    expect(s.status, s.stderr).toBe(0);
    expect(parseJson(s, S.statusOutput).tables.map((t) => t.name)).not.toContain('comments');
  });

  test('disable removes capture, after which status exits 3 (exit 0)', async () => {
    const before = sourceSeq(src);
    expect(before).toBeGreaterThan(0);
    const r = await runCliAsync(['disable', src, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const d = parseJson(r, S.disableOutput);
    expect(d.removed).toEqual(expect.arrayContaining(['_sluice_state', '_sluice_journal']));
    expect(scalar(src, "SELECT count(*) FROM main.sqlite_schema WHERE name LIKE '\\_sluice\\_%' ESCAPE '\\'")).toBe(0n);
    // The application keeps writing as before, also without recursive_triggers (Python's default):
    // no trigger of ours is left behind pointing at a dropped table.
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("INSERT INTO repositories (id, owner, name, created_at) VALUES (100, 'after', 'disable', '2026-08-01')")
con.execute("UPDATE repositories SET name = 'disabled' WHERE id = 100")
con.commit()`,
      [src],
    );
    expect(scalar(src, 'SELECT name FROM repositories WHERE id = 100')).toBe('disabled');
    const s = await runCliAsync(['status', src, '--json']);
    expect(s.status, s.stderr).toBe(3);
    expect(parseJson(s, S.statusOutput).enabled).toBe(false);
  });
});
