// a subscriber of a format the stream holds none of the source's batches in is refused, naming the formats it holds and the fix
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';
import { defaultStreamName } from '../../src/broker/index.ts';

/*
 * A source published with `--format segment` alone, and a subscriber of the
 * default format (JSONL: a pipeline's subscribe entry without `format:`).
 * It applied the snapshot, then found no JSONL batch: "applied 0 batches",
 * exit 0, nothing on stderr, on every run for ever (--follow: "nothing
 * received yet"), the target never moving. Now, where the stream holds the
 * source's last batches only in another format (two or more after its
 * format's last one, or with none of it: one may be a window whose other
 * message is still on its way), subscribe stops with
 * BROKER_FORMAT_NOT_PUBLISHED, naming the stream, the format it holds and
 * the fix, and applies nothing.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });

describe('a subscriber of a format the publisher does not publish', () => {
  test('is refused with BROKER_FORMAT_NOT_PUBLISHED, one-shot and --follow, and --format segment applies the stream', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a');");
      expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
      const sid = sourceIdOf(src);
      await publishOnce(src, url, { formats: ['segment'] });
      for (const id of [2, 3, 4]) {
        sqlite3(src, `INSERT INTO t VALUES(${id},'x');`);
        await publishOnce(src, url, { formats: ['segment'] });
      }
      const target = path.join(dir, 'j.db');
      const stream = defaultStreamName(sid);
      for (const follow of [[], ['--follow']]) {
        const r = await runCliAsync(['subscribe', target, '--nats', url, '--source', sid, ...follow]);
        expect(r.status, r.stdout + r.stderr).toBe(1);
        expect(r.stderr).toMatch(/^sluice: BROKER_FORMAT_NOT_PUBLISHED: /);
        expect(r.stderr).toContain(`Stream ${stream}`);
        expect(r.stderr).toContain('only as segment');
        expect(r.stderr).toContain('--format segment');
      }
      const ok = await runCliAsync(['subscribe', target, '--nats', url, '--source', sid, '--format', 'segment']);
      expect(ok.status, ok.stderr).toBe(0);
      expect(sqlite3(target, 'SELECT group_concat(id) FROM t').trim()).toBe('1,2,3,4');
    } finally {
      removeDir(dir);
    }
  });
});
