/*
 * A scratch copy of src/capture/triggers.ts with knobs, for measuring
 * alternative journal and trigger shapes. Bench only: src/ stays the source of
 * truth, and `shapeSql(DEFAULT_SHAPE)` is checked to be byte-identical to what
 * src/capture/triggers.ts generates before any alternative is timed.
 *
 * Every knob keeps the capture semantics of src (one journal row per event,
 * seq INTEGER PRIMARY KEY, exact no-op detection, a wall clock per event, a
 * key change as one event, retention pruning) unless its comment says it is
 * a lower bound that drops something, to show what that thing costs.
 */
import type { Db } from '../../src/sqlite/connection.ts';
import { quoteIdent } from '../../src/sqlite/quote.ts';
import { describeTable, type TableInfo } from '../../src/sqlite/introspect.ts';
import { enable } from '../../src/capture/enable.ts';
import { buildTriggers } from '../../src/capture/triggers.ts';
import {
  JOURNAL_TABLE,
  OP_DELETE,
  OP_INSERT,
  OP_UPDATE,
  PRUNE_INTERVAL,
  PRUNE_TRIGGER,
  STATE_TABLE,
  TABLES_TABLE,
  journalColumn,
  triggerNames,
  type CaptureMode,
} from '../../src/capture/schema.ts';

export interface Shape {
  readonly mode: CaptureMode;
  /**
   * How the per-table last seq is kept:
   * - `update`: src today, `UPDATE _sluice_tables SET last_seq = last_insert_rowid() WHERE tid = N` per event;
   * - `narrow`: the same UPDATE on a two-column `_sluice_last(tid INTEGER PRIMARY KEY, seq INTEGER)` table;
   * - `index`: no per-event write; `CREATE INDEX _sluice_journal_tid ON _sluice_journal(tid)` answers max(seq) per tid;
   * - `none`: nothing in the writer (readers derive it by scanning the journal tail).
   */
  readonly lastSeq: 'update' | 'narrow' | 'index' | 'none';
  /**
   * Retention pruning:
   * - `trigger`: src today, an AFTER INSERT trigger on the journal with WHEN seq % 1024 = 0;
   * - `inline`: two statements appended to every capture trigger, doing nothing unless seq % 1024 = 0;
   * - `none`: lower bound, no pruning at all (NOT a valid shape).
   */
  readonly prune: 'trigger' | 'inline' | 'none';
  /**
   * Wall clock per event: `jdnow` julianday('now') (src), `jd` julianday() (the
   * same value: no argument means 'now', without parsing a string), `ms`
   * integer Unix ms, `const` lower bound 0.0 (NOT a valid shape).
   */
  readonly ts: 'jdnow' | 'jd' | 'ms' | 'const';
  /**
   * Update WHEN clause:
   * - `exact`: src today, per column `(OLD.c IS NOT NEW.c COLLATE BINARY OR typeof(OLD.c) <> typeof(NEW.c))`;
   * - `exact-ipk`: the same, without typeof() on an INTEGER PRIMARY KEY rowid alias (always an integer);
   * - `plain`: lower bound, `OLD.c IS NOT NEW.c` only (NOT exact: misses 1 -> 1.0 and NOCASE changes);
   * - `none`: lower bound, no WHEN (journals no-op updates; NOT a valid shape).
   */
  readonly when: 'exact' | 'exact-ipk' | 'plain' | 'none';
  /** Extra trailing journal columns beyond what t needs (a generic journal sized for a wider table). */
  readonly pad: number;
  /**
   * NOT NULL on the columns the triggers write (journal tid/op/ts, state
   * pruned_through, tables last_seq): `keep` (src) or `drop`. A NOT NULL check
   * with the default ABORT makes SQLite open a statement journal (a savepoint
   * that copies every page the statement touches) for any statement that
   * fires the trigger; the values are never NULL, so the check buys nothing.
   */
  readonly notNull: 'keep' | 'drop';
}

export const DEFAULT_SHAPE: Shape = {
  mode: 'images',
  lastSeq: 'update',
  prune: 'trigger',
  ts: 'jdnow',
  when: 'exact',
  pad: 0,
  notNull: 'keep',
};

export function describeShape(s: Shape): string {
  const parts: string[] = [];
  if (s.mode !== DEFAULT_SHAPE.mode) parts.push(`mode=${s.mode}`);
  for (const k of ['lastSeq', 'prune', 'ts', 'when', 'pad', 'notNull'] as const)
    if (s[k] !== DEFAULT_SHAPE[k]) parts.push(`${k}=${String(s[k])}`);
  return parts.length === 0 ? 'src (current)' : parts.join(' ');
}

