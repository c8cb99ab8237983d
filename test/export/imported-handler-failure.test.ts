// a custom handler that throws while import builds its projection, or applies a batch, fails that projection as sync fails it: recorded, named, the others go on, exit 1
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, scalar, write } from '../cli/support/cli.ts';
import { MESSAGE, notesAndTags, recorded, writeCountingHandler } from './support/counting-handler.ts';

/*
 * As test/broker/subscribed-handler-failure.test.ts for `sluice import`: a
 * snapshot in the file was one transaction for every projection, so a
 * handler that threw in init took the mirror beside it down too, and
 * nothing was recorded (exit 1, INTERNAL). Now the handler's projection is
 * recorded as sync records it (a building row with its failure), the other
 * projections are built and take the file's batches, the import exits 1
 * naming the projection and the handler's message, health exits 3 with the
 * failure and says to import again, and an import of the same file with
 * the handler fixed builds it. The same for a handler that throws on a
 * batch's event.
 */

describe('a custom handler that throws under sluice import', () => {
  test('in its first build: recorded as sync records it, the mirror beside it built and its batches applied, exit 1; fixed, the file imported again builds it', async () => {
    const dir = makeDir();
    try {
      const { src, tags } = notesAndTags(dir);
      const handler = writeCountingHandler(path.join(dir, 'note-count.mjs'), 'init');
      const file = path.join(dir, 'changes.jsonl');
      const exported = await runCliAsync(['export', src, '--out', file]);
      expect(exported.status, exported.stderr).toBe(0);
      write(src, "INSERT INTO notes VALUES (3, 'c'); UPDATE tags SET t = 'y'");
      expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0); // (its batch, appended)
      const tgt = path.join(dir, 'imp.db');
      const args = ['import', tgt, file, '--projection', handler, '--projection', tags];

      const imp = await runCliAsync([...args, '--json']);
      expect(imp.status, imp.stdout + imp.stderr).toBe(1);
      expect(imp.stderr).toContain(`sluice: APPLY_FAILED: projection note_count: ${MESSAGE.init}`);
      expect(imp.stderr).not.toContain('INTERNAL');
      const out = JSON.parse(imp.stdout) as { projections: { name: string; state: string; error?: { code: string; message: string } }[] };
      expect(out.projections.find((p) => p.name === 'note_count')).toMatchObject({
        state: 'building',
        error: { code: 'APPLY_FAILED', message: MESSAGE.init },
      });
      expect(out.projections.find((p) => p.name === 'tags')?.error).toBeUndefined();
      expect(recorded(tgt, 'note_count')).toMatchObject({
        state: 'building',
        built: 0,
        seq: 0,
        code: 'APPLY_FAILED',
        message: MESSAGE.init,
        failures: 1,
      });
      // The mirror beside it: built, and the file's batch applied.
      expect(scalar(tgt, 'SELECT t FROM tags')).toBe('y');
      expect(scalar(tgt, "SELECT count(*) FROM sqlite_schema WHERE name = 'note_count' OR name GLOB '_sluice_shadow_*'")).toBe(0n);

      const health = await runCliAsync(['health', tgt]);
      expect(health.status, health.stdout + health.stderr).toBe(3);
      expect(health.stdout).toContain(`APPLY_FAILED: ${MESSAGE.init}; fix the cause and run sluice import ${tgt} ${file} again`);
      expect(health.stdout).not.toContain('sluice sync');

      writeCountingHandler(handler);
      const again = await runCliAsync(args);
      expect(again.status, again.stdout + again.stderr).toBe(0);
      expect(recorded(tgt, 'note_count')).toMatchObject({ state: 'active', built: 1, code: null, failures: 0 });
      expect(scalar(tgt, 'SELECT n FROM note_count')).toBe(3n);
    } finally {
      removeDir(dir);
    }
  });

  test('in a rebuild (its version bumped): the projection as it was stays, its row with its cursor and its table, and the failure is recorded in it', async () => {
    const dir = makeDir();
    try {
      const { src, tags } = notesAndTags(dir);
      const handler = writeCountingHandler(path.join(dir, 'note-count.mjs'));
      const file = path.join(dir, 'changes.jsonl');
      expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
      const tgt = path.join(dir, 'imp.db');
      const args = ['import', tgt, file, '--projection', handler, '--projection', tags];
      expect((await runCliAsync(args)).status).toBe(0);
      const row = () =>
        scalar(tgt, "SELECT json_array(fingerprint, cursor, seq, state, definition) FROM _sluice_projections WHERE name = 'note_count'");
      const before = row();

      writeCountingHandler(handler, 'init', '2');
      const imp = await runCliAsync(args);
      expect(imp.status, imp.stdout + imp.stderr).toBe(1);
      expect(imp.stderr).toContain(`sluice: APPLY_FAILED: projection note_count: ${MESSAGE.init}`);
      expect(row()).toBe(before);
      expect(recorded(tgt, 'note_count')).toMatchObject({
        state: 'active',
        built: 1,
        code: 'APPLY_FAILED',
        message: MESSAGE.init,
        failures: 1,
      });
      expect(scalar(tgt, 'SELECT n FROM note_count')).toBe(2n);
      expect(scalar(tgt, "SELECT count(*) FROM sqlite_schema WHERE name GLOB '_sluice_shadow_*'")).toBe(0n);

      writeCountingHandler(handler, undefined, '2');
      const again = await runCliAsync(args);
      expect(again.status, again.stdout + again.stderr).toBe(0);
      expect(row()).not.toBe(before);
      expect(recorded(tgt, 'note_count')).toMatchObject({ state: 'active', code: null, failures: 0 });
      expect(scalar(tgt, 'SELECT n FROM note_count')).toBe(2n);
    } finally {
      removeDir(dir);
    }
  });

  test("on a batch's event: recorded at its cursor, the mirror applies the batch, exit 1; fixed, the file imported again goes on from its cursor", async () => {
    const dir = makeDir();
    try {
      const { src, tags } = notesAndTags(dir);
      const handler = writeCountingHandler(path.join(dir, 'note-count.mjs'));
      const file = path.join(dir, 'changes.jsonl');
      expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
      const tgt = path.join(dir, 'imp.db');
      const args = ['import', tgt, file, '--projection', handler, '--projection', tags];
      expect((await runCliAsync(args)).status).toBe(0);
      const seq = Number(scalar(tgt, "SELECT seq FROM _sluice_projections WHERE name = 'note_count'"));

      writeCountingHandler(handler, 'apply');
      write(src, "INSERT INTO notes VALUES (3, 'c'); UPDATE tags SET t = 'y'");
      expect((await runCliAsync(['export', src, '--out', file])).status).toBe(0);
      const imp = await runCliAsync(args);
      expect(imp.status, imp.stdout + imp.stderr).toBe(1);
      expect(imp.stderr).toContain(`sluice: APPLY_FAILED: projection note_count: ${MESSAGE.apply}`);
      expect(recorded(tgt, 'note_count')).toMatchObject({ state: 'active', built: 1, seq, code: 'APPLY_FAILED', message: MESSAGE.apply });
      expect(scalar(tgt, 'SELECT n FROM note_count')).toBe(2n);
      expect(scalar(tgt, 'SELECT t FROM tags')).toBe('y');

      writeCountingHandler(handler);
      const again = await runCliAsync(args);
      expect(again.status, again.stdout + again.stderr).toBe(0);
      expect(recorded(tgt, 'note_count')).toMatchObject({ state: 'active', code: null, failures: 0 });
      expect(scalar(tgt, 'SELECT n FROM note_count')).toBe(3n);
    } finally {
      removeDir(dir);
    }
  });
});
