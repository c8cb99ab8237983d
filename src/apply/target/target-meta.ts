import type { Db } from '../../sqlite/index.ts';
import { quoteIdent, cachedStatement, writeTransactionSync, either, jsonObject, StoredRow } from '../../sqlite/index.ts';
import { PROJECTIONS_TABLE, TARGET_INFO_TABLE } from '../../capture/index.ts';
import { currentCode, isReasonCode, reasonsOf, type ReasonCode } from '../../reasons.ts';
import { isKindName, KIND_NAMES } from '../../projection/index.ts';
import type { KindName } from '../../projection/index.ts';
import { parseFedBy, type FedBy } from './fed-by.ts';
import { parseBuildState, type BuildState } from './build-state.ts';
export { ownedTables } from '../../projection/index.ts';

/*
 * Target metadata: one row per projection, in the target database. The
 * cursor and the rows it describes are always written in one transaction.
 * States and reason codes are designed for the evolution work (shadow
 * rebuilds, suspension, health) to use without a migration:
 *   state  building | active | suspended
 *   reason a stable code when not active (TARGET_DIVERGED, UNCAPTURED_REPLACE,
 *          TABLE_UNARMED, DEFINITION_CHANGED, SOURCE_SCHEMA_CHANGED, ...)
 */

// Named in capture, which must recognize a target (enable refuses one: TARGET_NOT_SOURCE).
export { PROJECTIONS_TABLE, TARGET_INFO_TABLE };
const TARGET_FORMAT = 1;

const PROJECTION_STATES = ['building', 'active', 'suspended'] as const;
export type ProjectionState = (typeof PROJECTION_STATES)[number];

/**
 * Suspensions that each run looks at again, because fixing their cause is
 * enough (nothing diverged): kind `suspend` that clears by itself in
 * src/reasons.ts. They are the source-side ones (the table's arming or
 * mode), TARGET_CONSTRAINT (a UNIQUE index a user added to a target table,
 * which the batch would break; nothing of it was written),
 * USER_TRIGGER_WRITES_PROJECTION (a user's trigger on its tables that
 * writes another projection's table: projection-writes.ts), and a stored
 * definition that did not compile (broken-definition.ts: it runs again once
 * it compiles).
 */
export const SELF_CLEARING_SUSPENSIONS: ReadonlySet<string> = reasonsOf('suspend', true);

export interface ProjectionRecord {
  readonly name: string;
  readonly sourceId: string;
  readonly sourcePath: string | null;
  readonly sourceTable: string;
  readonly kind: KindName;
  readonly targetTable: string;
  readonly definition: string;
  readonly sourceShape: string;
  readonly fingerprint: string;
  readonly cursor: string | null;
  readonly seq: number;
  readonly state: ProjectionState;
  /** Why it is not active (a retired code an older release stored reads as the code that replaced it), or null. */
  readonly reason: ReasonCode | null;
  /** What the reason found (a JSON object as stored), or null. */
  readonly detail: Readonly<Record<string, unknown>> | null;
  readonly shadowTable: string | null;
  /** A protected rebuild in progress (shadow-build.ts), or null. */
  readonly build: BuildState | null;
  /** The message of the last failed sync attempt since the last success (null when the last attempt succeeded). */
  readonly lastError: string | null;
  /** Its code: the SluiceError code (TARGET_FULL, TARGET_BUSY, ...), the SQLite error code (SQLITE_CONSTRAINT_TRIGGER, ...), or APPLY_FAILED. */
  readonly lastErrorCode: string | null;
  /** When it failed (ms since the epoch). */
  readonly lastErrorMs: number | null;
  /** Failed attempts since the last success (0 after a success). */
  readonly failures: number;
  /** How it was last fed by subscribe or import (fed-by.ts; a source path says sync); null when neither fed it since this was recorded. */
  readonly fedBy: FedBy | null;
  readonly appliedEvents: number;
  readonly lastEventMs: number | null;
  readonly createdMs: number;
  readonly updatedMs: number;
}

