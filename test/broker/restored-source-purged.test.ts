// a target fed by sync and subscribe of a restored source that leaves a column out is rebuilt, though publish purged the old batches
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson } from '../cli/support/cli.ts';
import { defaultStreamName, natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';

/*
 * A target fed both by sync and by subscribe of one source; the source is
 * restored from a backup taken at seq 1, and its publisher publishes a
 * snapshot at the restored seq (SEQ_REGRESSED). A subscriber tells a source
 * that went back from a stream that is merely behind a target sync brought
 * further by whether the stream had got to the target's seq before that
 * snapshot. The old batches showed it; but a source that leaves a column out
 * of capture (--exclude) has them purged once the new snapshot is out, and
 * the subscriber, seeing no stream that got there, went on from its own
 * cursor: exit 0, keeping rows 10, 11 and 12 that the source no longer has.
 * The snapshot's end now says how far the history it replaces had got
 * (Sluice-Replaces-Seq), so the target is rebuilt as it is without
 * --exclude.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const ids = (file: string) => sqlite3(file, 'SELECT group_concat(id) FROM t').trim();

describe('a target synced and subscribed from a source restored from an older copy', () => {
  for (const exclude of [[], ['secret']])
    test(`is rebuilt from the snapshot at the restored seq ${exclude.length === 0 ? 'with every column captured' : 'with a column left out (the old batches purged)'}`, async () => {
      const dir = makeDir();
      try {
        const url = nats.server().url;
        const cli = async (...args: string[]) => {
          const r = await runCliAsync(args);
          expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
          return r;
        };
        const src = path.join(dir, 'src.db');
        const tgt = path.join(dir, 'tgt.db');
        const backup = path.join(dir, 'backup.db');
        sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, secret); INSERT INTO t VALUES(1,'a','s');");
        await cli('enable', src, 't', ...(exclude.length === 0 ? [] : ['--exclude', exclude.join(',')]));
        const sid = sourceIdOf(src);
        sqlite3(src, "INSERT INTO t VALUES(2,'b','s');"); // seq 1
        sqlite3(src, 'PRAGMA wal_checkpoint(TRUNCATE);');
        fs.copyFileSync(src, backup);
        sqlite3(src, "INSERT INTO t VALUES(10,'old','s'); INSERT INTO t VALUES(11,'old','s');"); // seq 2, 3
        await cli('publish', src, '--nats', url);
        await cli('subscribe', tgt, '--nats', url, '--source', sid);
        await cli('sync', src, tgt);
        sqlite3(src, "INSERT INTO t VALUES(12,'old','s');"); // seq 4
        await cli('sync', src, tgt);
        await cli('publish', src, '--nats', url);
        expect(ids(tgt)).toBe('1,2,10,11,12');

        fs.copyFileSync(backup, src); // restored in place, as cp does
        for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
        const pub = await cli('publish', src, '--nats', url);
        expect(pub.stderr).toMatch(/snapshot at seq 1 .*SEQ_REGRESSED/);
        // With a column left out, the stream holds the new snapshot alone: no batch of the old history is left.
        const kept = (await streamMessages(url, defaultStreamName(sid))).map((m) => m.subject.split('.').slice(2).join('.'));
        if (exclude.length > 0) expect(kept.filter((s) => s !== 'snapshot.part')).toEqual(['snapshot.end']);
        else expect(kept).toContain('batch');

        const r = await cli('subscribe', tgt, '--nats', url, '--source', sid, '--json');
        const out = parseJson(r, S.subscribeOutput);
        expect(out.started).toBe('snapshot');
        expect(out.rebuilt).toMatchObject({ reason: 'SEQ_REGRESSED', targetSeq: 4, snapshotSeq: 1 });
        expect(ids(tgt)).toBe('1,2');
        expect(ids(src)).toBe('1,2');
      } finally {
        removeDir(dir);
      }
    });
});
