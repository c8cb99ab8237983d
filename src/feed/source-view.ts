import { foldIdent, connectionState, slot, checkHeldFile, heldFile, type FileIdentity } from '../sqlite/index.ts';
import type { Statement } from 'better-sqlite3';
import type { Db } from '../sqlite/index.ts';
import { FailClosedError } from '../errors.ts';
import {
  stateFromRow,
  type CaptureState,
  type CapturedTable,
  verifyCapture,
  type TableArming,
  enableCommand,
  rearmFix,
  unreadableCapture,
  FORMAT_VERSION,
  JOURNAL_TABLE,
  TABLES_TABLE,
  lastSeqSql,
  STATE_TABLE,
} from '../capture/index.ts';
import { anchorAt } from './anchor.ts';
import { encodeCursor, schemaDigest, BUMPED_KEY, CURSOR_VERSION, PRUNED_KEY, type Cursor } from './cursor.ts';

/** What a reader knows about a source inside one read transaction. */
export interface SourceView {
  readonly state: CaptureState;
  readonly tables: ReadonlyMap<string, TableArming>;
  /** Highest seq assigned (0 before the first event). */
  readonly hw: number;
  /** The source's PRAGMA schema_version in this read transaction. */
  readonly schemaVersion: number;
  /** The source's file as it was opened (db.name), for the commands messages name. */
  readonly file: string;
}

const hwStatement = slot('high-water-statement', (db) => db.prepare(`SELECT max(seq) AS m FROM main.${JOURNAL_TABLE}`));

function readHighWater(db: Db, state: CaptureState): number {
  const r = connectionState(db).get(hwStatement).get() as { m: bigint | null };
  return Math.max(r.m === null ? 0 : Number(r.m), state.prunedThrough);
}

/*
 * Every reader (changedSince above all) calls readSourceView once per read
 * transaction. verifyCapture re-prepares and re-parses the catalog on each
 * call, which costs far more than the O(1) poll it serves. Arming depends on
 * the schema only (verify.ts caches it the same way), so per connection the
 * view keeps the last verification with the schema_version it was made at,
 * and while schema_version is unchanged re-reads only what changes without
 * DDL (the state row and each table's last_seq) through prepared statements.
 * Any DDL, by any connection, changes schema_version and takes the full path.
 */
interface ViewCache {
  readonly schemaVersion: number;
  readonly tables: readonly TableArming[];
}

interface ViewStatements {
  readonly schemaVersion: Statement;
  readonly state: Statement;
  readonly lastSeqs: Statement;
}

const viewCache = slot('source-view', (): { last?: ViewCache } => ({}));
const viewStatements = slot('source-view-statements', (db): ViewStatements => ({
  schemaVersion: db.prepare('PRAGMA main.schema_version').pluck(),
  state: db.prepare(`SELECT * FROM main.${STATE_TABLE} WHERE id = 1`),
  lastSeqs: db.prepare(`SELECT t.tid, ${lastSeqSql('t.tid')} FROM main.${TABLES_TABLE} t`).raw(),
}));

function cachedView(db: Db): SourceView | undefined {
  const conn = connectionState(db);
  const cache = conn.peek(viewCache)?.last;
  const stmts = conn.peek(viewStatements);
  if (cache === undefined || stmts === undefined) return undefined;
  try {
    if (Number(stmts.schemaVersion.get() as bigint) !== cache.schemaVersion) return undefined;
    const row = stmts.state.get() as Record<string, unknown> | undefined;
    if (row === undefined) return undefined;
    const state = stateFromRow(db, row);
    if (state.format !== FORMAT_VERSION) return undefined;
    const lastSeq = new Map((stmts.lastSeqs.all() as [bigint, bigint][]).map(([tid, seq]) => [Number(tid), Number(seq)]));
    const tables = new Map<string, TableArming>();
    for (const a of cache.tables) {
      const seq = lastSeq.get(a.table.tid);
      tables.set(a.table.name, seq === undefined || seq === a.table.lastSeq ? a : { ...a, table: { ...a.table, lastSeq: seq } });
    }
    return { state, tables, hw: readHighWater(db, state), schemaVersion: cache.schemaVersion, file: db.name };
  } catch {
    return undefined; // anything unexpected: the full path decides
  }
}

/** Reads the capture identity, arming and high-water mark. Throws CAPTURE_ABSENT when there is none. */
export function readSourceView(db: Db): SourceView {
  const cached = cachedView(db);
  if (cached !== undefined) return cached;
  const v = verifyCapture(db);
  if (v.state === undefined || v.problem !== undefined) {
    delete connectionState(db).get(viewCache).last;
    throw unreadableCapture(db, v.problem ?? 'CAPTURE_ABSENT');
  }
  const conn = connectionState(db);
  const schemaVersion = Number(conn.get(viewStatements).schemaVersion.get() as bigint);
  conn.get(viewCache).last = { schemaVersion, tables: v.tables };
  return {
    state: v.state,
    tables: new Map(v.tables.map((t) => [t.table.name, t])),
    hw: readHighWater(db, v.state),
    schemaVersion,
    file: db.name,
  };
}

