// a snapshot streams exact bytes whatever the table shape
import { test, expect, describe } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { snapshot } from '../../src/feed/index.ts';
import { ReplayModel } from './support/replay.ts';

/*
 * The driver turns malformed UTF-8 into U+FFFD, so the snapshot re-reads such
 * cells as bytes, by rowid or by key. These shapes make that re-read hard:
 * the key itself is malformed, or a user column hides the name `rowid`.
 */
const SHAPES: Record<string, string> = {
  'a WITHOUT ROWID table keyed by malformed TEXT': 'CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v, w TEXT) WITHOUT ROWID',
  'a composite WITHOUT ROWID key, one part malformed':
    'CREATE TABLE t (k TEXT NOT NULL, n INTEGER NOT NULL, v, w TEXT, PRIMARY KEY (k, n)) WITHOUT ROWID',
  'a rowid table with a column named rowid': 'CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v, w TEXT, rowid TEXT)',
  'a rowid table whose columns take every rowid alias':
    'CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v, w TEXT, rowid TEXT, _rowid_ TEXT, oid TEXT)',
};

describe('snapshot', () => {
  test.for(Object.entries(SHAPES))('keeps malformed UTF-8 as bytes in %s', ([, ddl], { makeDb }) => {
    const { db } = makeDb('s.db', ddl);
    const cols = db.prepare("SELECT name FROM pragma_table_info('t')").pluck().all() as string[];
    const bad = (i: number) => Buffer.from([0x61, 0xff, 0xfe, i]);
    db.transaction(() => {
      for (let i = 0; i < 20; i++) {
        const values = cols.map((c) =>
          c === 'n' ? BigInt(i % 3) : c === 'k' ? (i % 2 === 0 ? bad(i) : Buffer.from(`key${i}`)) : c === 'v' ? i : bad(100 + i),
        );
        const placeholders = cols.map((c) => (c === 'n' || c === 'v' ? '?' : 'CAST(? AS TEXT)'));
        db.prepare(`INSERT INTO t (${cols.map((c) => `"${c}"`).join(', ')}) VALUES (${placeholders.join(', ')})`).run(...values);
      }
    })();
    enable(db, ['t']);
    const model = new ReplayModel();
    const snap = snapshot(db, ['t'], { onTable: (t) => model.table(t), onRow: (t, r) => model.snapshotRow(t, r) });
    expect(snap.rows).toBe(20);
    expect(model.diff(db)).toEqual([]);
  });
});