export function ensureTargetMeta(db: Db, schema: string): void {
  const s = quoteIdent(schema);
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${s}.${TARGET_INFO_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), format INTEGER NOT NULL, created_ms INTEGER NOT NULL)`,
  );
  db.prepare(`INSERT OR IGNORE INTO ${s}.${TARGET_INFO_TABLE} (id, format, created_ms) VALUES (1, ?, ?)`).run(TARGET_FORMAT, Date.now());
  db.exec(`CREATE TABLE IF NOT EXISTS ${s}.${PROJECTIONS_TABLE} (
  name TEXT PRIMARY KEY,
  source_id TEXT NOT NULL,
  source_path TEXT,
  source_table TEXT NOT NULL,
  kind TEXT NOT NULL,
  target_table TEXT NOT NULL,
  definition TEXT NOT NULL,
  source_shape TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  cursor TEXT,
  seq INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL CHECK (state IN ('building', 'active', 'suspended')),
  reason TEXT,
  detail TEXT,
  shadow_table TEXT,
  last_error TEXT,
  applied_events INTEGER NOT NULL DEFAULT 0,
  last_event_ms INTEGER,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  ${ADDED_COLUMNS.map(([name, decl]) => `${name} ${decl}`).join(',\n  ')}
)`);
  addMissingColumns(db, s);
}

/**
 * Columns added to the projections table after its first format, with their
 * declarations. A target made before them gets them at its next open by sync
 * or import (ALTER TABLE ADD COLUMN, in one transaction); readers (health)
 * take a missing one as its default.
 */
const ADDED_COLUMNS: readonly (readonly [string, string])[] = [
  ['last_error_code', 'TEXT'],
  ['last_error_ms', 'INTEGER'],
  ['failures', 'INTEGER NOT NULL DEFAULT 0'],
  // A protected rebuild in progress (shadow-build.ts): its state as JSON, null when none.
  ['build', 'TEXT'],
  // How a projection with no source path is fed (fed-by.ts): subscribe's broker and stream, or import's file; null when neither recorded it.
  ['fed_by', 'TEXT'],
  // The cursors of histories a projection was rebuilt away from (its source restored from an older copy): a JSON array.
  ['left_cursors', 'TEXT'],
];

function addMissingColumns(db: Db, s: string): void {
  const missing = () => {
    const have = new Set(
      (db.prepare(`SELECT name FROM ${s}.pragma_table_info(?)`).pluck().all(PROJECTIONS_TABLE) as string[]).map((n) => n.toLowerCase()),
    );
    return ADDED_COLUMNS.filter(([name]) => !have.has(name));
  };
  if (missing().length === 0) return;
  // Deferred (an IMMEDIATE one on a sync session would take the source's
  // write lock too): the target's write lock first, then look again, so two
  // syncs opening one old target at once add each column once.
  writeTransactionSync(db, () => {
    db.prepare(`UPDATE ${s}.${TARGET_INFO_TABLE} SET id = id`).run();
    for (const [name, decl] of missing()) db.exec(`ALTER TABLE ${s}.${PROJECTIONS_TABLE} ADD COLUMN ${name} ${decl}`);
  });
}

/**
 * Undoes ensureTargetMeta on a database that was no target before and holds
 * no projection: drops sluice's two tables, in one transaction, so that the
 * file reads again as what it was (health: NOT_A_TARGET, not an empty and
 * healthy target). Returns whether it did; a target with a projection is
 * left alone.
 */
export function dropEmptyTargetMeta(db: Db, schema: string): boolean {
  const s = quoteIdent(schema);
  return writeTransactionSync(db, () => {
    if (!hasTargetMeta(db, schema)) return false;
    if (db.prepare(`SELECT 1 FROM ${s}.${PROJECTIONS_TABLE} LIMIT 1`).get() !== undefined) return false;
    db.exec(`DROP TABLE ${s}.${PROJECTIONS_TABLE}; DROP TABLE IF EXISTS ${s}.${TARGET_INFO_TABLE}`);
    return true;
  });
}

export function hasTargetMeta(db: Db, schema: string): boolean {
  return (
    cachedStatement(db, `SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ?`).get(PROJECTIONS_TABLE) !==
    undefined
  );
}

/**
 * A stored row as its record, each value read once, here: a kind of the
 * registry, a state, a reason code of the catalog, whole numbers, the JSON
 * of a detail or of a rebuild in progress. A value that does not read (a
 * newer sluice wrote it, or a hand edit) throws StoredValueError naming
 * the target, the row, the column and the value. (The cursor and the
 * definition are read where they are used: a projection whose cursor or
 * definition does not read is suspended alone, with its reason.) A column
 * an older target lacks reads as its default.
 */
function fromRow(db: Db, schema: string, r: Record<string, unknown>): ProjectionRecord {
  const row = new StoredRow(db, { role: 'Target', schema, table: PROJECTIONS_TABLE, row: String(r.name) }, r);
  const kind = row.text('kind');
  const reason = row.textOrNull('reason');
  const current = reason === null ? null : currentCode(reason);
  return {
    name: row.text('name'),
    sourceId: row.text('source_id'),
    sourcePath: row.textOrNull('source_path'),
    sourceTable: row.text('source_table'),
    kind: isKindName(kind) ? kind : row.refuse('kind', either(KIND_NAMES)),
    targetTable: row.text('target_table'),
    definition: row.text('definition'),
    sourceShape: row.text('source_shape'),
    fingerprint: row.text('fingerprint'),
    cursor: row.textOrNull('cursor'),
    seq: row.whole('seq'),
    state: row.oneOf('state', PROJECTION_STATES),
    reason: current === null ? null : isReasonCode(current) ? current : row.refuse('reason', 'a code of docs/reasons.md'),
    detail: row.jsonOrNull('detail', jsonObject, 'a JSON object'),
    shadowTable: row.textOrNull('shadow_table'),
    build: row.jsonOrNull('build', parseBuildState, 'the JSON of a protected rebuild in progress'),
    lastError: row.textOrNull('last_error'),
    lastErrorCode: row.textOrNull('last_error_code'),
    lastErrorMs: row.wholeOrNull('last_error_ms'),
    failures: row.wholeOrNull('failures') ?? 0,
    fedBy: parseFedBy(r.fed_by),
    appliedEvents: row.whole('applied_events'),
    lastEventMs: row.wholeOrNull('last_event_ms'),
    createdMs: row.whole('created_ms'),
    updatedMs: row.whole('updated_ms'),
  };
}

export function readProjections(db: Db, schema: string): ProjectionRecord[] {
  if (!hasTargetMeta(db, schema)) return [];
  return (db.prepare(`SELECT * FROM ${quoteIdent(schema)}.${PROJECTIONS_TABLE} ORDER BY name`).all() as Record<string, unknown>[]).map(
    (r) => fromRow(db, schema, r),
  );
}

export function readProjection(db: Db, schema: string, name: string): ProjectionRecord | undefined {
  if (!hasTargetMeta(db, schema)) return undefined;
  const r = cachedStatement(db, `SELECT * FROM ${quoteIdent(schema)}.${PROJECTIONS_TABLE} WHERE name = ?`).get(name) as
    Record<string, unknown> | undefined;
  return r === undefined ? undefined : fromRow(db, schema, r);
}

/** What a new projection row starts with; the rest (cursor, reason, counters) is set as it runs. */
type NewProjection = Pick<
  ProjectionRecord,
  'name' | 'sourceId' | 'sourcePath' | 'sourceTable' | 'kind' | 'targetTable' | 'definition' | 'sourceShape' | 'fingerprint' | 'state'
>;

/** The stored row of a compiled projection: its definition as data (a handler is code and is not stored). */
export function newProjectionRecord(
  p: {
    readonly name: string;
    readonly kind: KindName;
    readonly targetTable: string;
    readonly fingerprint: string;
    readonly definition: object;
    readonly source: { readonly table: string };
  },
  sourceId: string,
  sourcePath: string | null,
  state: ProjectionState,
): NewProjection {
  const { handler: _handler, ...data } = p.definition as { handler?: unknown };
  return {
    name: p.name,
    sourceId,
    sourcePath,
    sourceTable: p.source.table,
    kind: p.kind,
    targetTable: p.targetTable,
    definition: JSON.stringify(data),
    sourceShape: JSON.stringify(p.source),
    fingerprint: p.fingerprint,
    state,
  };
}

export function insertProjection(db: Db, schema: string, p: NewProjection): void {
  const now = Date.now();
  db.prepare(
    `INSERT INTO ${quoteIdent(schema)}.${PROJECTIONS_TABLE} (name, source_id, source_path, source_table, kind, target_table, definition, source_shape, fingerprint, state, created_ms, updated_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    p.name,
    p.sourceId,
    p.sourcePath,
    p.sourceTable,
    p.kind,
    p.targetTable,
    p.definition,
    p.sourceShape,
    p.fingerprint,
    p.state,
    now,
    now,
  );
}

