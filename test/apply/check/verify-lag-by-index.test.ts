// verify of a lagging target finds each changed key through an index in as many statements however long the lag
import Database from 'better-sqlite3';
import { test, expect } from '../../support/fixtures.ts';
import type { Db } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';

/*
 * A target 900k events behind its source ran verify for over 18 minutes
 * (issue 19): the keys changed after the cursor went into a TEMP table whose
 * column had no affinity, compared with `IS` against the INTEGER key of the
 * source and target tables, so SQLite could not use its index and scanned
 * the whole table once per row. verify's cost must be the caught-up
 * comparison plus work bounded by the events: a fixed number of set-based
 * statements, whatever the lag, in which no table is scanned in full inside
 * another's loop (once per row of it). Speed itself is measured in
 * bench/verify-behind.ts, not here.
 *
 * Every statement verify runs is recorded as it runs, with SQLite's own query
 * plan for it (EXPLAIN QUERY PLAN on the same connection, so its TEMP tables
 * are there): a plan line "SCAN x" that is not the outermost loop of its
 * query, or that sits in a correlated subquery, is a full scan per row.
 */

interface Ran {
  readonly sql: string;
  readonly plan: readonly { id: number; parent: number; detail: string }[];
}

/** The statements run (with their plans) while `fn` runs. */
async function recorded(fn: () => Promise<unknown>): Promise<Ran[]> {
  const proto = Database.prototype as unknown as { prepare: (this: Db, sql: string) => Database.Statement };
  const prepare = proto.prepare;
  const ran: Ran[] = [];
  const planOf = (db: Db, sql: string, args: unknown[]) => {
    try {
      return prepare
        .call(db, `EXPLAIN QUERY PLAN ${sql}`)
        .safeIntegers(false)
        .all(...args) as Ran['plan'];
    } catch {
      // Not a statement with a plan (a PRAGMA, BEGIN): nothing that scans.
      return [];
    }
  };
  proto.prepare = function (this: Db, sql: string) {
    const stmt = prepare.call(this, sql);
    const db: Db = stmt.database;
    for (const m of ['run', 'get', 'all', 'iterate'] as const) {
      const orig = stmt[m] as (...a: unknown[]) => unknown;
      (stmt as unknown as Record<string, unknown>)[m] = function (this: Database.Statement, ...args: unknown[]) {
        ran.push({ sql, plan: planOf(db, sql, args) });
        return orig.apply(this, args);
      };
    }
    return stmt;
  };
  try {
    await fn();
  } finally {
    proto.prepare = prepare;
  }
  return ran;
}

/** Plan lines that scan a table in full once per row of an outer loop (inner join loops, correlated subqueries). */
function scansPerRow(r: Ran): string[] {
  const bad: string[] = [];
  const byId = new Map(r.plan.map((l) => [l.id, l]));
  const seenLoop = new Set<number>();
  for (const l of r.plan) {
    const isScan = /^SCAN /.test(l.detail) && !/^SCAN CONSTANT ROW/.test(l.detail);
    const isLoop = /^(SCAN|SEARCH) /.test(l.detail);
    let correlated = false;
    for (let p = byId.get(l.parent); p !== undefined; p = byId.get(p.parent)) if (/^CORRELATED /.test(p.detail)) correlated = true;
    if (isScan && (seenLoop.has(l.parent) || correlated)) bad.push(`${l.detail}  <-  ${r.sql.replace(/\s+/g, ' ').slice(0, 300)}`);
    if (isLoop) seenLoop.add(l.parent);
  }
  return bad;
}

const PROJECTIONS: ProjectionDefinitionInput[] = [
  { name: 'items', source: 'items', kind: 'mirror' },
  // A composite key with a NOCASE column, a filter and a typed computed column (its source rows are staged in a TEMP table).
  {
    name: 'picked',
    source: 'things',
    kind: 'map',
    columns: { item: 'id', category: 'cat', label: { expr: "upper(name) || '/' || cat", type: 'TEXT' }, qty: 'qty' },
    filter: 'qty IS NULL OR qty > 2',
  },
  { name: 'things', source: 'things', kind: 'mirror' },
  // Compared by checksums, not proved in SQL: the other path of verify.ts.
  { name: 'search', source: 'items', kind: 'fts5', columns: ['name'] },
];

/** A source and a target `lag` events behind it: inserts, updates, key changes and deletes of both tables. */
async function lagging(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, tag: string, lag: number) {
  const { db, file } = makeDb(
    `src-${tag}.db`,
    `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, n INTEGER);
     CREATE TABLE things (id INTEGER NOT NULL, cat TEXT NOT NULL COLLATE NOCASE, name TEXT, qty INTEGER, PRIMARY KEY (id, cat));
     WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)
       INSERT INTO items SELECT i, 'item ' || i, i % 7 FROM c;
     WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)
       INSERT INTO things SELECT i, char(97 + i % 3), 'thing ' || i, i % 5 FROM c;`,
  );
  enable(db, ['items', 'things']);
  const target = file.replace('src-', 'tgt-');
  await sync(file, target, { projections: PROJECTIONS });
  const quarter = Math.floor(lag / 8);
  db.exec(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${quarter})
    INSERT INTO items SELECT 100000 + i, 'new ' || i, i FROM c;
    UPDATE items SET n = n + 1 WHERE id IN (SELECT id FROM items ORDER BY id LIMIT ${quarter});
    UPDATE items SET id = id + 200000 WHERE id IN (SELECT id FROM items WHERE id <= 3000 ORDER BY id DESC LIMIT ${quarter});
    DELETE FROM items WHERE id IN (SELECT id FROM items WHERE id <= 3000 ORDER BY id DESC LIMIT ${quarter});
    UPDATE things SET qty = qty + 1 WHERE id <= ${quarter};
    UPDATE things SET cat = upper(cat) WHERE id > ${quarter} AND id <= ${2 * quarter};
    DELETE FROM things WHERE id > ${2 * quarter} AND id <= ${3 * quarter};
    INSERT INTO things SELECT id + 100000, cat, name, qty FROM things WHERE id <= ${quarter};`);
  return { source: file, target };
}

test('verify of a lagging target finds each changed key through an index, in as many statements for a lag of 400 events as of 1600', async ({
  makeDb,
}) => {
  const counts: number[] = [];
  for (const lag of [400, 1600]) {
    const { source, target } = await lagging(makeDb, String(lag), lag);
    let report: Awaited<ReturnType<typeof verify>> | undefined;
    const ran = await recorded(async () => {
      report = await verify(source, target);
    });
    // The comparison is the real one: each projection compared at its cursor, every key, and equal.
    expect(report?.projections.map((p) => [p.name, p.ok, p.inFlight > 0, p.diffs])).toEqual([
      ['items', true, true, []],
      ['picked', true, true, []],
      ['search', true, true, []],
      ['things', true, true, []],
    ]);
    expect(ran.flatMap(scansPerRow)).toEqual([]);
    // The relational projections are proved equal in SQL (verify-exact.ts); only the fts5 index is compared by checksums.
    expect(ran.filter((r) => /^CREATE TEMP TABLE _sluice_vs AS/.test(r.sql))).toHaveLength(1);
    counts.push(ran.length);
  }
  // No statement per key or per event: the lag changes what each statement reads, not how many run.
  expect(counts[1]).toBe(counts[0]);
});
