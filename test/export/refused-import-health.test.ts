// a file import refuses is recorded on the projections it concerns, so health exits 3 naming it with a repair for an imported target, until an import succeeds
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, runCliOk as ok, parseJson, makeDir, removeDir, dumpTables, scalar } from '../cli/support/cli.ts';

/*
 * A target fed by `sluice import` (a file `sluice export` wrote on another
 * machine): when import refused a file (its events start past the target's
 * cursor, it does not continue the target's history, it is of another
 * source, a changed definition without a snapshot), it exited non-zero with
 * nothing applied, and `sluice health` of the target stayed green, so a
 * cron job that ignores import's exit code had a stale target that looked
 * fine. sync records a failed pass on each projection it concerns
 * (failure: code, message, time, consecutive) and health exits 3 with it.
 * Now import records a refused file the same way, without touching a row or
 * a cursor; health names the projection, the code and a repair that fits an
 * imported target (an export file, `sluice import`, never `sluice sync`),
 * and the next import that succeeds clears it (a BATCH_GAP only one that
 * moves the projection on: an older file imported again fills no gap).
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

async function healthOf(tgt: string) {
  const json = await runCliAsync(['health', tgt, '--json']);
  const text = await runCliAsync(['health', tgt]);
  return { status: json.status, textStatus: text.status, h: parseJson(json, S.healthOutput), text: text.stdout };
}

/** Everything import must leave alone when it refuses a file: the rows and each projection's cursor. */
function held(tgt: string): unknown {
  return {
    rows: dumpTables(tgt, ['t']),
    cursors: scalar(tgt, "SELECT group_concat(name || '@' || seq || ':' || cursor || ':' || state, ' ') FROM _sluice_projections"),
  };
}

/** A source with table t(id, v), captured, holding `rows`. */
/** `sluice import tgt file` refused with exit 3 and `code`, the target's rows as they were, and health exit 3 with `code` recorded on t: its health. */
async function refusedAndRecorded(tgt: string, file: string, code: string) {
  const before = held(tgt);
  const r = await runCliAsync(['import', tgt, file]);
  expect(r.status, r.stdout + r.stderr).toBe(3);
  expect(r.stderr).toContain(code);
  expect(held(tgt)).toEqual(before);
  const { status, h } = await healthOf(tgt);
  expect(status).toBe(3);
  const p = h.projections[0];
  expect(p).toMatchObject({ name: 't', failure: { code } });
  return p;
}

async function source(file: string, rows: string): Promise<string> {
  runSqliteCli(file, `CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES ${rows};`);
  await ok(['enable', file, 't']);
  return file;
}

/** Exports `src` into `out` (appended to, as a cron job's export does) and returns the cursor it ends at. */
async function exported(src: string, out: string, ...flags: string[]): Promise<string> {
  return parseJson(await ok(['export', src, '--out', out, '--json', ...flags]), S.exportOutput).cursor as string;
}