/** Stores the new cursor (and marks the projection active): call in the transaction that wrote the rows. */
export function storeCursor(
  db: Db,
  schema: string,
  name: string,
  cursor: string,
  seq: number,
  applied: number,
  lastEventMs: number | null,
): void {
  cachedStatement(
    db,
    `UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET cursor = ?, seq = ?, state = 'active', reason = NULL, detail = NULL, last_error = NULL, last_error_code = NULL, last_error_ms = NULL, failures = 0,
       applied_events = applied_events + ?, last_event_ms = coalesce(?, last_event_ms), updated_ms = ? WHERE name = ?`,
  ).run(cursor, seq, applied, lastEventMs, Date.now(), name);
}

export function setState(db: Db, schema: string, name: string, state: ProjectionState, reason: ReasonCode | null, detail: unknown): void {
  db.prepare(`UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET state = ?, reason = ?, detail = ?, updated_ms = ? WHERE name = ?`).run(
    state,
    reason,
    detail === null || detail === undefined ? null : JSON.stringify(detail),
    Date.now(),
    name,
  );
}

/** How many left cursors a projection keeps (recordLeftCursor): the most recent. */
const LEFT_KEPT = 16;

/**
 * The cursors of the histories projection `name` was rebuilt away from, most
 * recent last: a snapshot installed over it because a cursor at its own seq
 * showed another history (its source restored from an older copy and
 * written again: HISTORY_DIVERGED; a seq alone tells none). A file
 * that continues one of them holds a history the source left (import
 * changes nothing with it: docs/jsonl.md, "Which file wins"). Empty when
 * none is recorded (or the column does not read).
 */
