import type { Db } from '../sqlite/index.ts';
import { CaptureRefusedError } from '../errors.ts';
import {
  collationKnown,
  columnCollations,
  describeTable,
  primaryKeyCollations,
  expressionUniqueIndexes,
  findObjects,
  type TableInfo,
  foldIdent,
  quoteIdent,
  uniqueIndexes,
} from '../sqlite/index.ts';
import { checkForeignKeyRules, type FkViolation } from './fk-rules.ts';
import {
  CONSUMERS_TABLE,
  consumersDdlSoFar,
  DDL_TABLE,
  DDL_TABLE_SQL,
  LEGACY_DDL_TABLE_SQL,
  JOURNAL_TABLE,
  MARK_VIEW,
  MARK_VIEW_SQL,
  TICK_VIEW,
  TICK_VIEW_SQL,
  FLUSH_VIEW,
  FLUSH_VIEW_SQL,
  OWN_TABLES,
  PENDING_TABLE,
  PREFIX,
  STATE_TABLE,
  isOwnTriggerName,
  legacyJournalDdl,
  legacyPendingDdl,
  MASK_COLUMN,
  legacyStateDdl,
  legacyTablesDdl,
  metadataDdl,
  TABLES_TABLE,
} from './schema.ts';
import { refuseTarget } from './target-guard.ts';
import { uniqueFromRowid, uniqueFromRowidError } from './unique-from-rowid.ts';
import { volatileDefault, volatileDefaultError } from './volatile-default.ts';

/*
 * Validation gates. Each runs before anything is written and refuses with an
 * error that names the table, the rule and the fix.
 */

function fkViolationError(v: FkViolation): CaptureRefusedError {
  if (v.code === 'FK_UPDATE_CYCLE') {
    return new CaptureRefusedError(
      v.code,
      v.table,
      `Table ${v.table}: its ON UPDATE CASCADE/SET NULL/SET DEFAULT foreign keys form a cycle back to it (${v.path.join(' -> ')}); a nested action could change the row before its change is recorded, so events could not be replayed in order. Fix: make one of these actions NO ACTION or RESTRICT, or do not capture ${v.table}.`,
    );
  }
  return new CaptureRefusedError(
    v.code,
    v.table,
    `Table ${v.table}: deleting a row can come back as an update of its primary key (${v.path.join(' -> ')}); the delete is recorded after the nested update, so a key could be reused downstream. Fix: change the ON DELETE/ON UPDATE action on that path to NO ACTION, RESTRICT or CASCADE-delete, or do not capture ${v.table}.`,
  );
}

