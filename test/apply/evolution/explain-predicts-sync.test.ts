// explain predicts what the next sync does for every change continue rebuild refuse or suspend
import { test, expect, describe } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { alter, bump, enable } from '../../../src/capture/index.ts';
import { explainAlter, type ProjectionExplanation } from '../../../src/apply/evolution/index.ts';
import type { ProjectionReport } from '../../../src/apply/sync/index.ts';
import type { AlterClassification, CustomHandler, ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { takeCopy } from '../../support/restore.ts';
import { countingHandler, expectNoWrite, run, settled, syncedPair, tablesOf } from '../support/explain.ts';

/*
 * explain is the prediction of the next sync, and this table holds it to
 * that for every kind of change 003 names: definition changes (compatible,
 * rebuildable, rejected), source DDL through `sluice alter`, a bumped or
 * restored source, a user's UNIQUE index, custom projections with and
 * without declared tables, and nothing changed. For each scenario explain
 * runs first, then sync, and for every projection:
 *
 * - Compatible => sync continues it: not rebuilt, no error, its tables
 *   byte for byte as they were;
 * - Rebuildable => sync rebuilds it, with the reason explain names, and
 *   `swapped: true` exactly when explain says it is built beside the live
 *   one (fts5, custom with tables, mirror, map) rather than in one transaction;
 * - Rejected => what 003 wants of a fail-closed decision: a Rejected change
 *   of the definition is refused before anything is written (LC-1), with
 *   its reason as the error's code (the projection's, or the whole run's
 *   for a given definition that does not compile or collides), its tables
 *   unchanged; a destructive or ambiguous source change, or a cursor that
 *   cannot go on, suspends the projection with the reason explain names
 *   (LC-2), which health shows with its repair. Never silently stale.
 */

/** A custom handler that declares its table `counts` (so sluice can build it beside the live one). */
function tableHandler(version = '1'): CustomHandler {
  return {
    version,
    async init(rows, { db, tables }) {
      const t = tables.counts as string;
      await db.schema.createTable(t).ifNotExists().addColumn('n', 'integer').execute();
      let n = 0;
      for (const _ of rows) n++;
      await db.insertInto(t).values({ n }).execute();
    },
    async apply(_e, { db, tables }) {
      await db
        .updateTable(tables.counts as string)
        .set({ n: 0 })
        .execute();
    },
  };
}

const mirror: ProjectionDefinitionInput = { name: 'items', source: 'items', kind: 'mirror' };
const cheap: ProjectionDefinitionInput = {
  name: 'cheap',
  source: 'items',
  kind: 'map',
  columns: { id: 'id', label: 'name' },
  filter: 'qty < 100',
};
const search: ProjectionDefinitionInput = { name: 'search', source: 'items', kind: 'fts5', columns: ['name'] };
const labels: ProjectionDefinitionInput = { name: 'labels', source: 'items', kind: 'map', columns: { id: 'id', label: 'name' } };
const log = (v = '1'): ProjectionDefinitionInput => ({ name: 'log', source: 'items', kind: 'custom', handler: countingHandler(v) });
const counts = (v = '1'): ProjectionDefinitionInput =>
  ({ name: 'counts', source: 'items', kind: 'custom', tables: ['counts'], handler: tableHandler(v) }) as ProjectionDefinitionInput;
const ALL = (): ProjectionDefinitionInput[] => [mirror, cheap, search, labels, log(), counts()];
/** Kinds whose stored definition is all a plain sync needs (a handler given as code is not stored). */
const STORED = [mirror, cheap, search, labels];

/** The tables each projection writes. */
const TABLES: Record<string, string> = { items: 'items', cheap: 'cheap', search: 'search', labels: 'labels', log: 'ops', counts: 'counts' };

type Expect = Record<string, [AlterClassification, 'continue' | 'rebuild' | 'refuse' | 'suspend']>;

interface Scenario {
  readonly name: string;
  /** What the target was first synced with. */
  readonly first: ProjectionDefinitionInput[];
  readonly change?: (src: string, tgt: string, dir: string) => void | Promise<void>;
  /** What explain and sync are given (undefined: the stored definitions). */
  readonly given?: ProjectionDefinitionInput[];
  readonly expected: Expect;
}

function ddl(src: string, sql: string): void {
  const db = openDatabase(src);
  try {
    alter(db, sql);
  } finally {
    db.close();
  }
}

const SCENARIOS: Scenario[] = [
  {
    name: 'nothing changed',
    first: ALL(),
    given: ALL(),
    expected: Object.fromEntries(Object.keys(TABLES).map((n) => [n, ['Compatible', 'continue']])) as Expect,
  },
  {
    name: 'compatible definition changes (a target spelled out, a filter loosened for rows that do not exist)',
    first: ALL(),
    given: [
      { ...mirror, target: 'items' },
      { ...cheap, filter: 'qty < 1000' },
      { ...search, target: 'search' },
      labels,
      log(),
      counts(),
    ] as ProjectionDefinitionInput[],
    expected: {
      items: ['Compatible', 'continue'],
      cheap: ['Compatible', 'continue'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
      log: ['Compatible', 'continue'],
      counts: ['Compatible', 'continue'],
    },
  },
  {
    name: 'rebuildable definition changes (a filter tightened, a tokenizer, a column, a handler with tables)',
    first: ALL(),
    given: [
      mirror,
      { ...cheap, filter: 'qty < 10' },
      { ...search, tokenize: 'porter' },
      { ...labels, columns: { id: 'id', label: 'name', q: 'qty' } },
      log(),
      counts('2'),
    ] as ProjectionDefinitionInput[],
    expected: {
      items: ['Compatible', 'continue'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Rebuildable', 'rebuild'],
      labels: ['Rebuildable', 'rebuild'],
      log: ['Compatible', 'continue'],
      counts: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'a rejected definition change (a handler with no tables of its own changed)',
    first: ALL(),
    given: [mirror, cheap, search, labels, log('2'), counts()],
    expected: {
      items: ['Compatible', 'continue'],
      cheap: ['Compatible', 'continue'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
      log: ['Rejected', 'refuse'],
      counts: ['Compatible', 'continue'],
    },
  },
  {
    name: 'a rejected definition that does not compile (an unknown column): the whole run is refused',
    first: ALL(),
    given: [mirror, { ...cheap, columns: { id: 'id', label: 'title' } }] as ProjectionDefinitionInput[],
    expected: { items: ['Compatible', 'continue'], cheap: ['Rejected', 'refuse'] },
  },
  {
    name: 'a projection given another name over the same target table: sync takes it for a new one, which collides',
    first: ALL(),
    given: [mirror, cheap, search, { ...labels, name: 'labels2', target: 'labels' }] as ProjectionDefinitionInput[],
    expected: {
      items: ['Compatible', 'continue'],
      cheap: ['Compatible', 'continue'],
      search: ['Compatible', 'continue'],
      labels2: ['Rejected', 'refuse'],
    },
  },
  {
    name: 'sluice alter adds a column',
    first: ALL(),
    change: (src) => ddl(src, "ALTER TABLE items ADD COLUMN colour TEXT DEFAULT 'red'"),
    given: ALL(),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Compatible', 'continue'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
      log: ['Rejected', 'refuse'],
      counts: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'sluice alter drops a column (stored definitions)',
    first: STORED,
    change: (src) => ddl(src, 'ALTER TABLE items DROP COLUMN qty'),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rejected', 'suspend'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
    },
  },
  {
    name: 'sluice alter drops a column a given definition reads: the target stores it as given, so it is suspended (the source changed) and the others go on',
    first: ALL(),
    change: (src) => ddl(src, 'ALTER TABLE items DROP COLUMN qty'),
    given: ALL(),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rejected', 'suspend'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
      log: ['Rejected', 'refuse'],
      counts: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'a table enabled after the first sync of a target built by the default ("*"): its mirror is a first build, the others continue',
    first: [],
    change: (src) => {
      run(src, "CREATE TABLE extra (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO extra VALUES (1, 'x')");
      const db = openDatabase(src);
      try {
        enable(db, ['extra']);
      } finally {
        db.close();
      }
    },
    expected: { items: ['Compatible', 'continue'], extra: ['Rebuildable', 'rebuild'] },
  },
  {
    name: 'a given definition the target does not store as it is (an edit that names an unknown column): the whole run is refused',
    first: ALL(),
    given: [mirror, { ...cheap, filter: 'nosuch < 100' }] as ProjectionDefinitionInput[],
    expected: { items: ['Compatible', 'continue'], cheap: ['Rejected', 'refuse'] },
  },
  {
    name: 'a new definition, and a mirror "*" adds, whose target table exists and sluice did not make: each is refused (TARGET_TABLE_EXISTS), the others go on',
    first: [mirror],
    change: (src, tgt) => {
      run(src, "CREATE TABLE extra (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO extra VALUES (1, 'x')");
      const db = openDatabase(src);
      try {
        enable(db, ['extra']);
      } finally {
        db.close();
      }
      run(tgt, "CREATE TABLE extra (mine TEXT); CREATE TABLE labels (mine TEXT); INSERT INTO labels VALUES ('kept')");
    },
    given: ['*', labels] as ProjectionDefinitionInput[],
    expected: { labels: ['Rejected', 'refuse'], items: ['Compatible', 'continue'], extra: ['Rejected', 'refuse'] },
  },
  {
    name: 'a new fts5 index one of whose FTS5 tables (search_data) the target holds, and sluice did not make: refused (TARGET_TABLE_EXISTS), the others go on',
    first: [mirror],
    change: (_src, tgt) => run(tgt, "CREATE TABLE search_data (mine TEXT); INSERT INTO search_data VALUES ('kept')"),
    given: [mirror, search],
    expected: { items: ['Compatible', 'continue'], search: ['Rejected', 'refuse'] },
  },
  {
    name: 'an fts5 index rebuilt into another table, one of whose FTS5 tables (found_config) the target holds: refused (TARGET_TABLE_EXISTS)',
    first: [mirror, search],
    change: (_src, tgt) => run(tgt, "CREATE TABLE found_config (mine TEXT); INSERT INTO found_config VALUES ('kept')"),
    given: [mirror, { ...search, target: 'found' }] as ProjectionDefinitionInput[],
    expected: { items: ['Compatible', 'continue'], search: ['Rejected', 'refuse'] },
  },
  {
    name: 'a new fts5 index beside a new mirror into one of the tables FTS5 would make for it (search_data): they collide, the whole run is refused (TARGET_COLLISION)',
    first: [mirror],
    given: [mirror, { name: 'copy', source: 'items', kind: 'mirror', target: 'search_data' }, search] as ProjectionDefinitionInput[],
    expected: { items: ['Compatible', 'continue'], copy: ['Rebuildable', 'rebuild'], search: ['Rejected', 'refuse'] },
  },
  {
    name: 'a new definition over a table the source does not capture: the whole run is refused (TABLE_UNTRACKED)',
    first: ALL(),
    change: (src) => run(src, 'CREATE TABLE other (id INTEGER PRIMARY KEY, v TEXT)'),
    given: [mirror, { name: 'other', source: 'other', kind: 'mirror' }] as ProjectionDefinitionInput[],
    expected: { items: ['Compatible', 'continue'], other: ['Rejected', 'refuse'] },
  },
  {
    name: 'a stored definition suspended for a dropped column, then given one that fits: rebuilt from it',
    first: STORED,
    change: async (src, tgt) => {
      ddl(src, 'ALTER TABLE items DROP COLUMN qty');
      const r = await sync(src, tgt);
      expect(r.projections.find((p) => p.name === 'cheap')).toMatchObject({ state: 'suspended', reason: 'SOURCE_COLUMN_MISSING' });
    },
    given: [
      mirror,
      { name: 'cheap', source: 'items', kind: 'map', columns: { id: 'id', label: 'name' } },
      search,
      labels,
    ] as ProjectionDefinitionInput[],
    expected: {
      items: ['Compatible', 'continue'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
    },
  },
  {
    name: 'sluice alter renames a column (stored definitions)',
    first: STORED,
    change: (src) => ddl(src, 'ALTER TABLE items RENAME COLUMN qty TO amount'),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rejected', 'suspend'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
    },
  },
  {
    name: 'sluice alter drops a column and adds one of its name again: another column, never Compatible',
    first: ALL(),
    change: (src) => ddl(src, "ALTER TABLE items DROP COLUMN name; ALTER TABLE items ADD COLUMN name TEXT DEFAULT 'x'"),
    given: ALL(),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Rebuildable', 'rebuild'],
      labels: ['Rebuildable', 'rebuild'],
      log: ['Rejected', 'refuse'],
      counts: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'sluice alter renames a column away and adds another of its name (stored definitions)',
    first: STORED,
    change: (src) => ddl(src, 'ALTER TABLE items RENAME COLUMN name TO title; ALTER TABLE items ADD COLUMN name TEXT'),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Rebuildable', 'rebuild'],
      labels: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'sluice alter adds a column and swaps its name with another of the same declaration by three renames (stored definitions)',
    first: STORED,
    change: (src) =>
      ddl(
        src,
        "ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'n'; ALTER TABLE items RENAME COLUMN name TO tmp; ALTER TABLE items RENAME COLUMN note TO name; ALTER TABLE items RENAME COLUMN tmp TO note",
      ),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Rebuildable', 'rebuild'],
      labels: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'sluice alter retypes a column (the table made again)',
    first: STORED,
    change: (src) =>
      ddl(
        src,
        'CREATE TABLE items_new (id INTEGER PRIMARY KEY, name TEXT, qty REAL NOT NULL); INSERT INTO items_new SELECT * FROM items; DROP TABLE items; ALTER TABLE items_new RENAME TO items',
      ),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Rebuildable', 'rebuild'],
      labels: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'sluice alter renames the table (stored definitions)',
    first: STORED,
    change: (src) => ddl(src, 'ALTER TABLE items RENAME TO items_old'),
    expected: {
      items: ['Rejected', 'suspend'],
      cheap: ['Rejected', 'suspend'],
      search: ['Rejected', 'suspend'],
      labels: ['Rejected', 'suspend'],
    },
  },
  {
    name: 'a bumped source: every projection is rebuilt, a custom one with no tables in one transaction',
    first: ALL(),
    change: (src) => {
      const db = openDatabase(src);
      try {
        bump(db, 'reloaded from a backup');
      } finally {
        db.close();
      }
    },
    given: ALL(),
    expected: Object.fromEntries(Object.keys(TABLES).map((n) => [n, ['Rebuildable', 'rebuild']])) as Expect,
  },
  {
    name: 'a restored source (an older copy written back over it)',
    first: ALL(),
    change: async (src, _tgt, dir) => {
      // The copy is taken before the target saw the writes after it, then the target syncs them, then the copy comes back.
      const db = openDatabase(src);
      const copy = takeCopy(db, src, dir);
      db.close();
      run(src, "INSERT INTO items (id, name, qty) VALUES (9, 'fig roll', 2)");
      await sync(src, `${dir}/cache.db`, { projections: ALL() });
      copy.restore().close();
    },
    given: ALL(),
    expected: Object.fromEntries(Object.keys(TABLES).map((n) => [n, ['Rebuildable', 'rebuild']])) as Expect,
  },
  {
    name: 'DDL that sluice did not make (a column added by hand)',
    first: ALL(),
    change: (src) => run(src, "ALTER TABLE items ADD COLUMN colour TEXT DEFAULT 'red'"),
    given: ALL(),
    expected: {
      items: ['Rebuildable', 'rebuild'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Rebuildable', 'rebuild'],
      labels: ['Rebuildable', 'rebuild'],
      log: ['Rejected', 'refuse'],
      counts: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'DDL that sluice did not make and that changes no captured table (an index on the source)',
    first: ALL(),
    change: (src) => run(src, 'CREATE INDEX items_qty ON items (qty)'),
    given: ALL(),
    expected: {
      // verify proves their copies match the source across it; a custom handler's state cannot be compared.
      items: ['Compatible', 'continue'],
      cheap: ['Compatible', 'continue'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
      log: ['Rebuildable', 'rebuild'],
      counts: ['Rebuildable', 'rebuild'],
    },
  },
  {
    name: 'a projection suspended until it is rebuilt, unchanged (it stays so) and with a changed definition (rebuilt)',
    first: ALL(),
    change: async (src, tgt) => {
      // A row of cheap changed by hand, then its source row: the next batch does not apply (TARGET_DIVERGED).
      run(tgt, "UPDATE cheap SET label = 'by hand' WHERE id = 1");
      run(src, "UPDATE items SET name = 'apple crumble' WHERE id = 1");
      const r = await sync(src, tgt, { projections: ALL() });
      expect(r.projections.find((p) => p.name === 'cheap')).toMatchObject({ state: 'suspended', reason: 'TARGET_DIVERGED' });
    },
    given: [
      mirror,
      cheap,
      search,
      { ...labels, columns: { id: 'id', label: 'name', q: 'qty' } },
      log(),
      counts(),
    ] as ProjectionDefinitionInput[],
    expected: {
      items: ['Compatible', 'continue'],
      cheap: ['Rejected', 'suspend'],
      search: ['Compatible', 'continue'],
      labels: ['Rebuildable', 'rebuild'],
      log: ['Compatible', 'continue'],
      counts: ['Compatible', 'continue'],
    },
  },
  {
    name: 'a projection suspended until it is rebuilt stays suspended with a changed definition too',
    first: ALL(),
    change: async (src, tgt) => {
      run(tgt, "UPDATE cheap SET label = 'by hand' WHERE id = 1");
      run(src, "UPDATE items SET name = 'apple crumble' WHERE id = 1");
      await sync(src, tgt, { projections: ALL() });
    },
    given: [mirror, { ...cheap, filter: 'qty < 10' }] as ProjectionDefinitionInput[],
    expected: { items: ['Compatible', 'continue'], cheap: ['Rejected', 'suspend'] },
  },
  {
    name: "a user's UNIQUE index on an unchanged projection, and on one rebuilt",
    first: ALL(),
    change: (_src, tgt) => run(tgt, 'CREATE UNIQUE INDEX items_name ON items (name); CREATE UNIQUE INDEX cheap_label ON cheap (label)'),
    given: [mirror, { ...cheap, filter: 'qty < 10' }, search, labels, log(), counts()] as ProjectionDefinitionInput[],
    expected: {
      items: ['Compatible', 'continue'],
      cheap: ['Rebuildable', 'rebuild'],
      search: ['Compatible', 'continue'],
      labels: ['Compatible', 'continue'],
      log: ['Compatible', 'continue'],
      counts: ['Compatible', 'continue'],
    },
  },
];

/** That sync did to `p` what explain said it would. */
function expectDone(
  e: ProjectionExplanation,
  r: ProjectionReport | undefined,
  before: Record<string, string>,
  after: Record<string, string>,
) {
  const what = `${e.name}: explain said ${e.classification} (${e.reason}), ${JSON.stringify(e.sync)}; sync did ${JSON.stringify(r)}`;
  const p = e.sync;
  expect(r, what).toBeDefined();
  if (p.does === 'continue') {
    expect([r?.state, r?.rebuilt, r?.swapped, r?.error], what).toEqual(['active', undefined, undefined, undefined]);
    expect(after, what).toEqual(before);
  } else if (p.does === 'rebuild') {
    expect([r?.state, r?.rebuilt ?? null, r?.swapped === true, r?.error], what).toEqual(['active', p.reason, p.swapped, undefined]);
  } else if (p.does === 'refuse') {
    expect(p.run, what).toBe(false);
    expect([r?.error?.code, r?.rebuilt], what).toEqual([p.code, undefined]);
    expect(after, what).toEqual(before);
  } else {
    expect([r?.state, r?.reason, r?.rebuilt], what).toEqual(['suspended', p.reason, undefined]);
  }
}

describe('explain predicts what the next sync does', () => {
  test.for(SCENARIOS.map((s) => [s.name, s] as const))(
    'explain predicts what the next sync does for every change: %s',
    async ([, s], { tmp }) => {
      const { src, tgt } = await syncedPair(tmp, s.first);
      await s.change?.(src, tgt, tmp);
      const options = s.given === undefined ? {} : { projections: s.given };
      // explain writes nothing, in every scenario, both files in WAL mode: not even a -wal or -shm (what the change's readers left is removed first).
      settled(src);
      settled(tgt);
      const explained = await expectNoWrite(tmp, () => explainAlter(src, tgt, options));
      const e = Object.fromEntries(explained.projections.map((p) => [p.name, p]));
      // The table says what each classification is, so the agreement below is not vacuous.
      expect(Object.fromEntries(explained.projections.map((p) => [p.name, [p.classification, p.sync.does]]))).toEqual(s.expected);
      for (const p of explained.projections) {
        // The classification and the prediction say the same.
        const does = { Compatible: ['continue'], Rebuildable: ['rebuild'], Rejected: ['refuse', 'suspend'] }[p.classification];
        expect(does, p.name).toContain(p.sync.does);
        if (p.sync.does === 'refuse' && !p.sync.run) expect(p.sync.code, p.name).toBe(p.reason);
      }
      const names = Object.keys(e);
      const before = Object.fromEntries(names.map((n) => [n, tablesOf(tgt, TABLES[n] ?? n)]));
      const runRefusal = explained.projections.find((p) => p.sync.does === 'refuse' && p.sync.run);
      if (runRefusal !== undefined && runRefusal.sync.does === 'refuse') {
        // A given definition that cannot run refuses the whole sync before anything is written.
        const catalog = tablesOf(tgt, '_sluice_projections');
        await expect(sync(src, tgt, options)).rejects.toMatchObject({ code: runRefusal.sync.code });
        expect(tablesOf(tgt, '_sluice_projections')).toEqual(catalog);
        for (const n of names) expect(tablesOf(tgt, TABLES[n] ?? n), n).toEqual(before[n]);
        return;
      }
      const report = await sync(src, tgt, options);
      for (const n of names) {
        const r = report.projections.find((x) => x.name === n);
        expectDone(e[n] as ProjectionExplanation, r, before[n] ?? {}, tablesOf(tgt, TABLES[n] ?? n));
      }
    },
  );
});
