// subscribe given a source id the target does not follow moves it only off a stream it was fed from, onto a newer one
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, scalar } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';

/*
 * A source's capture disabled and enabled again has a new id (S2); the old
 * stream (S1) gets nothing more. A target fed by subscribe of S1, told S2,
 * rebuilds from S2's snapshot (SOURCE_CHANGED: source-enabled-again.test.ts).
 * Before, nothing checked the other way round: a target that `sluice sync`
 * moved onto S2 (rows 1..4), given the stale id S1 (an old --source or
 * sluice.yml `source:`), was rebuilt back onto the abandoned stream (rows
 * 1,2), exit 0, health green. Now subscribe moves a target onto another
 * source id only where its projections of the other source were fed by
 * subscribe from a stream, and this stream's snapshot was published after
 * that stream's last one; else it refuses (SOURCE_CHANGED, exit 3, both ids
 * named), writing nothing.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const ids = (file: string) => sqlite3(file, 'SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)').trim();
const sourceOf = (file: string) => String(scalar(file, "SELECT source_id FROM _sluice_projections WHERE name = 't'"));
const cli = (args: readonly string[]) => runCliAsync(args);

/** A source published and subscribed under S1, then disabled and enabled again (S2), with rows 3 and 4 written since. */
async function enabledAgain(dir: string, url: string) {
  const src = path.join(dir, 'src.db');
  const tgt = path.join(dir, 'T.db');
  sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT); INSERT INTO t VALUES(1,'one'),(2,'two');");
  expect((await cli(['enable', src, 't'])).status).toBe(0);
  const s1 = sourceIdOf(src);
  expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
  const first = await cli(['subscribe', tgt, '--nats', url, '--source', s1]);
  expect(first.status, first.stderr).toBe(0);
  expect((await cli(['disable', src])).status).toBe(0);
  expect((await cli(['enable', src, 't'])).status).toBe(0);
  const s2 = sourceIdOf(src);
  expect(s2).not.toBe(s1);
  sqlite3(src, "INSERT INTO t VALUES(3,'three'),(4,'four');");
  return { src, tgt, s1, s2 };
}

describe('subscribe given a source id the target does not follow', () => {
  test('refuses a target sync moved onto the new id, given the old one (SOURCE_CHANGED, exit 3, nothing written)', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, tgt, s1, s2 } = await enabledAgain(dir, url);
      const s = await cli(['sync', src, tgt]);
      expect(s.status, s.stderr).toBe(0);
      expect(ids(tgt)).toBe('1,2,3,4');
      expect(sourceOf(tgt)).toBe(s2);

      const bytes = fs.readFileSync(tgt);
      const r = await cli(['subscribe', tgt, '--nats', url, '--source', s1]);
      expect(r.status, r.stdout + r.stderr).toBe(3);
      expect(fs.readFileSync(tgt).equals(bytes)).toBe(true);
      expect(r.stderr).toContain('SOURCE_CHANGED');
      expect(r.stderr).toContain(s1);
      expect(r.stderr).toContain(s2);
      expect(ids(tgt)).toBe('1,2,3,4');
      expect(sourceOf(tgt)).toBe(s2);
      const v = await cli(['verify', src, tgt]);
      expect(v.status, v.stdout + v.stderr).toBe(0);
    } finally {
      removeDir(dir);
    }
  });

  test('refuses a target subscribe moved onto the new id, given the old one, whose stream was published before', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, tgt, s1, s2 } = await enabledAgain(dir, url);
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      const moved = await cli(['subscribe', tgt, '--nats', url, '--source', s2]);
      expect(moved.status, moved.stderr).toBe(0);
      expect(moved.stderr).toContain('SOURCE_CHANGED');
      expect(ids(tgt)).toBe('1,2,3,4');

      const bytes = fs.readFileSync(tgt);
      const r = await cli(['subscribe', tgt, '--nats', url, '--source', s1]);
      expect(r.status, r.stdout + r.stderr).toBe(3);
      expect(fs.readFileSync(tgt).equals(bytes)).toBe(true);
      expect(r.stderr).toContain('SOURCE_CHANGED');
      expect(r.stderr).toContain(s1);
      expect(r.stderr).toContain(s2);
      expect(ids(tgt)).toBe('1,2,3,4');
      expect(sourceOf(tgt)).toBe(s2);
    } finally {
      removeDir(dir);
    }
  });
});
