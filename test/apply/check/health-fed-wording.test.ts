// health words a projection's failed attempts and its NEEDS_IMAGES_MODE repair by how it is fed: imports of files, a subscriber's runs, or syncs
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { health, importFile } from '../../../src/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { recordFailure } from '../../../src/apply/target/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, scalar, write } from '../../cli/support/cli.ts';
import { MESSAGE, notesAndTags, writeCountingHandler } from '../../export/support/counting-handler.ts';

/*
 * A target only `sluice import` feeds (the projections table's fed_by says
 * so) was told of "the last 2 consecutive sync attempts", and of a
 * NEEDS_IMAGES_MODE suspension "then run sluice sync again": it has no
 * source to sync from. Now health words them by how the projection is fed:
 * imports into it (an import's repair: the file again, or a new export
 * file, `sluice import`), a subscriber's runs (`sluice subscribe`, and the
 * publisher's new snapshot), and a sync's attempts as before.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

async function healthCli(tgt: string) {
  const json = await runCliAsync(['health', tgt, '--json']);
  const text = await runCliAsync(['health', tgt]);
  expect(text.status).toBe(json.status);
  return { status: json.status, h: parseJson(json, S.healthOutput), text: text.stdout };
}

/** A source whose table t is captured in keys mode, exported with its snapshot, changed, and exported again (a batch of events without images). */
async function keysModeExport(): Promise<{ src: string; file: string; sourceId: string }> {
  const src = at('a.db');
  runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1, 'a');");
  expect((await runCliAsync(['enable', src, 't', '--mode', 'keys'])).status).toBe(0);
  const file = at('f.jsonl');
  expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
  runSqliteCli(src, "UPDATE t SET v = 'b' WHERE id = 1");
  expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
  return { src, file, sourceId: String(scalar(src, 'SELECT source_id FROM _sluice_state')) };
}

describe('an imported target', () => {
  test("failed imports are counted as imports, with the import's repair, never a sync", async () => {
    const { src, tags } = notesAndTags(dir);
    const handler = writeCountingHandler(at('note-count.mjs'));
    const file = at('changes.jsonl');
    expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
    const tgt = at('imp.db');
    const args = ['import', tgt, file, '--projection', handler, '--projection', tags];
    expect((await runCliAsync(args)).status).toBe(0);
    writeCountingHandler(handler, 'apply');
    write(src, "INSERT INTO notes VALUES (3, 'c')");
    expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);

    expect((await runCliAsync(args)).status).toBe(1);
    const once = await healthCli(tgt);
    expect(once.status).toBe(3);
    expect(once.text).toContain(`the last import into it failed (last at `);
    expect(once.text).toContain(`APPLY_FAILED: ${MESSAGE.apply}; fix the cause and run sluice import ${tgt} ${file} again`);

    expect((await runCliAsync(args)).status).toBe(1);
    const twice = await healthCli(tgt);
    const p = twice.h.projections.find((x) => x.name === 'note_count');
    expect(p?.failure).toMatchObject({ code: 'APPLY_FAILED', consecutive: 2 });
    expect(p?.action).toMatch(/^the last 2 consecutive imports into it failed \(last at [^)]+\): APPLY_FAILED: /);
    for (const said of [twice.text, JSON.stringify(twice.h)]) {
      expect(said).not.toContain('sync attempt');
      expect(said).not.toContain('sluice sync');
    }
  });

  test('NEEDS_IMAGES_MODE names the source fix, a new export file and sluice import into this target, and that repair turns it green', async () => {
    const { src, file } = await keysModeExport();
    const tgt = at('t.db');
    expect((await runCliAsync(['import', tgt, file])).status).toBe(3);
    const { status, h, text } = await healthCli(tgt);
    expect(status).toBe(3);
    const p = h.projections[0];
    expect(p).toMatchObject({ name: 't', state: 'suspended', reason: 'NEEDS_IMAGES_MODE', failure: null });
    expect(p?.action).toContain('NEEDS_IMAGES_MODE');
    expect(p?.action).toContain('sluice enable SOURCE t --mode images');
    expect(p?.action).toContain('sluice export SOURCE --out NEW_FILE');
    expect(p?.action).toContain(`sluice import ${tgt} NEW_FILE`);
    expect(p?.action).not.toContain('sluice sync');
    expect(text).toContain(`sluice import ${tgt} NEW_FILE`);
    expect(text).not.toContain('sluice sync');

    // The repair it names.
    expect((await runCliAsync(['enable', src, 't', '--mode', 'images'])).status).toBe(0);
    const fresh = at('g.jsonl');
    expect((await runCliAsync(['export', src, '--out', fresh])).status).toBe(0);
    const again = await runCliAsync(['import', tgt, fresh]);
    expect(again.status, again.stderr).toBe(0);
    const after = await healthCli(tgt);
    expect(after.status, JSON.stringify(after.h)).toBe(0);
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 1')).toBe('b');
  });
});