const NARROW_LAST = '_sluice_last';
const TID_INDEX = '_sluice_journal_tid';

function tsExpr(s: Shape): string {
  switch (s.ts) {
    case 'jdnow':
      return "julianday('now')";
    case 'jd':
      return 'julianday()';
    case 'ms':
      return 'CAST((julianday() - 2440587.5) * 86400000 AS INTEGER)';
    case 'const':
      return '0.0';
  }
}

/** The capture triggers of one table for a shape. With DEFAULT_SHAPE this is src's buildTriggers, byte for byte. */
export function shapeTriggers(tid: number, info: TableInfo, s: Shape): { insert: string; update: string; delete: string } {
  const names = triggerNames(tid);
  const table = quoteIdent(info.name);
  const imageCols = s.mode === 'images' ? info.columns.map((c) => c.name) : s.mode === 'keys' ? [...info.keyColumns] : [];
  const ref = (prefix: 'NEW' | 'OLD') => imageCols.map((c) => `${prefix}.${quoteIdent(c)}`);
  const ts = tsExpr(s);
  const insertRow = (op: number, values: string[]) => {
    const cols = values.map((_, i) => `, ${journalColumn(i)}`).join('');
    const vals = values.map((v) => `, ${v}`).join('');
    return `INSERT INTO ${JOURNAL_TABLE} (tid, op, ts${cols}) VALUES (${tid}, ${op}, ${ts}${vals});`;
  };
  let tail = '';
  if (s.lastSeq === 'update') tail += `\n  UPDATE ${TABLES_TABLE} SET last_seq = last_insert_rowid() WHERE tid = ${tid};`;
  if (s.lastSeq === 'narrow') tail += `\n  UPDATE ${NARROW_LAST} SET seq = last_insert_rowid() WHERE tid = ${tid};`;
  if (s.prune === 'inline') {
    // A NULL upper bound (not a prune point) makes the rowid range empty: one b-tree probe, no scan.
    tail += `\n  DELETE FROM ${JOURNAL_TABLE} WHERE seq <= (SELECT CASE WHEN last_insert_rowid() % ${PRUNE_INTERVAL} = 0 THEN last_insert_rowid() - retention END FROM ${STATE_TABLE});`;
    tail += `\n  UPDATE ${STATE_TABLE} SET pruned_through = max(pruned_through, last_insert_rowid() - retention) WHERE last_insert_rowid() % ${PRUNE_INTERVAL} = 0;`;
  }
  const changed = info.columns
    .map((c) => {
      const o = `OLD.${quoteIdent(c.name)}`;
      const n = `NEW.${quoteIdent(c.name)}`;
      if (s.when === 'plain') return `${o} IS NOT ${n}`;
      if (s.when === 'exact-ipk' && info.rowidAlias && c.pkIndex === 1) return `${o} IS NOT ${n}`;
      return `(${o} IS NOT ${n} COLLATE BINARY OR typeof(${o}) <> typeof(${n}))`;
    })
    .join('\n  OR ');
  const whenClause = s.when === 'none' ? ' ' : ` WHEN\n  ${changed}\n`;
  return {
    insert: `CREATE TRIGGER ${quoteIdent(names.insert)} AFTER INSERT ON ${table} FOR EACH ROW BEGIN
  ${insertRow(OP_INSERT, ref('NEW'))}${tail}
END`,
    update: `CREATE TRIGGER ${quoteIdent(names.update)} AFTER UPDATE ON ${table} FOR EACH ROW${whenClause}BEGIN
  ${insertRow(OP_UPDATE, [...ref('OLD'), ...ref('NEW')])}${tail}
END`,
    delete: `CREATE TRIGGER ${quoteIdent(names.delete)} AFTER DELETE ON ${table} FOR EACH ROW BEGIN
  ${insertRow(OP_DELETE, ref('OLD'))}${tail}
END`,
  };
}

/** Throws unless the scratch builder reproduces src's triggers exactly for the default shape (t has no NULL-able key guard). */
export function checkScratchMatchesSrc(db: Db, table: string): void {
  const info = describeTable(db, table);
  if (info === undefined) throw new Error(`no table ${table}`);
  for (const mode of ['images', 'keys'] as const) {
    const a = buildTriggers(1, info, mode);
    const b = shapeTriggers(1, info, { ...DEFAULT_SHAPE, mode });
    for (const op of ['insert', 'update', 'delete'] as const) {
      if (a[op] !== b[op])
        throw new Error(
          `bench/lib/shapes.ts no longer matches src/capture/triggers.ts (${mode} ${op}); update the scratch copy.\nsrc:\n${a[op]}\nscratch:\n${b[op]}`,
        );
    }
  }
}

