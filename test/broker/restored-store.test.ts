// publish over a broker store restored from an older copy publishes again what the stream lost, leaving no hole
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, dumpTables, runCliAsync, sourceSeq, projectionSeq } from '../cli/support/cli.ts';
import { COMMENT_WRITER, sourceIdOf } from './support/broker.ts';

/*
 * The broker's store is restored from an older copy (a JetStream backup put
 * back, a server rolled back to an older disk): the stream's last batch is
 * behind the publisher's state file. publish resumed from the state file,
 * the furthest position it knew, and put the next batches on top of the
 * stream's old last batch, exiting 0: a hole in the stream. A new subscriber
 * applied the stream's snapshot and stopped at the hole (BATCH_GAP), and
 * every run again rebuilt from that snapshot into the same hole. Now publish
 * resumes from what the stream holds, says why, and publishes the lost range
 * again.
 */

describe('a broker store restored from an older copy', () => {
  test('publish publishes again the range the stream lost; a new subscriber gets the whole source', async () => {
    const dir = makeDir();
    const store = path.join(dir, 'js');
    const backup = path.join(dir, 'js-backup');
    fs.mkdirSync(store);
    const server = await NatsServer.start({ storeDir: store });
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const publish = async () => {
        const r = await runCliAsync(['publish', src, '--nats', server.url]);
        expect(r.status, r.stderr).toBe(0);
        return r;
      };
      await publish(); // the snapshot
      runPython(COMMENT_WRITER, [src, '3']);
      await publish(); // a batch
      const backedUp = sourceSeq(src);

      await server.stop();
      fs.cpSync(store, backup, { recursive: true }); // a backup of the broker's store
      await server.restart();
      runPython(COMMENT_WRITER, [src, '4']);
      await publish(); // a batch the backup does not hold

      await server.stop();
      fs.rmSync(store, { recursive: true });
      fs.cpSync(backup, store, { recursive: true }); // the store is restored from the backup
      await server.restart();
      runPython(COMMENT_WRITER, [src, '2']);
      const r = await publish();
      expect(r.stderr).toContain(`stream SLUICE_${sid} reaches only seq ${backedUp}`);
      expect(r.stderr).toMatch(/publishing again from there/);

      const tgt = path.join(dir, 'fresh.db');
      const sub = await runCliAsync(['subscribe', tgt, '--nats', server.url, '--source', sid]);
      expect(sub.status, sub.stderr).toBe(0);
      expect(projectionSeq(tgt, 'comments')).toBe(sourceSeq(src));
      expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  }, 120_000);
});