describe('a refused import makes health exit 3 until an import succeeds', () => {
  test('a file whose events start past the target cursor (BATCH_GAP): recorded, health names it and a repair by import; importing the missing events clears it', async () => {
    const src = await source(at('a.db'), "(1, 'a')");
    const tgt = at('t.db');
    const full = at('full.jsonl');
    await exported(src, full);
    await ok(['import', tgt, full]);
    // The export goes on (the cron's file grows), but a file of its later events alone reaches the target first.
    runSqliteCli(src, "INSERT INTO t VALUES (2, 'b')");
    const mid = await exported(src, full);
    runSqliteCli(src, "INSERT INTO t VALUES (3, 'c')");
    const later = at('later.jsonl');
    await exported(src, later, '--since', mid);

    const before = held(tgt);
    const r = await runCliAsync(['import', tgt, later]);
    expect(r.status, r.stdout + r.stderr).toBe(3);
    expect(r.stderr).toContain('BATCH_GAP');
    expect(r.stderr).toContain('Import the export file that holds them first');
    expect(r.stderr).not.toContain('sync from the stored cursor');
    expect(held(tgt)).toEqual(before);

    const { status, textStatus, h, text } = await healthOf(tgt);
    expect(status, JSON.stringify(h)).toBe(3);
    expect(textStatus).toBe(3);
    const p = h.projections.find((x) => x.name === 't');
    expect(p).toMatchObject({ needsAction: true, state: 'active', failure: { code: 'BATCH_GAP', consecutive: 1 } });
    expect(p?.failure?.message).toContain(later);
    expect(p?.action).toContain('BATCH_GAP');
    expect(p?.action).toContain('sluice import');
    expect(p?.action).toContain('sluice export SOURCE --out NEW_FILE');
    expect(p?.action).not.toContain('sluice sync');
    expect(p?.action).not.toContain('sync attempt');
    expect(text).toContain('t [mirror]');
    expect(text).toContain('BATCH_GAP');

    // Refused again: counted.
    expect((await runCliAsync(['import', tgt, later])).status).toBe(3);
    expect((await healthOf(tgt)).h.projections[0]?.failure).toMatchObject({ code: 'BATCH_GAP', consecutive: 2 });
    expect(held(tgt)).toEqual(before);

    // The repair: the file that holds the missing events, then the later one.
    await ok(['import', tgt, full]);
    await ok(['import', tgt, later]);
    const after = await healthOf(tgt);
    expect(after.status, JSON.stringify(after.h)).toBe(0);
    expect(after.h.projections[0]).toMatchObject({ name: 't', failure: null, needsAction: false, seq: 2 });
    expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
  });

  test('a BATCH_GAP stands through an import that adds nothing (an older file imported again): the target still lacks those events', async () => {
    const src = await source(at('a.db'), "(1, 'a')");
    const tgt = at('t.db');
    const full = at('full.jsonl');
    await exported(src, full);
    await ok(['import', tgt, full]);
    fs.copyFileSync(full, at('old.jsonl'));
    runSqliteCli(src, "INSERT INTO t VALUES (2, 'b')");
    const mid = await exported(src, full);
    runSqliteCli(src, "INSERT INTO t VALUES (3, 'c')");
    const later = at('later.jsonl');
    await exported(src, later, '--since', mid);
    await refusedAndRecorded(tgt, later, 'BATCH_GAP');

    // The cron's old file again: every batch of it already applied, exit 0, and the gap is still there.
    const again = await ok(['import', tgt, at('old.jsonl'), '--json']);
    expect(parseJson(again, S.importOutput).batchesApplied).toBe(0);
    const still = await healthOf(tgt);
    expect(still.status, JSON.stringify(still.h)).toBe(3);
    expect(still.h.projections[0]).toMatchObject({ name: 't', failure: { code: 'BATCH_GAP' }, seq: 0 });

    // The file that holds the missing events moves the target on: that clears it.
    await ok(['import', tgt, full]);
    expect((await healthOf(tgt)).status).toBe(0);
    await ok(['import', tgt, later]);
    expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
  });

  test('batches of a copy of the source (FILE_CHANGED): recorded without a row or cursor changed; a new export file with a snapshot clears it', async () => {
    const app = await source(at('app.db'), "(1, 'a'), (2, 'b')");
    runSqliteCli(app, 'PRAGMA wal_checkpoint(TRUNCATE)');
    const staging = at('staging.db');
    fs.copyFileSync(app, staging);
    runSqliteCli(app, "UPDATE t SET v = 'prod' WHERE id = 1; INSERT INTO t VALUES (3, 'p3');");
    runSqliteCli(staging, "DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (9, 's9');");
    const tgt = at('t.db');
    await exported(app, at('app.jsonl'));
    await ok(['import', tgt, at('app.jsonl')]);
    const first = await exported(staging, at('s1.jsonl'));
    runSqliteCli(staging, "INSERT INTO t VALUES (10, 's10')");
    const batches = at('s2.jsonl');
    await exported(staging, batches, '--since', first);

    const p = await refusedAndRecorded(tgt, batches, 'FILE_CHANGED');
    expect(p?.action).toContain('sluice export SOURCE --out NEW_FILE');
    expect(p?.action).not.toContain('sluice sync');

    // A new export of the copy starts with a snapshot: it rebuilds t, and the failure is gone.
    const fresh = at('fresh.jsonl');
    await exported(staging, fresh);
    await ok(['import', tgt, fresh]);
    const after = await healthOf(tgt);
    expect(after.status, JSON.stringify(after.h)).toBe(0);
    expect(after.h.projections[0]?.failure).toBeNull();
    expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(staging, ['t']));
  });

  test("a file of another source (SOURCE_CHANGED) is recorded on the target's projections, naming both ways out", async () => {
    const a = await source(at('a.db'), "(1, 'a')");
    const tgt = at('t.db');
    await exported(a, at('a.jsonl'));
    await ok(['import', tgt, at('a.jsonl')]);
    const b = await source(at('b.db'), "(7, 'x')");
    await exported(b, at('b.jsonl'));

    const p = await refusedAndRecorded(tgt, at('b.jsonl'), 'SOURCE_CHANGED');
    expect(p?.action).toContain('into a new target');
    expect(p?.action).not.toContain('sluice sync');

    // The next file of its own source goes on, and clears it (though it holds nothing new).
    await ok(['import', tgt, at('a.jsonl')]);
    expect((await healthOf(tgt)).status).toBe(0);
  });

  test('a changed definition and a file without a snapshot (IMPORT_NO_SNAPSHOT): recorded, the definition and rows kept; the file with the old definition clears it', async () => {
    const src = at('a.db');
    runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, flag); INSERT INTO t VALUES(1,'a',1),(2,'b',0);");
    await ok(['enable', src, 't']);
    const cursor = await exported(src, at('f.jsonl'));
    const m1 = at('m1.json');
    const m2 = at('m2.json');
    const m = { name: 'm', source: 't', kind: 'map', columns: { k: 'id', val: 'v' }, filter: 'flag = 1' };
    fs.writeFileSync(m1, JSON.stringify(m));
    fs.writeFileSync(m2, JSON.stringify({ ...m, filter: 'flag = 0' }));
    const tgt = at('t.db');
    await ok(['import', tgt, at('f.jsonl'), '--projection', m1]);
    runSqliteCli(src, "INSERT INTO t VALUES(3,'c',0),(4,'d',1)");
    const since = at('g.jsonl');
    await exported(src, since, '--since', cursor);

    const stored = () => scalar(tgt, "SELECT seq || ' ' || definition || ' ' || (SELECT group_concat(k) FROM m) FROM _sluice_projections");
    const before = stored();
    const r = await runCliAsync(['import', tgt, since, '--projection', m2]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('IMPORT_NO_SNAPSHOT');
    expect(stored()).toBe(before);
    const { status, h } = await healthOf(tgt);
    expect(status).toBe(3);
    expect(h.projections[0]).toMatchObject({ name: 'm', failure: { code: 'IMPORT_NO_SNAPSHOT' } });
    expect(h.projections[0]?.action).not.toContain('sluice sync');

    await ok(['import', tgt, since, '--projection', m1]);
    const after = await healthOf(tgt);
    expect(after.status, JSON.stringify(after.h)).toBe(0);
  });

  test('segments: a folder of segments whose events start past the target cursor is recorded too', async () => {
    const src = await source(at('a.db'), "(1, 'a')");
    const tgt = at('t.db');
    const segs = at('segs');
    await exported(src, segs, '--format', 'segment');
    await ok(['import', tgt, segs]);
    runSqliteCli(src, "INSERT INTO t VALUES (2, 'b')");
    const mid = await exported(src, segs, '--format', 'segment');
    runSqliteCli(src, "INSERT INTO t VALUES (3, 'c')");
    const later = at('later');
    await exported(src, later, '--format', 'segment', '--since', mid);
    await refusedAndRecorded(tgt, later, 'BATCH_GAP');
    await ok(['import', tgt, segs]);
    await ok(['import', tgt, later]);
    expect((await healthOf(tgt)).status).toBe(0);
    expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
  });
});