/**
 * Installs a shape on table t: the real enable() creates every _sluice_
 * object, then the triggers (and, per knob, the prune trigger, index, or
 * narrow table) are swapped for the shape's.
 */
export function installShape(db: Db, table: string, s: Shape): void {
  enable(db, [table], { mode: s.mode });
  const info = describeTable(db, table);
  if (info === undefined) throw new Error(`no table ${table}`);
  const tid = Number((db.prepare(`SELECT tid FROM ${TABLES_TABLE} WHERE name = ?`).get(table) as { tid: bigint }).tid);
  const names = triggerNames(tid);
  for (const n of Object.values(names)) db.exec(`DROP TRIGGER IF EXISTS ${quoteIdent(n)}`);
  const pruneSql = (db.prepare("SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = ?").get(PRUNE_TRIGGER) as { sql: string })
    .sql;
  db.exec(`DROP TRIGGER ${PRUNE_TRIGGER}`);
  if (s.notNull === 'drop') {
    // Rebuild the tables without NOT NULL (same columns, same data).
    for (const t of [JOURNAL_TABLE, STATE_TABLE, TABLES_TABLE]) {
      const sql = (db.prepare("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?").get(t) as { sql: string }).sql;
      db.exec(sql.replaceAll(' NOT NULL', '').replace(`CREATE TABLE ${t}`, `CREATE TABLE ${t}_x`));
      db.exec(`INSERT INTO ${t}_x SELECT * FROM ${t}`);
      db.exec(`DROP TABLE ${t}`);
      db.exec(`ALTER TABLE ${t}_x RENAME TO ${t}`);
    }
  }
  if (s.prune === 'trigger') db.exec(pruneSql);
  if (s.lastSeq === 'narrow') {
    db.exec(`CREATE TABLE ${NARROW_LAST} (tid INTEGER PRIMARY KEY, seq INTEGER${s.notNull === 'drop' ? '' : ' NOT NULL'})`);
    db.prepare(`INSERT INTO ${NARROW_LAST} (tid, seq) VALUES (?, 0)`).run(tid);
  }
  if (s.lastSeq === 'index') db.exec(`CREATE INDEX ${TID_INDEX} ON ${JOURNAL_TABLE}(tid)`);
  const have = Number((db.prepare('SELECT journal_width AS w FROM _sluice_state').get() as { w: bigint }).w);
  for (let i = have; i < have + s.pad; i++) db.exec(`ALTER TABLE ${JOURNAL_TABLE} ADD COLUMN ${journalColumn(i)}`);
  const sql = shapeTriggers(tid, info, s);
  db.exec(sql.insert);
  db.exec(sql.update);
  db.exec(sql.delete);
}

/** Sets the retained seq span, so that pruning really deletes (steady state) within a short run. */
export function setRetention(db: Db, retention: number): void {
  db.prepare(`UPDATE ${STATE_TABLE} SET retention = ?`).run(retention);
}

/**
 * The journal a shape writes for a fixed script of edge cases (NOCASE change,
 * 1 -> 1.0, no-op updates, a key change, REPLACE), with ts left out. Two
 * shapes that claim the same semantics must return the same string.
 */
export function edgeCaseJournal(makeDb: (setup: (db: Db) => void) => { db: Db; dispose: () => void }, s: Shape): string {
  const { db, dispose } = makeDb((d) => {
    d.exec('CREATE TABLE u (id INTEGER PRIMARY KEY, a TEXT COLLATE NOCASE, v)');
    installShape(d, 'u', s);
  });
  try {
    db.exec(`INSERT INTO u VALUES (1, 'abc', 1), (2, 'x', x'00'), (3, 'y', NULL);
      UPDATE u SET a = 'ABC' WHERE id = 1; UPDATE u SET v = 1.0 WHERE id = 1; UPDATE u SET v = 1.0 WHERE id = 1;
      UPDATE u SET v = x'00' WHERE id = 2; UPDATE u SET v = '' WHERE id = 3; UPDATE u SET id = 10 WHERE id = 3; UPDATE u SET v = v;
      DELETE FROM u WHERE id = 2; INSERT OR REPLACE INTO u VALUES (1, 'q', 2);`);
    const cols = Array.from({ length: 6 }, (_, i) => `typeof(c${i}), quote(c${i})`).join(', ');
    const rows = db.prepare(`SELECT seq, tid, op, typeof(ts), ${cols} FROM ${JOURNAL_TABLE} ORDER BY seq`).raw().all();
    return JSON.stringify(rows, (_, x: unknown) => (typeof x === 'bigint' ? Number(x) : x));
  } finally {
    dispose();
  }
}