/**
 * The captured table `name` names, matched as SQLite matches identifiers
 * (foldIdent: ASCII case folded), or undefined when none is captured. Every
 * reader looks a table up by a caller's name through this one rule.
 */
export function capturedTable(view: SourceView, name: string): TableArming | undefined {
  return view.tables.get(name) ?? [...view.tables.values()].find((t) => foldIdent(t.table.name) === foldIdent(name));
}

/**
 * Resolves the consumer's table list: every listed table must be captured
 * and armed. An empty list means every captured table in images/keys mode.
 * `allowCounter` lets a caller name counter-mode tables explicitly (a
 * snapshot, a cursor for changedSince); reading their rows' events is
 * still refused by readBatch.
 */
export function resolveTables(
  view: SourceView,
  requested: readonly string[] | undefined,
  options: { readonly allowCounter?: boolean } = {},
): CapturedTable[] {
  const all = [...view.tables.values()];
  // The default set never includes counter tables: a cursor over it must stay readable by readBatch.
  const names =
    requested === undefined || requested.length === 0 ? all.filter((t) => t.table.mode !== 'counter').map((t) => t.table.name) : requested;
  return names.map((name) => {
    const a = capturedTable(view, name);
    if (a === undefined) {
      throw new FailClosedError(
        'TABLE_UNTRACKED',
        `Table ${name} is not captured in ${view.state.sourceId}; its changes are not recorded, so it counts as always changed. Run ${enableCommand(view.file, [name])}.`,
        { table: name },
      );
    }
    if (!a.armed) {
      throw new FailClosedError(
        'TABLE_UNARMED',
        `Table ${a.table.name} is not armed (${a.reason ?? 'unknown'}: ${a.detail ?? ''}); writes since then were not recorded. To re-arm it, ${rearmFix(view.file, a.table.name, a.reason ?? undefined, a.exclude)}; then rebuild.`,
        { table: a.table.name, reason: a.reason, ...(a.exclude === undefined ? {} : { exclude: a.exclude }) },
      );
    }
    if (a.table.mode === 'counter' && options.allowCounter !== true) {
      throw counterModeTable(a.table.name);
    }
    return a.table;
  });
}

/** COUNTER_MODE_TABLE, worded once for every reader that needs row images or keys. */
export function counterModeTable(table: string): FailClosedError {
  return new FailClosedError(
    'COUNTER_MODE_TABLE',
    `Table ${table} is captured in counter mode, which records only that it changed, not which rows. Use changedSince for it (and re-read it whole), or re-enable it with --mode images or keys.`,
    { table },
  );
}

// Keyed by the view, not the connection: it lives as long as the view (one read transaction) does.
const viewFiles = new WeakMap<SourceView, FileIdentity | undefined>();

/**
 * The identity of the source file a view was read from: the file the
 * connection holds, taken when it was opened (file-identity.ts), not the
 * one its path names now. Once per view, the path must still name it, or
 * this throws SOURCE_REPLACED: no cursor is checked against, or made for,
 * a file that writers no longer reach, so a batch read across a swap is
 * never committed (one stat per read transaction, as before).
 */
export function viewFileIdentity(db: Db, view: SourceView): FileIdentity | undefined {
  if (viewFiles.has(view)) return viewFiles.get(view);
  checkHeldFile(db, 'source');
  const file = heldFile(db);
  viewFiles.set(view, file);
  return file;
}

/**
 * What a cursor binds of each table: its schema fingerprint and, for keys
 * and counter mode, its capture mode (a journal row of one mode read with
 * another mode's layout loses keys). Images mode adds nothing, so cursors
 * made before the mode was bound stay valid for images-mode tables.
 */
export function cursorBinding(t: CapturedTable): string {
  return t.mode === 'images' ? t.fingerprint : `${t.fingerprint}/${t.mode}`;
}

function makeCursor(db: Db, view: SourceView, tables: readonly CapturedTable[], seq: number): Cursor {
  const file = viewFileIdentity(db, view);
  return {
    version: CURSOR_VERSION,
    sourceId: view.state.sourceId,
    generation: view.state.generation,
    seq,
    tables: tables.map((t) => t.name),
    schema: schemaDigest(tables.map(cursorBinding)),
    armed: tables.map((t) => t.armedGeneration),
    anchor: anchorAt(db, seq, view.state.journalWidth),
    // The schema version the cursor's history is known to be whole up to (see SCHEMA_TABLE), and the source's last
    // bump and pruned horizon, which a later cursor compared with a target's tells (cursor-check.ts cursorContinues).
    ext: { sv: view.schemaVersion, [BUMPED_KEY]: view.state.bumpedGeneration, [PRUNED_KEY]: view.state.prunedThrough },
    ...(file === undefined ? {} : { file }),
  };
}

export function cursorToken(db: Db, view: SourceView, tables: readonly CapturedTable[], seq: number): string {
  return encodeCursor(makeCursor(db, view, tables, seq));
}
