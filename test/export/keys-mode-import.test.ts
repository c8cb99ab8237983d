// import of a keys-mode table's export: the mirror that needs images is suspended with NEEDS_IMAGES_MODE and told the source's fix, not "diverged"
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { health, importFile } from '../../src/index.ts';
import { runCliAsync, makeDir, removeDir, scalar } from '../cli/support/cli.ts';

/*
 * A table captured in keys mode records each change's key, not its row
 * images. Its export file's snapshot builds a mirror, and the first batch
 * (events without images) suspended it with NEEDS_IMAGES_MODE and the
 * message "Projection t diverged while importing ... It is suspended;
 * repair or rebuild the target": nothing diverged, and no repair of the
 * target helps. The message now says what happened and names the fix on
 * the source (sluice enable SOURCE t --mode images), then a new export file,
 * whose snapshot rebuilds the mirror; a subscriber is told that its
 * publisher then publishes that snapshot. The repair named works.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

/** A source whose table t is captured in keys mode, exported (its snapshot), changed, and exported again (a batch). */
async function keysModeExport(): Promise<{ src: string; file: string; sourceId: string }> {
  const src = at('a.db');
  runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1, 'a');");
  expect((await runCliAsync(['enable', src, 't', '--mode', 'keys'])).status).toBe(0);
  const file = at('f.jsonl');
  expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
  runSqliteCli(src, "UPDATE t SET v = 'b' WHERE id = 1");
  expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
  const sourceId = String(scalar(src, 'SELECT source_id FROM _sluice_state'));
  return { src, file, sourceId };
}

describe('importing a keys-mode table into a mirror', () => {
  test('NEEDS_IMAGES_MODE names the source fix (enable --mode images) and a new export file, which then rebuilds it', async () => {
    const { src, file } = await keysModeExport();
    const tgt = at('t.db');
    const r = await runCliAsync(['import', tgt, file]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain('NEEDS_IMAGES_MODE');
    expect(r.stderr).not.toContain('diverged');
    expect(r.stderr).not.toContain('repair or rebuild the target');
    expect(r.stderr).toContain('table t is captured in keys mode');
    expect(r.stderr).toContain('sluice enable SOURCE t --mode images');
    expect(r.stderr).toContain('sluice export SOURCE --out NEW_FILE');
    expect(r.stderr).toContain('the batch ending at seq 1');
    expect(health(tgt).projections[0]).toMatchObject({ name: 't', state: 'suspended', reason: 'NEEDS_IMAGES_MODE' });
    // The batch wrote nothing: the rows are the snapshot's.
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 1')).toBe('a');

    // The repair it names.
    expect((await runCliAsync(['enable', src, 't', '--mode', 'images'])).status).toBe(0);
    const fresh = at('g.jsonl');
    expect((await runCliAsync(['export', src, '--out', fresh])).status).toBe(0);
    const again = await runCliAsync(['import', tgt, fresh]);
    expect(again.status, again.stderr).toBe(0);
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 1')).toBe('b');
    expect(health(tgt).projections[0]).toMatchObject({ name: 't', state: 'active' });
  });

  test("a segment's batch of keys-mode events is suspended the same way, beside an images-mode table's", async () => {
    const src = at('a.db');
    runSqliteCli(
      src,
      "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1, 'a'); CREATE TABLE u(id INTEGER PRIMARY KEY, v); INSERT INTO u VALUES(1, 'a');",
    );
    expect((await runCliAsync(['enable', src, 't', '--mode', 'keys'])).status).toBe(0);
    expect((await runCliAsync(['enable', src, 'u'])).status).toBe(0);
    const folder = at('segs');
    expect((await runCliAsync(['export', src, '--out', folder, '--format', 'segment'])).status).toBe(0);
    const tgt = at('t.db');
    const first = await runCliAsync(['import', tgt, folder]);
    expect(first.status, first.stderr).toBe(0);
    runSqliteCli(src, "UPDATE t SET v = 'b' WHERE id = 1; UPDATE u SET v = 'b' WHERE id = 1;");
    expect((await runCliAsync(['export', src, '--out', folder, '--format', 'segment'])).status).toBe(0);
    const r = await runCliAsync(['import', tgt, folder]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain('NEEDS_IMAGES_MODE');
    expect(r.stderr).toContain('table t is captured in keys mode');
    expect(health(tgt).projections.find((p) => p.name === 't')).toMatchObject({ state: 'suspended', reason: 'NEEDS_IMAGES_MODE' });
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 1')).toBe('a');
    // The batch is rolled back as one: u's mirror, active, takes it at the next import.
    expect(health(tgt).projections.find((p) => p.name === 'u')).toMatchObject({ state: 'active' });
    expect(scalar(tgt, 'SELECT v FROM u WHERE id = 1')).toBe('a');
  });

  test('a subscriber is told that its publisher publishes the snapshot once the source is fixed', async () => {
    const { file, sourceId } = await keysModeExport();
    const fedBy = { via: 'subscribe', url: 'nats://127.0.0.1:4222', stream: 'SLUICE_X', sourceId } as const;
    const err = await importFile(at('s.db'), file, { fedBy }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'NEEDS_IMAGES_MODE' });
    const message = (err as Error).message;
    expect(message).not.toContain('diverged');
    expect(message).toContain('sluice enable SOURCE t --mode images');
    expect(message).toContain(`SOURCE: the database of source ${sourceId}`);
    expect(message).toContain('its publisher then publishes a new snapshot');
  });
});
