// a custom handler that throws while subscribe builds its projection, or applies a batch, fails that projection as sync fails it: recorded, named, the others go on, exit 1
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, scalar, write } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';
import { MESSAGE, notesAndTags, recorded, writeCountingHandler } from '../export/support/counting-handler.ts';

/*
 * `sluice sync` runs each projection in a transaction of its own: when a
 * custom handler throws, that projection's attempt is recorded in the
 * target (a first build gets a row of its own, building, with no cursor),
 * the other projections go on, and sync exits 1 naming the projection and
 * the handler's message; health exits 3 with the failure and the repair.
 * `sluice subscribe` applied the stream's snapshot to every projection in
 * one transaction, so a handler that threw in init rolled back every
 * projection's build, recorded nothing, and exited with INTERNAL. Now the
 * same rule holds for subscribe: the handler's projection is recorded as
 * sync records it, the mirror beside it is built and follows the stream,
 * and the next subscribe with the handler fixed builds it from the
 * snapshot. The same for a handler that throws on a batch's event. A real
 * nats-server, real CLI runs.
 */

const nats = natsForFile();

describe('a custom handler that throws under sluice subscribe', () => {
  test('in its first build: recorded as sync records it, the mirror beside it built, exit 1; fixed, the next subscribe builds it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, tags } = notesAndTags(dir);
      const handler = writeCountingHandler(path.join(dir, 'note-count.mjs'), 'init');
      const sourceId = sourceIdOf(src);
      await publishOnce(src, url);
      const tgt = path.join(dir, 'sub.db');
      const args = ['subscribe', tgt, '--nats', url, '--source', sourceId, '--projection', handler, '--projection', tags];

      const sub = await runCliAsync([...args, '--json']);
      expect(sub.status, sub.stdout + sub.stderr).toBe(1);
      expect(sub.stderr).toContain(`sluice: APPLY_FAILED: projection note_count: ${MESSAGE.init}`);
      expect(sub.stderr).not.toContain('INTERNAL');
      const out = JSON.parse(sub.stdout) as { projections: { name: string; state: string; error?: { code: string; message: string } }[] };
      expect(out.projections.find((p) => p.name === 'note_count')).toMatchObject({
        state: 'building',
        error: { code: 'APPLY_FAILED', message: MESSAGE.init },
      });
      expect(out.projections.find((p) => p.name === 'tags')).toMatchObject({ state: 'active' });
      expect(out.projections.find((p) => p.name === 'tags')?.error).toBeUndefined();
      // What sync records for the same handler, field for field (but the source path, which a subscribed target has not).
      const synced = path.join(dir, 'sync.db');
      const sync = await runCliAsync(['sync', src, synced, '--projection', handler, '--projection', tags]);
      expect(sync.status, sync.stderr).toBe(1);
      expect(recorded(tgt, 'note_count')).toEqual(recorded(synced, 'note_count'));
      expect(recorded(tgt, 'note_count')).toMatchObject({ state: 'building', built: 0, code: 'APPLY_FAILED', message: MESSAGE.init });
      expect(scalar(tgt, 'SELECT count(*) FROM tags')).toBe(1n);
      // The handler's table was not left behind, half made.
      expect(scalar(tgt, "SELECT count(*) FROM sqlite_schema WHERE name = 'note_count' OR name GLOB '_sluice_shadow_*'")).toBe(0n);

      const health = await runCliAsync(['health', tgt, '--nats', url]);
      expect(health.status, health.stdout + health.stderr).toBe(3);
      expect(health.stdout).toContain(`APPLY_FAILED: ${MESSAGE.init}; fix the cause and run sluice subscribe ${tgt} --nats ${url}`);

      // The handler fixed: the next subscribe builds it from the snapshot, and the mirror goes on from its cursor.
      writeCountingHandler(handler);
      write(src, "INSERT INTO notes VALUES (3, 'c'); UPDATE tags SET t = 'y'");
      await publishOnce(src, url);
      const again = await runCliAsync(args);
      expect(again.status, again.stdout + again.stderr).toBe(0);
      expect(recorded(tgt, 'note_count')).toMatchObject({ state: 'active', built: 1, code: null, failures: 0 });
      expect(scalar(tgt, 'SELECT n FROM note_count')).toBe(3n);
      expect(scalar(tgt, 'SELECT t FROM tags')).toBe('y');
    } finally {
      removeDir(dir);
    }
  });

  test("on a batch's event: recorded at its cursor, the mirror applies the batch, exit 1; fixed, the next subscribe goes on from its cursor", async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, tags } = notesAndTags(dir);
      const handler = writeCountingHandler(path.join(dir, 'note-count.mjs'));
      const sourceId = sourceIdOf(src);
      await publishOnce(src, url);
      const tgt = path.join(dir, 'sub.db');
      const args = ['subscribe', tgt, '--nats', url, '--source', sourceId, '--projection', handler, '--projection', tags];
      const first = await runCliAsync(args);
      expect(first.status, first.stdout + first.stderr).toBe(0);
      const seq = Number(scalar(tgt, "SELECT seq FROM _sluice_projections WHERE name = 'note_count'"));

      writeCountingHandler(handler, 'apply');
      write(src, "INSERT INTO notes VALUES (3, 'c'); UPDATE tags SET t = 'y'");
      await publishOnce(src, url);
      const sub = await runCliAsync(args);
      expect(sub.status, sub.stdout + sub.stderr).toBe(1);
      expect(sub.stderr).toContain(`sluice: APPLY_FAILED: projection note_count: ${MESSAGE.apply}`);
      expect(sub.stderr).not.toContain('INTERNAL');
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
