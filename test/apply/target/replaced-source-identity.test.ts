// a sync or export whose source was replaced after it opened it stamps no cursor with the new files identity
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { readProjection, TARGET_SCHEMA } from '../../../src/apply/target/index.ts';
import { decodeCursor } from '../../../src/feed/index.ts';
import { exportOnce, type LineWriter } from '../../../src/export/index.ts';
import { enable, openSource } from '../../../src/capture/index.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { SluiceError } from '../../../src/errors.ts';

/*
 * The one-shot half of a source swapped in under a reader (VACUUM INTO a
 * copy, then a rename over the live file): a sync or an export that opened
 * the old file reads it to the end of its run. The cursors it makes must
 * name that file, never the one the path names by the time it makes them
 * (a later run would take them for the new file's and skip what it lacks):
 * a reader whose source path names another file than the one it holds
 * stops with SOURCE_REPLACED and commits no cursor.
 */

const SCHEMA = 'CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)';

function writeRows(db: Db, from: number, to: number, tag: string): void {
  const ins = db.prepare('INSERT OR REPLACE INTO t(id, v) VALUES (?, ?)');
  for (let i = from; i < to; i++) ins.run(i, `${tag}${i}`);
}

/** The live file at `file` is replaced by a copy made before the rows [from, to) were written to it. */
function swapInStaleCopy(file: string, from: number, to: number): { readonly oldIno: string; readonly newIno: string } {
  const dir = path.dirname(file);
  const copy = path.join(dir, `${path.basename(file)}.copy`);
  const w = openDatabase(file);
  try {
    w.prepare('VACUUM INTO ?').run(copy);
    writeRows(w, from, to, 'old');
    // Into the old file itself: its -wal keeps its name across the rename, and SQLite would read frames left there as the new file's pages.
    w.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    w.close();
  }
  const oldIno = fs.statSync(file, { bigint: true }).ino.toString();
  fs.renameSync(copy, file);
  return { oldIno, newIno: fs.statSync(file, { bigint: true }).ino.toString() };
}

function expectReplaced(err: unknown, file: string): void {
  expect(err).toBeInstanceOf(SluiceError);
  expect((err as SluiceError).code).toBe('SOURCE_REPLACED');
  expect((err as SluiceError).message).toContain(file);
}

describe('a source replaced after a one-shot reader opened it', () => {
  test('sync: the run stops with SOURCE_REPLACED, the stored cursor still names the old file, and the next sync rebuilds from the new one', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t']);
    writeRows(db, 1, 101, 'a');
    db.close();
    const target = path.join(tmp, 'cache.db');
    await sync(file, target);
    const s = await Syncer.open(file, target);
    let err: unknown;
    let swap: { oldIno: string; newIno: string };
    try {
      swap = swapInStaleCopy(file, 101, 116);
      await s.runOnce().catch((e: unknown) => (err = e));
      const rec = readProjection(s.session.db, TARGET_SCHEMA, 't');
      expect(decodeCursor(rec?.cursor as string).file?.ino).toBe(swap.oldIno);
      expect(rec?.failures).toBeGreaterThan(0);
    } finally {
      s.close();
    }
    expectReplaced(err, file);
    const again = await sync(file, target);
    expect(again.projections[0]?.rebuilt).toBe('FILE_CHANGED');
    const [src, tgt] = [openDatabase(file, { readonly: true }), openDatabase(target, { readonly: true })];
    try {
      const rows = (d: Db) => d.prepare('SELECT id, v FROM t ORDER BY id').all();
      expect(rows(tgt)).toEqual(rows(src));
      expect(rows(src)).toHaveLength(100); // the copy has none of the old file's last 15 rows
    } finally {
      src.close();
      tgt.close();
    }
  });

  test('export: the batch read from the old file is not written and no cursor names the new file', ({ makeDb }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t']);
    writeRows(db, 1, 11, 'a');
    db.close();
    const lines: string[] = [];
    const sink: LineWriter = {
      write: (obj) => {
        const line = `${JSON.stringify(obj)}\n`;
        lines.push(line);
        return line;
      },
      flush: () => {},
    };
    const cursors: string[] = [];
    const reader = openSource(file, { readonly: true });
    try {
      const first = exportOnce(reader, sink, {}, (c) => cursors.push(c));
      const swap = swapInStaleCopy(file, 11, 16);
      const written = lines.length;
      let err: unknown;
      try {
        exportOnce(reader, sink, { since: first.cursor }, (c) => cursors.push(c));
      } catch (e) {
        err = e;
      }
      expectReplaced(err, file);
      expect(cursors.map((c) => decodeCursor(c).file?.ino)).toEqual(cursors.map(() => swap.oldIno));
      expect(lines.slice(written).join('')).not.toContain('"batch"');
    } finally {
      reader.close();
    }
  });
});
