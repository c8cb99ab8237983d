// a table with hundreds of columns syncs and a tampered row in it is found
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { tableCells } from '../support/target.ts';

/*
 * Every check compares all columns of a row. Written as one long AND chain,
 * that is deeper than SQLite's expression limit (1000) for tables of a few
 * hundred columns ("Expression tree is too large"), so wide tables could
 * snapshot but never apply a batch.
 */

const WIDTH = 700;
const COLS = Array.from({ length: WIDTH - 1 }, (_, i) => `c${i}`);

test(`a ${WIDTH}-column table mirrors, maps and indexes incrementally, and a tampered row in it suspends the mirror`, async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb('source.db', `CREATE TABLE w (id INTEGER PRIMARY KEY, ${COLS.join(', ')})`);
  db.exec("INSERT INTO w (id, c0, c698) VALUES (1, 'alpha', 1), (2, 'beta', 2), (3, 'gamma', 3)");
  enable(db, ['w']);
  const target = path.join(tmp, 'target.db');
  const defs = [
    { name: 'w', source: 'w', kind: 'mirror' as const },
    {
      name: 'wmap',
      source: 'w',
      kind: 'map' as const,
      columns: Object.fromEntries(['id', ...COLS].map((c) => [c, c])),
      filter: 'c698 IS NOT NULL',
    },
    { name: 'wfts', source: 'w', kind: 'fts5' as const, columns: COLS.slice(0, 300), content: 'external' as const },
  ];
  await sync(file, target, { projections: defs });
  db.exec(
    "UPDATE w SET c0 = 'delta', c698 = 9 WHERE id = 1; UPDATE w SET c1 = x'00' WHERE id = 1; DELETE FROM w WHERE id = 2; INSERT INTO w (id, c5) VALUES (4, 'new')",
  );
  const r = await sync(file, target, { projections: defs });
  expect(r.projections.map((p) => [p.name, p.state, p.error?.message])).toEqual([
    ['w', 'active', undefined],
    ['wmap', 'active', undefined],
    ['wfts', 'active', undefined],
  ]);
  const t = openDatabase(target);
  try {
    // (Three cells per column would pass SQLite's 2000-column result limit: the columns written.)
    const some = ['id', 'c0', 'c1', 'c5', 'c350', 'c698'];
    expect(tableCells(t, 'main', 'w', some)).toEqual(tableCells(db, 'main', 'w', some));
    expect(tableCells(t, 'main', 'w', some).length).toBe(3);
    expect(t.prepare("SELECT rowid FROM wfts WHERE wfts MATCH 'delta'").pluck().all()).toEqual([1n]);
    t.exec("UPDATE w SET c350 = 'tampered' WHERE id = 3");
  } finally {
    t.close();
  }
  db.exec('UPDATE w SET c0 = NULL WHERE id = 3');
  const suspended = await sync(file, target, { projections: defs });
  expect(suspended.projections.find((p) => p.name === 'w')).toMatchObject({ state: 'suspended', reason: 'TARGET_DIVERGED' });
  expect(suspended.projections.find((p) => p.name === 'wmap')).toMatchObject({ state: 'active' });
});