describe('a subscribed target', () => {
  const fedBy = (sourceId: string) => ({ via: 'subscribe', url: 'nats://127.0.0.1:4222', stream: `SLUICE_${sourceId}`, sourceId }) as const;

  test("NEEDS_IMAGES_MODE names the source fix and the publisher's new snapshot that subscribe rebuilds from, not a sync", async () => {
    const { file, sourceId } = await keysModeExport();
    const tgt = at('s.db');
    await expect(importFile(tgt, file, { fedBy: fedBy(sourceId) })).rejects.toMatchObject({ code: 'NEEDS_IMAGES_MODE' });
    const p = health(tgt).projections[0];
    expect(p).toMatchObject({ name: 't', state: 'suspended', reason: 'NEEDS_IMAGES_MODE' });
    expect(p?.action).toContain('sluice enable SOURCE t --mode images');
    expect(p?.action).toContain(`SOURCE: the database of source ${sourceId}`);
    expect(p?.action).toContain('its publisher then publishes a new snapshot');
    expect(p?.action).toContain('sluice subscribe rebuilds t from it');
    expect(p?.action).not.toContain('sluice sync');
    expect(p?.action).not.toContain('sluice import');
  });

  test("failed attempts are counted as subscribe runs, with subscribe's command", async () => {
    const { src } = notesAndTags(dir);
    const file = at('changes.jsonl');
    expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
    const sourceId = String(scalar(src, 'SELECT source_id FROM _sluice_state'));
    const tgt = at('s.db');
    await importFile(tgt, file, { fedBy: fedBy(sourceId), projections: [{ name: 'tags', source: 'tags', kind: 'mirror' }] });
    const db = openDatabase(tgt);
    try {
      recordFailure(db, 'main', 'tags', 'APPLY_FAILED', 'boom');
      recordFailure(db, 'main', 'tags', 'APPLY_FAILED', 'boom');
    } finally {
      db.close();
    }
    const p = health(tgt).projections.find((x) => x.name === 'tags');
    expect(p?.problems[0]).toMatch(
      /^the last 2 consecutive subscribe runs failed \(last at [^)]+\): APPLY_FAILED: boom; fix the cause and run sluice subscribe /,
    );
    expect(p?.problems.join('\n')).not.toContain('sync attempt');
  });
});

describe('a synced target', () => {
  test('failed attempts are still sync attempts, with the sync to run again', async () => {
    const src = at('a.db');
    runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1, 'a');");
    expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
    const tgt = at('t.db');
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    const db = openDatabase(tgt);
    try {
      recordFailure(db, 'main', 't', 'APPLY_FAILED', 'boom');
    } finally {
      db.close();
    }
    const p = health(tgt).projections[0];
    expect(p?.action).toMatch(
      /^the last 1 consecutive sync attempt failed \(last at [^)]+\): APPLY_FAILED: boom; fix the cause and run sluice sync again$/,
    );
  });
});
