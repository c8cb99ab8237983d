// a subscriber whose source was enabled again rebuilds from the new snapshot with source changed
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, dumpTables, write, onDatabase, scalar } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';
import { enable, disable } from '../../src/capture/index.ts';
import { Publisher, subscribe } from '../../src/broker/index.ts';

/*
 * A source whose capture is disabled and enabled again gets a new source id,
 * and its publisher publishes a new snapshot under it. A subscriber told the
 * new id (--source, or a pipeline file's `source:`) of a target built from
 * the old one rebuilds it from the new snapshot, saying why: SOURCE_CHANGED
 * in its JSON (`rebuilt`), its text and one stderr line, as sync rebuilds a
 * target whose cursor belongs to another source. Before, it stopped with
 * SOURCE_CHANGED ("Import into a new target, or drop the projection's
 * tables first") and the target stayed on the old source. On a stream named
 * with --stream, the publisher of the new id adds its subjects to the stream
 * sluice made (before, it was refused with BROKER_STREAM_SUBJECTS).
 */

const nats = natsForFile();

async function publishOnce(src: string, url: string, options: Parameters<typeof Publisher.open>[2] = {}): Promise<void> {
  const p = await Publisher.open(src, url, options);
  try {
    await p.runOnce();
  } finally {
    await p.close();
  }
}

describe('a subscriber whose source was enabled again', () => {
  test('rebuilds from the new source id snapshot with SOURCE_CHANGED in its JSON and text, and follows the new source', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = trackerSource(path.join(dir, 'app.db'), ['labels']);
      const oldId = sourceIdOf(src);
      const targets = [path.join(dir, 'json.db'), path.join(dir, 'text.db')];
      await publishOnce(src, url);
      for (const t of targets) await subscribe(t, url, { sourceId: oldId });

      onDatabase(src, (db) => {
        disable(db);
        enable(db, ['labels']);
      });
      write(src, "UPDATE labels SET color = x'0102' WHERE rowid = 1");
      const newId = sourceIdOf(src);
      expect(newId).not.toBe(oldId);
      await publishOnce(src, url);

      const [asJson, asText] = await Promise.all([
        runCliAsync(['subscribe', targets[0] as string, '--nats', url, '--source', newId, '--json']),
        runCliAsync(['subscribe', targets[1] as string, '--nats', url, '--source', newId]),
      ]);
      expect(asJson.status, asJson.stderr).toBe(0);
      const r = parseJson(asJson, S.subscribeOutput);
      expect(r.started).toBe('snapshot');
      expect(r.rebuilt).toMatchObject({ reason: 'SOURCE_CHANGED' });
      expect(r.projections.map((p) => [p.name, p.state])).toEqual([['labels', 'active']]);
      expect(asJson.stderr).toMatch(/SOURCE_CHANGED: target .*json\.db follows source .*; rebuilding from the snapshot of source/);
      expect(asText.status, asText.stderr).toBe(0);
      expect(asText.stdout).toContain('(SOURCE_CHANGED)');
      for (const t of targets) {
        expect(dumpTables(t, ['labels'])).toEqual(dumpTables(src, ['labels']));
        expect(scalar(t, "SELECT source_id FROM _sluice_projections WHERE name = 'labels'")).toBe(newId);
      }

      // It follows the new source from there: the next subscribe applies a batch of it, rebuilding nothing.
      write(src, "UPDATE labels SET color = x'0304' WHERE rowid = 2");
      await publishOnce(src, url);
      const next = await subscribe(targets[0] as string, url, { sourceId: newId });
      expect(next.rebuilt).toBeUndefined();
      expect(next.batchesApplied).toBe(1);
      expect(dumpTables(targets[0] as string, ['labels'])).toEqual(dumpTables(src, ['labels']));
    } finally {
      removeDir(dir);
    }
  });

  test('on a stream named with --stream, the publisher adds the new source id to it and the subscriber rebuilds from it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const stream = 'APP_EVENTS';
      const src = trackerSource(path.join(dir, 'app.db'), ['labels']);
      const oldId = sourceIdOf(src);
      const tgt = path.join(dir, 'replica.db');
      await publishOnce(src, url, { stream });
      await subscribe(tgt, url, { sourceId: oldId, stream });
      onDatabase(src, (db) => {
        disable(db);
        enable(db, ['labels']);
      });
      write(src, "UPDATE labels SET color = x'0506' WHERE rowid = 3");
      const newId = sourceIdOf(src);
      const said: string[] = [];
      await publishOnce(src, url, { stream, log: (line) => said.push(line) });
      expect(said.join('\n')).toContain(`added the subjects of source ${newId} (sluice.${newId}.>) to stream ${stream}`);
      const r = await subscribe(tgt, url, { sourceId: newId, stream });
      expect(r.rebuilt).toMatchObject({ reason: 'SOURCE_CHANGED', previousSourceId: oldId });
      expect(dumpTables(tgt, ['labels'])).toEqual(dumpTables(src, ['labels']));
    } finally {
      removeDir(dir);
    }
  });
});
