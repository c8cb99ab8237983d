import type { Db } from '../../../src/sqlite/index.ts';
import type { CustomHandler, ProjectionDefinitionInput } from '../../../src/projection/index.ts';

/*
 * A small source used by several applier tests: a rowid table with a NOCASE
 * column, REAL and BLOB values, and a WITHOUT ROWID table with a composite
 * NOCASE key. The writes cover inserts, updates, key changes (including a
 * case-only change of a NOCASE key), deletes and storage-class changes.
 */

export const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT COLLATE NOCASE, qty INTEGER, price REAL, data BLOB);
CREATE TABLE tags (k TEXT NOT NULL COLLATE NOCASE, n INTEGER NOT NULL, v, PRIMARY KEY (k, n)) WITHOUT ROWID;
`;

export const SEED = `
INSERT INTO items (id, name, qty, price, data) VALUES
  (1, 'apple', 1, 0.5, x'00'), (2, 'Banana', 2, 1.25, x''), (3, 'cherry', 3, 2.0, NULL), (4, 'date', 4, 0.1, x'ff00ff'),
  (5, 'elder', 5, 3.5, NULL), (6, 'fig', 6, 4.75, x'01'), (7, 'grape', 7, 0.30000000000000004, NULL), (8, 'honeydew', 8, 9.0, x'02');
INSERT INTO tags (k, n, v) VALUES ('a', 1, 'one'), ('b', 2, 2), ('c', 3, 3.0), ('d', 4, x'04'), ('e', 5, NULL);
`;

/** One deterministic round of mixed writes (about 30 events). */
export function writeRound(db: Db, round = 0): void {
  const base = 100 * (round + 1);
  db.transaction(() => {
    const ins = db.prepare('INSERT INTO items (id, name, qty, price, data) VALUES (?, ?, ?, ?, ?)');
    for (let i = 0; i < 6; i++) ins.run(base + i, `new ${round} ${i}`, i, i / 3, Buffer.from([i, 255 - i]));
    db.exec('UPDATE items SET qty = qty + 1 WHERE id % 2 = 0');
    db.exec(`UPDATE items SET id = id + ${base + 50} WHERE id IN (3, ${base + 1})`);
    db.exec(`DELETE FROM items WHERE id IN (5, ${base + 2})`);
    db.exec("UPDATE items SET name = upper(name) WHERE name = 'apple' OR name = 'APPLE'");
    db.exec(`UPDATE items SET price = 1 WHERE id = ${base + 3}`);
    db.exec(`UPDATE items SET price = NULL, data = x'' WHERE id = ${base + 4}`);
    const insTag = db.prepare('INSERT INTO tags (k, n, v) VALUES (?, ?, ?)');
    for (let i = 0; i < 4; i++) insTag.run(`t${round}`, BigInt(i), i % 2 === 0 ? `v${i}` : i);
    db.exec(`UPDATE tags SET k = CASE WHEN k = 'a' COLLATE BINARY THEN 'A' ELSE 'a' END WHERE k = 'a' AND n = 1`);
    db.exec(`UPDATE tags SET n = n + 10 WHERE k = 't${round}' AND n = 0`);
    db.exec(`UPDATE tags SET v = '1' WHERE k = 'b'`);
    db.exec(`DELETE FROM tags WHERE k = 't${round}' AND n = 3`);
  })();
  // Later statements in their own transactions, so the batch spans several source commits.
  db.exec(`UPDATE tags SET v = 1 WHERE k = 'b'`);
  db.exec(`UPDATE items SET data = x'0102' WHERE id = 6`);
}

/**
 * A custom handler that records every event it is given in a target table
 * `applications (seq, op)`: an event applied twice shows up twice.
 */
export function recordingHandler(table = 'applications'): CustomHandler {
  return {
    version: '1',
    async init(_rows, { db }) {
      await db.schema.dropTable(table).ifExists().execute();
      await db.schema
        .createTable(table)
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('op', 'text', (c) => c.notNull())
        .execute();
    },
    async apply(event, { db }) {
      await db.insertInto(table).values({ seq: event.seq, op: event.op }).execute();
    },
  };
}

/** Mirror, map, fts5 and custom projections over the scenario schema. */
export function scenarioProjections(): ProjectionDefinitionInput[] {
  return [
    { name: 'items', source: 'items', kind: 'mirror' },
    { name: 'tags', source: 'tags', kind: 'mirror' },
    {
      name: 'cheap_items',
      source: 'items',
      kind: 'map',
      columns: {
        item: 'id',
        label: { expr: "upper(name) || ':' || coalesce(qty, '-')", type: 'TEXT' },
        total: { expr: 'qty * price' },
        name: 'name',
      },
      filter: "price < 3 AND name >= 'b'",
    },
    { name: 'items_fts', source: 'items', kind: 'fts5', columns: ['name'], content: 'external' },
    { name: 'tag_log', source: 'tags', kind: 'custom', handler: recordingHandler() },
  ];
}
