// health of a subscribed target whose projection failed says to run sluice subscribe again, not sluice sync, which has no source to sync it from
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';
import { enable } from '../../src/capture/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { recordFailure } from '../../src/apply/target/index.ts';
import { health } from '../../src/apply/check/index.ts';

/*
 * A target fed by `sluice subscribe` has no source path: `sluice sync` has
 * nothing to sync it from. health said so for TABLE_UNTRACKED
 * (subscribedRepair), but a projection's failed attempts still said "fix
 * the cause and run sluice sync again" (and a first build that failed or
 * was interrupted "run sluice sync again"). They now give subscribe's
 * command, with the broker, stream and source the target records; for a
 * target sluice run follows (declared in its file), that run retries it.
 * The target is made by a real subscribe from a real nats-server; its
 * failed attempt is recorded by the target's own recorder (recordFailure,
 * what sync records one with; subscribe records a custom handler's failure
 * the same way: subscribed-handler-failure.test.ts).
 */

const nats = natsForFile();

describe('health of a subscribed target', () => {
  test('failed attempts say to fix the cause and run sluice subscribe again, naming its broker, stream and source', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'app.db');
      const tgt = path.join(dir, 'cache.db');
      runSqliteCli(src, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'ok');");
      const db = openDatabase(src);
      try {
        enable(db, ['items']);
      } finally {
        db.close();
      }
      const sourceId = sourceIdOf(src);
      await publishOnce(src, url);
      const sub = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sourceId]);
      expect(sub.status, sub.stderr).toBe(0);
      const t = openDatabase(tgt);
      try {
        recordFailure(t, 'main', 'items', 'APPLY_FAILED', 'the handler refused boom');
      } finally {
        t.close();
      }

      const out = await runCliAsync(['health', tgt, '--nats', url]);
      expect(out.status, out.stdout + out.stderr).toBe(3);
      expect(out.stdout).toContain(
        `APPLY_FAILED: the handler refused boom; fix the cause and run sluice subscribe ${tgt} --nats ${url} --stream SLUICE_${sourceId} --source ${sourceId} again`,
      );
      expect(out.stdout).not.toContain('sluice sync');
      // Followed by sluice run (a declared subscription): run retries it.
      const byRun = health(tgt, { followedByRun: true }).projections.find((p) => p.name === 'items');
      expect(byRun?.problems.join('\n')).toContain('fix the cause and sluice run tries it again by itself');
    } finally {
      removeDir(dir);
    }
  });
});