/** Checks one table requested for capture and returns its description. */
export function checkTable(db: Db, name: string): TableInfo {
  if (name.toLowerCase().startsWith(PREFIX) || name.toLowerCase().startsWith('sqlite_')) {
    throw new CaptureRefusedError(
      'RESERVED_NAME',
      name,
      `Table ${name}: names starting with ${PREFIX} or sqlite_ are reserved and cannot be captured. Pick one of your own tables.`,
    );
  }
  const objects = findObjects(db, name);
  const main = objects.find((o) => o.schema === 'main');
  const temp = objects.filter((o) => o.schema === 'temp');
  if (main === undefined) {
    if (temp.length > 0) {
      throw new CaptureRefusedError(
        'TEMP_TABLE_REFUSED',
        name,
        `Table ${name} exists only in TEMP; TEMP objects vanish with their connection and other writers never see them. Capture a table in the main database.`,
      );
    }
    throw new CaptureRefusedError(
      'TABLE_NOT_FOUND',
      name,
      `Table ${name} does not exist in the main database. Check the name (sluice status lists captured tables).`,
    );
  }
  if (temp.length > 0) {
    throw new CaptureRefusedError(
      'TEMP_SHADOW',
      name,
      `Table ${name}: a TEMP ${temp[0]?.type} of the same name shadows it on this connection, so unqualified SQL would hit the wrong object. Drop the TEMP object (DROP ${temp[0]?.type?.toUpperCase() ?? 'TABLE'} temp.${quoteIdent(name)}) and retry.`,
    );
  }
  if (main.type === 'view') {
    throw new CaptureRefusedError(
      'VIEW_REFUSED',
      name,
      `${name} is a view; only ordinary tables can be captured. Capture the tables the view reads.`,
    );
  }
  if (main.type !== 'table') {
    throw new CaptureRefusedError(
      'VIRTUAL_TABLE_REFUSED',
      name,
      `${name} is a virtual table; triggers cannot be attached to it. Capture the ordinary tables that feed it.`,
    );
  }
  const info = describeTable(db, name);
  if (info === undefined) throw new CaptureRefusedError('TABLE_NOT_FOUND', name, `Table ${name} does not exist in the main database.`);
  checkColumnNames(info);
  if (info.keyColumns.length === 0) {
    throw new CaptureRefusedError(
      'NO_PRIMARY_KEY',
      info.name,
      `Table ${info.name} has no explicit PRIMARY KEY; its hidden rowid is not a stable key (VACUUM may renumber it). Fix: rebuild the table with a declared PRIMARY KEY.`,
    );
  }
  checkKeyCollations(db, info);
  const expression = expressionUniqueIndexes(db, info.name)[0];
  if (expression !== undefined) throw expressionIndexError(info.name, expression);
  const uniques = uniqueIndexes(db, info.name);
  const fromRowid = uniqueFromRowid(info, uniques);
  if (fromRowid !== undefined) throw uniqueFromRowidError(info.name, fromRowid);
  const volatile = volatileDefault(db, info, uniques);
  if (volatile !== undefined) throw volatileDefaultError(info.name, volatile);
  const nullable = info.columns.filter((c) => c.pkIndex > 0 && !c.notNull);
  if (!info.withoutRowid && !info.rowidAlias && nullable.length > 0) {
    const where = nullable.map((c) => `${quoteIdent(c.name)} IS NULL`).join(' OR ');
    const bad = db.prepare(`SELECT count(*) AS n FROM main.${quoteIdent(info.name)} WHERE ${where}`).get() as { n: bigint };
    if (bad.n > 0n) {
      throw new CaptureRefusedError(
        'NULL_KEY_ROWS',
        info.name,
        `Table ${info.name}: ${bad.n} row(s) have a NULL primary key (${nullable.map((c) => c.name).join(', ')}), so they have no identity. Fix: delete or re-key those rows, then enable again. (New NULL-key writes will fail loudly once captured.)`,
      );
    }
  }
  return info;
}

/**
 * A key compared with a collation the application registers on its own
 * connections (Python's create_collation): sluice's connections do not
 * have it, so no copy of the table could be keyed or compared (every sync
 * would fail with "no such collation sequence"). Refused, naming the
 * column: its declared collation, or the one its PRIMARY KEY clause names.
 * A column outside the key with such a collation is no concern of capture
 * (a map can leave it out); a mirror of it is refused when it is built.
 */
function checkKeyCollations(db: Db, info: TableInfo): void {
  const declared = columnCollations(info.sql ?? '');
  const keyed = primaryKeyCollations(db, info.name);
  for (const k of info.keyColumns) {
    const own = [...declared].find(([c]) => foldIdent(c) === foldIdent(k))?.[1];
    for (const coll of [own, keyed.get(k)]) {
      if (coll === undefined || collationKnown(db, coll)) continue;
      throw new CaptureRefusedError(
        'COLLATION_UNKNOWN',
        info.name,
        `Table ${info.name}: key column ${k} is compared with COLLATE ${coll}, a collation the application registers on its own connections, not one SQLite builds in; sluice's connections do not have it, so no copy of ${info.name} could be keyed or compared (every sync would fail with "no such collation sequence: ${coll}"). Fix: declare ${k} with a built-in collation (BINARY, NOCASE or RTRIM; changing it means rebuilding ${info.name}), or do not capture ${info.name}.`,
      );
    }
  }
}

/** The refusal of a table with a UNIQUE index over an expression (also an unarmed reason in verifyCapture). */
function expressionIndexError(table: string, index: string): CaptureRefusedError {
  return new CaptureRefusedError(
    'UNIQUE_EXPRESSION_INDEX',
    table,
    `Table ${table}: its UNIQUE index ${index} is over an expression, so an INSERT OR REPLACE through it can delete a row that capture cannot find (the triggers cannot evaluate the index expression), and downstream copies would keep that row. Fix: make it a UNIQUE index over plain columns or do not capture ${table}.`,
  );
}

