import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { filesIn } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import type { CustomHandler, ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import type { ProjectionExplanation } from '../../../src/apply/evolution/index.ts';

/*
 * A source and a target with one projection of each kind over one table,
 * synced, every connection closed, both files in WAL mode as sync leaves
 * them, with nothing beside them: "explain writes nothing" is checked as
 * "every file in the folder is byte for byte what it was, and no file was
 * added", not even the -wal and -shm a reader of a WAL file would leave
 * (explain holds the files it reads: src/sqlite/quiet-hold.ts).
 */

export const ITEMS = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER NOT NULL);
INSERT INTO items (id, name, qty) VALUES (1, 'apple pie', 1), (2, 'banana bread', 5), (3, 'cherry tart', 10), (4, 'date loaf', 50);
`;

/** A custom handler keeping a count per op in its own table `ops`. */
export function countingHandler(version = '1'): CustomHandler {
  return {
    version,
    async init(rows, { db }) {
      await db.schema.dropTable('ops').ifExists().execute();
      await db.schema.createTable('ops').addColumn('n', 'integer').execute();
      let n = 0;
      for (const _ of rows) n++;
      await db.insertInto('ops').values({ n }).execute();
    },
    async apply(_event, { db }) {
      await db.updateTable('ops').set({ n: 0 }).execute();
    },
  };
}

export function projections(handler: CustomHandler = countingHandler()): ProjectionDefinitionInput[] {
  return [
    { name: 'items', source: 'items', kind: 'mirror' },
    { name: 'cheap', source: 'items', kind: 'map', columns: { id: 'id', label: 'name' }, filter: 'qty < 100' },
    { name: 'search', source: 'items', kind: 'fts5', columns: ['name'] },
    { name: 'log', source: 'items', kind: 'custom', handler },
  ];
}

/**
 * Opens `file` with write access and closes it: as the last connection to
 * it, it removes the -wal and -shm a reader of the test left beside it. The
 * file stays in WAL mode.
 */
export function settled(file: string): void {
  openDatabase(file).close();
}

/** Source app.db and target cache.db in `dir`, synced with `defs`, both closed, in WAL mode and with nothing beside them. */
export async function syncedPair(dir: string, defs = projections()): Promise<{ src: string; tgt: string }> {
  const src = path.join(dir, 'app.db');
  const tgt = path.join(dir, 'cache.db');
  const db = openDatabase(src, { create: true });
  try {
    db.exec(ITEMS);
    enable(db, ['items']);
  } finally {
    db.close();
  }
  await sync(src, tgt, { projections: defs });
  for (const f of [src, tgt]) expect(fs.readFileSync(f).readUInt8(18), `${f} is in WAL mode`).toBe(2);
  expect(fs.readdirSync(dir).filter((f) => /-(wal|shm|journal)$/.test(f))).toEqual([]);
  return { src, tgt };
}

/** Runs SQL on a database in one transaction, with a connection of its own (closed after). */
export function run(file: string, sql: string): void {
  const db = openDatabase(file);
  try {
    db.transaction(() => db.exec(sql))();
  } finally {
    db.close();
  }
}

/** Runs `f` and checks that no file in `dir` changed and none was made (no -wal, -shm or -journal either). */
export async function expectNoWrite<T>(dir: string, f: () => Promise<T>): Promise<T> {
  const before = filesIn(dir);
  expect(Object.keys(before).filter((x) => /-(wal|shm|journal)$/.test(x))).toEqual([]);
  const out = await f();
  expect(filesIn(dir)).toEqual(before);
  return out;
}

export function byName(ps: readonly ProjectionExplanation[]): Record<string, ProjectionExplanation> {
  return Object.fromEntries(ps.map((p) => [p.name, p]));
}

/** A hash of the cells (and rowids, where a table has them) of each table named `name` or `name_*`. */
export function tablesOf(file: string, name: string): Record<string, string> {
  const db = openDatabase(file, { readonly: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND (name = ? OR name LIKE ? ESCAPE '\\') ORDER BY name")
      .pluck()
      .all(name, `${name.replace(/_/g, '\\_')}\\_%`) as string[];
    const out: Record<string, string> = {};
    for (const t of tables) {
      const q = `"${t.replace(/"/g, '""')}"`;
      let rows: unknown[];
      try {
        rows = db.prepare(`SELECT rowid AS _rowid, * FROM ${q} ORDER BY rowid`).raw().all();
      } catch {
        rows = db.prepare(`SELECT * FROM ${q} ORDER BY 1, 2`).raw().all();
      }
      out[t] = createHash('sha256')
        .update(JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : Buffer.isBuffer(v) ? v.toString('hex') : v)))
        .digest('hex');
    }
    return out;
  } finally {
    db.close();
  }
}