export function readLeftCursors(db: Db, schema: string, name: string): string[] {
  try {
    const v = db
      .prepare(`SELECT left_cursors FROM ${quoteIdent(schema)}.${PROJECTIONS_TABLE} WHERE name = ?`)
      .pluck()
      .get(name);
    const parsed: unknown = typeof v === 'string' ? JSON.parse(v) : [];
    return Array.isArray(parsed) ? parsed.filter((c): c is string => typeof c === 'string') : [];
  } catch {
    return [];
  }
}

/** Adds `cursor` to projection `name`'s left cursors (readLeftCursors), in the caller's transaction. */
export function recordLeftCursor(db: Db, schema: string, name: string, cursor: string): void {
  const left = [...readLeftCursors(db, schema, name).filter((c) => c !== cursor), cursor].slice(-LEFT_KEPT);
  db.prepare(`UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET left_cursors = ? WHERE name = ?`).run(JSON.stringify(left), name);
}

/**
 * Clears the failed attempts of a projection that a later attempt found
 * current (nothing to apply, so no cursor was stored to clear them). Call in
 * a transaction of its own. True when there was one to clear.
 */
export function clearFailure(db: Db, schema: string, name: string): boolean {
  return (
    db
      .prepare(
        `UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET last_error = NULL, last_error_code = NULL, last_error_ms = NULL, failures = 0, updated_ms = ? WHERE name = ? AND failures > 0`,
      )
      .run(Date.now(), name).changes > 0
  );
}

/**
 * Records a failed sync attempt of a projection: its code, message and time,
 * and one more consecutive failure (storeCursor resets them). Call in a
 * transaction of its own, after the failed one rolled back. Nothing is
 * recorded for a projection that has no row yet (its first build failed).
 */
export function recordFailure(db: Db, schema: string, name: string, code: string, message: string): void {
  const now = Date.now();
  db.prepare(
    `UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET last_error = ?, last_error_code = ?, last_error_ms = ?, failures = failures + 1, updated_ms = ? WHERE name = ?`,
  ).run(message, code, now, now, name);
}