/**
 * Column names starting with `_sluice_` (as SQLite compares names: ASCII
 * case folded) are sluice's own: it names its columns so where they sit
 * next to a table's columns (a map's image table, the expression probe).
 * A table with one is refused, at enable and at re-arm: a column added by
 * ALTER TABLE changes the table's fingerprint, so the table is unarmed
 * (RESERVED_COLUMN_NAME, see arming.ts) until it is enabled again, which
 * refuses it here.
 */
function checkColumnNames(info: TableInfo): void {
  const bad = reservedColumn(info);
  if (bad === undefined) return;
  throw new CaptureRefusedError(
    'RESERVED_COLUMN_NAME',
    info.name,
    `Table ${info.name}: column ${bad.name} starts with ${PREFIX}, a prefix reserved for the columns sluice adds next to yours when it applies changes, so the table cannot be captured. Fix: rename the column${renameTo(info, bad.name)}, then run sluice enable again.`,
  );
}

/** The rename that frees `column` of the prefix: to its name without it, when that is free; else said in words. */
function renameTo(info: TableInfo, column: string): string {
  const free = column.slice(PREFIX.length);
  const taken = info.columns.some((c) => foldIdent(c.name) === foldIdent(free));
  if (free === '' || taken) return ` to a name that does not start with ${PREFIX}`;
  return ` (ALTER TABLE ${quoteIdent(info.name)} RENAME COLUMN ${quoteIdent(column)} TO ${quoteIdent(free)})`;
}

/** The first column of `info` whose name starts with sluice's reserved prefix, if any. */
export function reservedColumn(info: TableInfo): { readonly name: string } | undefined {
  return info.columns.find((c) => foldIdent(c.name).startsWith(PREFIX));
}

/**
 * Namespace gate: every `_sluice_` object in main must be one sluice made,
 * and no TEMP object may shadow one of them.
 */
export function checkNamespace(db: Db): void {
  refuseTarget(db); // a target's _sluice_ tables are sluice's own, but a target is no source
  for (const r of sluiceObjects(db)) {
    if (!r.ours) {
      throw new CaptureRefusedError(
        'NAMESPACE_COLLISION',
        r.name,
        `The ${r.type} ${r.name} uses sluice's reserved prefix _sluice_ but was not made by sluice. Rename it (sluice creates only _sluice_ objects and refuses to share the namespace).`,
      );
    }
  }
  // Only TEMP objects named like sluice's own objects in main shadow them
  // (sluice's apply sessions keep TEMP work tables of their own, _sluice_net_*).
  const own = new Set([...OWN_TABLES, MARK_VIEW, TICK_VIEW, FLUSH_VIEW].map(foldIdent));
  const temp = (
    db.prepare("SELECT type, name FROM temp.sqlite_schema WHERE name LIKE '\\_sluice\\_%' ESCAPE '\\'").all() as {
      type: string;
      name: string;
    }[]
  ).filter((o) => own.has(foldIdent(o.name)) || isOwnTriggerName(foldIdent(o.name)));
  const first = temp[0];
  if (first !== undefined) {
    throw new CaptureRefusedError(
      'TEMP_SHADOW',
      first.name,
      `A TEMP ${first.type} named ${first.name} shadows sluice's metadata on this connection. Drop it (DROP ${first.type.toUpperCase()} temp.${quoteIdent(first.name)}) and retry.`,
    );
  }
}

/**
 * Every `_sluice_` object in main, and whether sluice made it: our table
 * names, and triggers with our names whose body writes our journal (or,
 * for the REPLACE guards, our pending table).
 */
export function sluiceObjects(db: Db): { type: string; name: string; ours: boolean }[] {
  const rows = db
    .prepare("SELECT type, name, tbl_name AS tbl, sql FROM main.sqlite_schema WHERE name LIKE '\\_sluice\\_%' ESCAPE '\\'")
    .all() as { type: string; name: string; tbl: string; sql: string | null }[];
  return rows.map((r) => ({
    type: r.type,
    name: r.name,
    ours:
      (r.type === 'table' && isOwnTableSql(r.name, r.sql)) ||
      (r.type === 'view' && r.name === MARK_VIEW && r.sql === MARK_VIEW_SQL) ||
      (r.type === 'view' && r.name === TICK_VIEW && r.sql === TICK_VIEW_SQL) ||
      (r.type === 'view' && r.name === FLUSH_VIEW && r.sql === FLUSH_VIEW_SQL) ||
      // The BEFORE guards (_bins/_bupd) write _sluice_pending, not the journal;
      // missing them left them behind on disable, failing every later write
      // without recursive_triggers with "no such table: _sluice_pending".
      (r.type === 'trigger' &&
        isOwnTriggerName(r.name) &&
        ((r.sql ?? '').includes(JOURNAL_TABLE) || (r.sql ?? '').includes(PENDING_TABLE))),
  }));
}

