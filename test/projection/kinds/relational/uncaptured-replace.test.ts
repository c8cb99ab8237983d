// an insert or replace without recursive triggers suspends instead of leaving the target stale
import path from 'node:path';
import { test, expect, describe, runPython } from '../../../support/fixtures.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { verify } from '../../../../src/apply/check/index.ts';
import type { ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { highWater, makeSource, tableCells } from '../../../apply/support/target.ts';
import { SCHEMA, SEED } from '../../../apply/support/scenario.ts';

/*
 * Without recursive_triggers (Python's sqlite3 default), REPLACE deletes the
 * old row without firing the delete trigger. Capture's REPLACE guards journal
 * that delete anyway, so every writer gives the same events. Behind them,
 * the applier is the net: an insert event for a key the target already holds
 * (a journal missing the delete) makes it fail closed, never leave the old
 * row behind.
 */

const PROJECTIONS: ProjectionDefinitionInput[] = [
  { name: 'items', source: 'items', kind: 'mirror' },
  { name: 'items_ext', source: 'items', kind: 'fts5', columns: ['name'], content: 'external' },
  { name: 'items_none', source: 'items', kind: 'fts5', columns: ['name'], content: 'none' },
  // Row 2 (Banana, 1.25) is in both filters; its replacement (9.5) only in the second.
  { name: 'cheap', source: 'items', kind: 'map', columns: { id: 'id', name: 'name', price: 'price' }, filter: 'price < 3' },
  { name: 'any_price', source: 'items', kind: 'map', columns: { id: 'id', shout: { expr: 'upper(name)' } }, filter: 'price IS NOT NULL' },
];

function pythonWrite(file: string, sql: string, recursive: boolean): void {
  runPython(
    `
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=10)
if sys.argv[3] == '1':
    conn.execute('PRAGMA recursive_triggers = ON')
assert conn.execute('PRAGMA recursive_triggers').fetchone()[0] == int(sys.argv[3])
conn.executescript(sys.argv[2])
conn.close()
`,
    [file, sql, recursive ? '1' : '0'],
  );
}

const REPLACE = "INSERT OR REPLACE INTO items (id, name, qty, price, data) VALUES (2, 'Zed', 9, 9.5, NULL);";

describe('INSERT OR REPLACE on a key that exists', () => {
  test('with the delete missing from the journal: every projection of the table suspends with UNCAPTURED_REPLACE, and no row is written', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    await sync(src.file, target, { projections: [...PROJECTIONS, { name: 'tags', source: 'tags', kind: 'mirror' }] });
    const before = Object.fromEntries(
      ['items', 'cheap', 'any_price', 'items_ext_src', 'items_none_src'].map((t) => [t, tableCells(openDatabase(target), 'main', t)]),
    );

    pythonWrite(
      src.file,
      `INSERT INTO items (id, name, qty, price) VALUES (50, 'first', 1, 1.0); ${REPLACE} INSERT INTO tags (k, n, v) VALUES ('z', 1, 'after');`,
      false,
    );
    // Capture journaled the REPLACE's delete; take it out, as a capture that missed it would have.
    expect(
      src.db
        .prepare("DELETE FROM _sluice_journal WHERE op = 3 AND c0 = 2 AND tid = (SELECT tid FROM _sluice_tables WHERE name = 'items')")
        .run().changes,
    ).toBe(1);
    const hw = highWater(src.db);
    const r = await sync(src.file, target);
    const byName = new Map(r.projections.map((p) => [p.name, p]));
    for (const p of PROJECTIONS) {
      expect(byName.get(p.name), p.name).toMatchObject({ state: 'suspended', reason: 'UNCAPTURED_REPLACE', detail: { key: [2] } });
    }
    // Another table's projection is not held back.
    expect(byName.get('tags')).toMatchObject({ state: 'active', seq: hw });
    const tdb = openDatabase(target);
    try {
      for (const [t, rows] of Object.entries(before)) expect(tableCells(tdb, 'main', t), t).toEqual(rows);
    } finally {
      tdb.close();
    }
    // The next run does not pretend otherwise.
    const again = await sync(src.file, target);
    expect(again.projections.filter((p) => p.state === 'suspended').map((p) => p.reason)).toEqual(
      PROJECTIONS.map(() => 'UNCAPTURED_REPLACE'),
    );
  });

  test.for([
    ['Python sqlite3 with its default recursive_triggers = OFF', 'python-off'],
    ['Python sqlite3 with PRAGMA recursive_triggers = ON', 'python'],
    ["sluice's own connection (better-sqlite3 via openDatabase)", 'sluice'],
  ] as const)('from %s: the delete is captured and every projection syncs to the source', async ([, writer], { makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    await sync(src.file, target, { projections: PROJECTIONS });
    if (writer !== 'sluice') pythonWrite(src.file, REPLACE, writer === 'python');
    else {
      const db = openDatabase(src.file);
      db.exec(REPLACE);
      db.close();
    }
    const r = await sync(src.file, target);
    expect(r.projections.map((p) => [p.name, p.state])).toEqual(PROJECTIONS.map((p) => [p.name, 'active']).sort());
    expect((await verify(src.file, target)).ok).toBe(true);
    const tdb = openDatabase(target);
    try {
      expect(tableCells(tdb, 'main', 'items')).toEqual(tableCells(src.db, 'main', 'items'));
      expect(tdb.prepare('SELECT id, price FROM cheap WHERE id = 2').all()).toEqual([]);
      expect(
        tdb
          .prepare("SELECT _k0 FROM items_none_src WHERE rowid IN (SELECT rowid FROM items_none WHERE items_none MATCH 'zed')")
          .pluck()
          .all(),
      ).toEqual([2n]);
      expect(tdb.prepare("SELECT rowid FROM items_ext WHERE items_ext MATCH 'banana'").pluck().all()).toEqual([]);
    } finally {
      tdb.close();
    }
  });
});
