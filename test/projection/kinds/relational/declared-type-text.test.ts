import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { cli, exportBothFormats, makeSource, tableCells } from '../../../apply/support/target.ts';

/*
 * SQLite takes any quoted string as a column's declared type: `v 'TEXT) --'`
 * declares the type `TEXT) --`. Spliced into a target's CREATE TABLE as it
 * reads, it commented the PRIMARY KEY away (updates then added rows, exit 0),
 * and a type carrying statements ran them in the target, from a source or
 * from an export file or segment (untrusted input). The target must keep
 * its key, read back the same declared types, and hold no other object.
 */

const SCHEMA = `
  CREATE TABLE t (id INTEGER PRIMARY KEY, v 'TEXT) --', w 'INT); CREATE TABLE pwned (x); --', n "NUMERIC(10, 2)", c TEXT COLLATE NOCASE);
  INSERT INTO t VALUES (1, 'a', '7', '1.50', 'X');`;
const LATER = `UPDATE t SET v = 'b', w = 8 WHERE id = 1; INSERT INTO t VALUES (2, 3, '9', 2, 'y');`;

function read(file: string) {
  const db = openDatabase(file, { readonly: true });
  try {
    return {
      rows: tableCells(db, 'main', 't'),
      types: db.prepare("SELECT name, type FROM pragma_table_info('t') ORDER BY cid").all(),
      pk: db.prepare("SELECT name FROM pragma_table_info('t') WHERE pk > 0").pluck().all(),
      objects: db
        .prepare("SELECT name FROM sqlite_schema WHERE name NOT GLOB '_sluice*' AND name NOT GLOB 'sqlite_*' ORDER BY name")
        .pluck()
        .all(),
    };
  } finally {
    db.close();
  }
}

describe('declared types that are not plain type names', () => {
  test('sync, export and import keep the key, the declared types and the values, and run nothing', async ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, SCHEMA, ['t']);
    const synced = path.join(tmp, 'synced.db');
    const file = path.join(tmp, 'changes.jsonl');
    const segs = path.join(tmp, 'segments');
    await sync(src.file, synced, { acknowledge: false });
    exportBothFormats(src.file, file, segs);
    src.db.exec(LATER);
    const report = await sync(src.file, synced, { acknowledge: false });
    expect(report.projections.map((p) => [p.name, p.state])).toEqual([['t', 'active']]);
    exportBothFormats(src.file, file, segs);
    const want = read(src.file);
    expect(want.types).toEqual([
      { name: 'id', type: 'INTEGER' },
      { name: 'v', type: 'TEXT) --' },
      { name: 'w', type: 'INT); CREATE TABLE pwned (x); --' },
      { name: 'n', type: 'NUMERIC(10, 2)' },
      { name: 'c', type: 'TEXT' },
    ]);
    const targets = [synced];
    for (const [name, from] of [
      ['imported.db', file],
      ['segments.db', segs],
    ] as const) {
      const tgt = path.join(tmp, name);
      const r = cli(['import', tgt, from]);
      expect(r.status, r.stderr).toBe(0);
      targets.push(tgt);
    }
    for (const tgt of targets) {
      const got = read(tgt);
      expect(got.rows, tgt).toEqual(want.rows);
      expect(got.rows, tgt).toHaveLength(2);
      expect(got.types, tgt).toEqual(want.types);
      expect(got.pk, tgt).toEqual(['id']);
      expect(got.objects, tgt).toEqual(['t']);
    }
    expect(fs.existsSync(path.join(tmp, 'pwned'))).toBe(false);
    const v = cli(['verify', src.file, synced]);
    expect(v.status, v.stderr + v.stdout).toBe(0);
  });
});