/*
 * A table is ours only when its DDL is exactly what sluice creates: a
 * foreign table that merely borrows one of our names (say `_sluice_state`)
 * is a namespace collision, and must never be read as our state or dropped
 * as a "partial capture". The journal grows by ADD COLUMN, which SQLite
 * records by appending `, cN` to the stored DDL.
 */
const MASK_IN_DDL = new RegExp(`, ${MASK_COLUMN}(?=[,)])`);

/** Whether `sql`, the DDL SQLite stores for the main table `name`, is one sluice makes (or upgrades in place). */
export function isOwnTableSql(name: string, sql: string | null): boolean {
  // Positions of the tables in metadataDdl().
  const ddlIndex = OWN_TABLES.indexOf(name);
  if (ddlIndex < 0 || sql === null) return false;
  if (name === DDL_TABLE) return sql === DDL_TABLE_SQL || sql === LEGACY_DDL_TABLE_SQL; // made by alter, not by enable (not in metadataDdl)
  const width = name === JOURNAL_TABLE || name === PENDING_TABLE ? (sql.match(/, c\d+/g) ?? []).length : 0;
  if (metadataDdl(width)[ddlIndex] === sql) return true;
  // The journal upgraded from format 2 has its mask after the image columns it had then; before the upgrade, none.
  if (name === JOURNAL_TABLE) return sql.replace(MASK_IN_DDL, '') === legacyJournalDdl(width);
  // Format 1's tables, which enable upgrades in place.
  return (
    (name === PENDING_TABLE && sql === legacyPendingDdl(width)) ||
    (name === STATE_TABLE && sql === legacyStateDdl()) ||
    // Before a column was first left out of capture (see TABLES_EXCLUDED_COLUMN_DEF).
    (name === TABLES_TABLE && sql === legacyTablesDdl()) ||
    // The acknowledgements as an older sluice made them, or partway through their in-place upgrade.
    (name === CONSUMERS_TABLE && consumersDdlSoFar().includes(sql))
  );
}

/**
 * The gates enable runs before it writes anything, for capturing `tables`:
 * the namespace (checkNamespace), each table (checkTable), then the
 * foreign-key rules over them; returns each table's description. Reads
 * only: enable runs it in its write transaction, and plan runs it to say
 * what enable would refuse.
 */
export function checkEnable(db: Db, tables: readonly string[]): Map<string, TableInfo> {
  checkNamespace(db);
  const infos = new Map<string, TableInfo>();
  for (const name of tables) {
    const info = checkTable(db, name);
    infos.set(info.name, info);
  }
  checkForeignKeys(db, [...infos.keys()]);
  return infos;
}

/**
 * Which of `tables` enable would capture, each by itself: the ones that
 * pass checkTable and the foreign-key rules, described, and the others with
 * the error enable refuses them with. Reads only; `sluice init` lists the
 * refused ones commented out with why.
 */
export function capturable(
  db: Db,
  tables: readonly string[],
): { readonly tables: readonly TableInfo[]; readonly refused: readonly CaptureRefusedError[] } {
  const infos: TableInfo[] = [];
  const refused: CaptureRefusedError[] = [];
  for (const name of tables) {
    try {
      infos.push(checkTable(db, name));
    } catch (err) {
      if (!(err instanceof CaptureRefusedError)) throw err;
      refused.push(err);
    }
  }
  // The rules depend on the schema only, table by table: one pass over the foreign keys for all of them.
  const violations = new Map<string, FkViolation>();
  const names = infos.map((t) => t.name);
  for (const v of checkForeignKeyRules(db, names)) if (!violations.has(v.table)) violations.set(v.table, v);
  for (const v of violations.values()) refused.push(fkViolationError(v));
  return { tables: infos.filter((t) => !violations.has(t.name)), refused };
}

export function checkForeignKeys(db: Db, captured: readonly string[]): void {
  const first = checkForeignKeyRules(db, captured)[0];
  if (first !== undefined) throw fkViolationError(first);
}
