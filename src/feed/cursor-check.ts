import type { Db } from '../sqlite/index.ts';
import { FailClosedError, InvalidInputError, SluiceError } from '../errors.ts';
import { reasonsOf, type Reason, type ReasonCode, type ReasonOf } from '../reasons.ts';
import { anchorAt } from './anchor.ts';
import {
  BUMPED_KEY,
  decodeCursor,
  PRUNED_KEY,
  schemaDigest,
  UnknownCursorVersion,
  type Anchor,
  type Cursor,
  type FileIdentity,
} from './cursor.ts';
import { foldIdent, sameFile } from '../sqlite/index.ts';
import { capturedTable, cursorBinding, readSourceView, resolveTables, viewFileIdentity, type SourceView } from './source-view.ts';
import { readOwnDdl, type CapturedTable, readDdlLog, type DdlRecord } from '../capture/index.ts';
import { hasEventsBetween } from './journal-stats.ts';
import { altersSince, lineageSince, lostColumns } from './column-lineage.ts';

/**
 * Why a cursor cannot be continued. Stable codes: those of kind `rebuild` in
 * src/reasons.ts, which explains each (SCHEMA_WINDOW: DDL sluice did not make
 * ran since the cursor; a consumer that can compare its copy with the source,
 * as sync's verifiable projections do, proves continuity, any other rebuilds).
 */
export type RebuildReason = ReasonOf<'rebuild'>;

export type CursorValidation =
  | {
      readonly status: 'ok';
      readonly cursor: Cursor;
      readonly view: SourceView;
      /** The cursor's tables as the source captures them, in its order: those the caller reads, given ValidateOptions.tables. */
      readonly tables: readonly CapturedTable[];
      /** Set (with ValidateOptions.allowSchemaWindow) when continuity across foreign DDL is the caller's to prove. */
      readonly window?: true;
    }
  | {
      readonly status: 'rebuild';
      readonly reason: RebuildReason;
      readonly message: string;
      /** Machine-readable specifics where there are some, e.g. `{ table, reason: 'SCHEMA_CHANGED' }` for TABLE_UNARMED. */
      readonly detail?: Readonly<Record<string, unknown>>;
    }
  | { readonly status: 'error'; readonly reason: Reason<'CURSOR_MALFORMED'>; readonly message: string };

/** A cursor that cannot be continued, and why. */
type Rebuild = Extract<CursorValidation, { status: 'rebuild' }>;

const REBUILD_REASONS: ReadonlySet<ReasonCode> = reasonsOf('rebuild');

function isRebuildReason(code: ReasonCode): code is RebuildReason {
  return REBUILD_REASONS.has(code);
}

/**
 * Decides whether a consumer may continue from `cursor` on this source:
 * `ok`, `rebuild` (with a stable reason: start again from a snapshot) or
 * `error` (the token itself is garbage). Run it inside the read transaction
 * that also reads the changes, so the answer and the rows are one snapshot.
 * `current` is the source view already read in that transaction, if any.
 *
 * @example
 * const v = validateCursor(db, token);
 * if (v.status === 'rebuild') console.log('rebuild because', v.reason);
 */
interface ValidateOptions {
  /** Answer `ok` with `window: true` instead of SCHEMA_WINDOW: the caller proves continuity itself (sync does, by a checksum comparison at one seq). */
  readonly allowSchemaWindow?: boolean;
  /**
   * Go on across a `sluice alter` that changed a table of the cursor in
   * place, when the alters recorded since explain the schema difference
   * exactly and no event of the old layout is left to read. Only for a
   * caller that checks on its own whether what changed is something it
   * reads: a sync projection, whose definition fingerprint covers the
   * source columns it reads (definitionFingerprint). Defaults to
   * allowSchemaWindow, which only such callers set (sync's projection step
   * and health, for the kinds other than custom); a change-stream reader
   * (readBatch, changes, export) rebuilds (SCHEMA_CHANGED), as after any
   * schema change, since its events' columns would change under it.
   */
  readonly acceptAlters?: boolean;
  /**
   * The source columns the caller reads, by table (default: every column).
   * Across the alters recorded since the cursor, each name it reads must
   * still name the column it named (column-lineage.ts): a name dropped and
   * added again, renamed onto or swapped, or one an older sluice's alter row
   * cannot vouch for, is another column, whose values the caller never read,
   * so the cursor rebuilds (SCHEMA_CHANGED) even where the table's shape
   * reads the same.
   */
  readonly reads?: (table: string, column: string) => boolean;
  /**
   * The tables of the cursor the caller reads (default: every table it
   * lists). A cursor a stream made (an import's, a subscriber's) lists every
   * table the stream carries, and each projection of the target holds it,
   * though it reads one table: only these must be captured and armed, not
   * re-armed since, and have no old-layout events or lost columns to read;
   * the others count only for the schema digest, which covers every table
   * of the cursor (one no longer captured: SCHEMA_CHANGED, which a snapshot
   * repairs). `ok` then answers these tables only, in the cursor's order,
   * and a cursor that does not list one of them is SCHEMA_CHANGED too.
   */
  readonly tables?: readonly string[];
}

/** `cursor` decoded, or why it cannot be read (validateCursor and cursorContinues answer so for a cursor they cannot decode). */
function cursorOrInvalid(cursor: string | Cursor): Cursor | Extract<CursorValidation, { status: 'rebuild' | 'error' }> {
  try {
    return typeof cursor === 'string' ? decodeCursor(cursor) : cursor;
  } catch (err) {
    if (err instanceof UnknownCursorVersion) return { status: 'rebuild', reason: 'CURSOR_VERSION_UNKNOWN', message: err.message };
    if (err instanceof SluiceError) return { status: 'error', reason: 'CURSOR_MALFORMED', message: err.message };
    throw err;
  }
}

export function validateCursor(db: Db, cursor: string | Cursor, current?: SourceView, options: ValidateOptions = {}): CursorValidation {
  const c = cursorOrInvalid(cursor);
  if ('status' in c) return c;
  let view: SourceView;
  try {
    view = current ?? readSourceView(db);
  } catch (err) {
    return asRebuild(err);
  }
  const rebuild = (reason: RebuildReason, message: string): CursorValidation => ({ status: 'rebuild', reason, message });
  const changed = sourceBreak(c, {
    name: db.name,
    sourceId: view.state.sourceId,
    generation: view.state.generation,
    bumpedGeneration: view.state.bumpedGeneration,
    lastReason: view.state.lastReason ?? null,
    hw: view.hw,
    file: () => viewFileIdentity(db, view),
  });
  if (changed !== undefined) return changed;
  if (c.seq < view.state.prunedThrough) {
    return rebuild(
      'CURSOR_PRUNED',
      `The cursor is at seq ${c.seq} but events through ${view.state.prunedThrough} were pruned (retention ${view.state.retention}). Rebuild from a snapshot, or raise --retention.`,
    );
  }
  // The alters recorded at or after the cursor's seq, read once and only when a check needs them.
  let ddl: readonly DdlRecord[] | undefined;
  const log = () => (ddl ??= readDdlLog(db, c.seq));
  const read = readsTable(options.tables);
  let tables: CapturedTable[];
  try {
    // A cursor over a counter-mode table is valid (changedSince answers for it);
    // readBatch refuses such tables itself, with COUNTER_MODE_TABLE.
    const resolved = resolveCursorTables(view, c, read, options.tables);
    if ('status' in resolved) return resolved;
    tables = resolved;
  } catch (err) {
    return asRebuild(err);
  }
  if (schemaDigest(tables.map(cursorBinding)) !== c.schema) {
    const altered = (options.acceptAlters ?? options.allowSchemaWindow === true) ? explainedByAlter(db, c, tables, log(), read) : undefined;
    if (altered !== true)
      return rebuild(
        'SCHEMA_CHANGED',
        altered ??
          `The schema or capture mode of ${c.tables.join(', ')} changed since the cursor was made, with no proof that old rows stay valid. Rebuild from a snapshot.`,
      );
  }
  const rearmed = tables.find((t, i) => read(t.name) && t.armedGeneration !== c.armed[i]);
  if (rearmed !== undefined) return tableRearmed(rearmed.name, view.state.lastReason ?? null);
  const anchor = anchorBreak(c, anchorAt(db, c.seq, view.state.journalWidth), view.state.prunedThrough, db.name);
  if (anchor !== undefined) return rebuild(anchor.reason, anchor.message);
  // From here on, the tables the caller reads.
  if (options.tables !== undefined) tables = tables.filter((t) => read(t.name));
  const lost = c.ext?.sv === view.schemaVersion ? undefined : lostColumnRead(db, c, tables, options.reads, log());
  if (lost !== undefined) return { status: 'rebuild', reason: 'SCHEMA_CHANGED', message: lost.message, detail: lost.detail };
  if (!schemaWhole(db, c, view, log)) {
    if (options.allowSchemaWindow === true) return { status: 'ok', cursor: c, view, tables, window: true };
    return rebuild(
      'SCHEMA_WINDOW',
      `DDL that sluice did not make ran on ${db.name} since the cursor was made (schema_version ${String(c.ext?.sv ?? 'unknown')} -> ${view.schemaVersion}); a UNIQUE index made and dropped, or a trigger dropped and put back, can leave no trace, so changes in between may be unrecorded. Rebuild from a snapshot.`,
    );
  }
  return { status: 'ok', cursor: c, view, tables };
}

/** Whether the caller reads the cursor's table `name` (validateCursor's `tables` option; none: every table). */
function readsTable(wanted: readonly string[] | undefined): (name: string) => boolean {
  if (wanted === undefined) return () => true;
  const names = new Set(wanted.map(foldIdent));
  return (name) => names.has(foldIdent(name));
}

/**
 * The cursor's tables as the source captures them now, in its order (for its
 * schema digest). Those the caller reads (`read`, of `wanted`) must be
 * captured and armed (resolveTables throws why one is not); another need
 * only be captured, as only its schema counts. SCHEMA_CHANGED for a table
 * the caller reads that the cursor does not list, or for another that is
 * not captured any more.
 */
function resolveCursorTables(
  view: SourceView,
  c: Cursor,
  read: (name: string) => boolean,
  wanted: readonly string[] | undefined,
): CapturedTable[] | Rebuild {
  const schemaChanged = (table: string, message: string): Rebuild => ({
    status: 'rebuild',
    reason: 'SCHEMA_CHANGED',
    message,
    detail: { table },
  });
  // A cursor that lists no table covers the tables captured when it is read (resolveTables' default set).
  const listed = c.tables.length === 0 ? resolveTables(view, c.tables, { allowCounter: true }).map((t) => t.name) : c.tables;
  const unlisted = wanted?.find((w) => !listed.some((n) => foldIdent(n) === foldIdent(w)));
  if (unlisted !== undefined)
    return schemaChanged(
      unlisted,
      `The cursor covers ${listed.join(', ')}, not ${unlisted}: it says nothing of the changes of ${unlisted}. Rebuild from a snapshot.`,
    );
  if (c.tables.length === 0) return resolveTables(view, c.tables, { allowCounter: true });
  const mine = resolveTables(view, c.tables.filter(read), { allowCounter: true });
  const tables: CapturedTable[] = [];
  for (const name of c.tables) {
    const a = read(name) ? mine.find((t) => foldIdent(t.name) === foldIdent(name)) : capturedTable(view, name)?.table;
    if (a === undefined)
      return schemaChanged(
        name,
        `The cursor also covers table ${name}, which ${view.state.sourceId} no longer captures, so whether the tables it covers kept their schema cannot be told (one digest covers them all). Rebuild from a snapshot.`,
      );
    tables.push(a);
  }
  return tables;
}

/*
 * Whether every schema change since the cursor is sluice's own: the same
 * schema_version, or exactly the span sluice's last DDL transaction
 * recorded (from the cursor's version to the current one).
 */
function schemaWhole(db: Db, c: Cursor, view: SourceView, log: () => readonly DdlRecord[]): boolean {
  const sv = c.ext?.sv;
  if (sv === view.schemaVersion) return true;
  if (typeof sv !== 'number') return false;
  // A chain of sluice's own spans (each alter's, and the last transaction's) from the cursor's version to today's.
  const spans = log().map((r) => [r.svBefore, r.svAfter] as const);
  const own = readOwnDdl(db);
  if (own !== undefined) spans.push([own.before, own.after]);
  let at = sv;
  while (at !== view.schemaVersion) {
    // A span of sluice's own back-to-back transactions (recordOwnDdl) covers the versions between them too.
    const next = spans.find(([before, after]) => before <= at && after > at);
    if (next === undefined) return false;
    at = next[1];
  }
  return true;
}

/*
 * Whether the alters recorded since the cursor (sluice alter, _sluice_ddl)
 * explain the difference between the cursor's schema digest and today's:
 * undoing each in-place change (`altered`) or rebuild, newest first, gives
 * the cursor's bindings back. A rebuilt table is then told by its armed
 * generation (TABLE_REARMED). The events of an altered table up to the
 * alter are in its old layout, so a cursor with such events still to read
 * cannot go on (a message saying so); true when it can.
 */
function explainedByAlter(
  db: Db,
  c: Cursor,
  tables: readonly CapturedTable[],
  log: readonly DdlRecord[],
  read: (name: string) => boolean,
): true | string | undefined {
  if (log.length === 0) return undefined;
  const fingerprints = new Map(tables.map((t) => [t.tid, t.fingerprint]));
  const layoutFrom: { table: CapturedTable; seq: number }[] = [];
  const matches = () =>
    schemaDigest(tables.map((t) => cursorBinding({ ...t, fingerprint: fingerprints.get(t.tid) as string }))) === c.schema;
  let matched = false;
  // Newest first, stopping at the first state that is the cursor's (an alter at the cursor's own seq may predate it).
  for (const rec of [...log].reverse()) {
    for (const change of rec.tables) {
      if (change.to === null || fingerprints.get(change.tid) !== change.to) continue;
      fingerprints.set(change.tid, change.from);
      const table = tables.find((t) => t.tid === change.tid) as CapturedTable;
      // (The old-layout events of a table the caller does not read are not read.)
      if (change.change === 'altered' && read(table.name)) layoutFrom.push({ table, seq: rec.seq });
    }
    if (matches()) {
      matched = true;
      break;
    }
  }
  if (!matched) return undefined;
  for (const { table, seq } of layoutFrom) {
    if (hasEventsBetween(db, table.tid, c.seq, seq))
      return `Table ${table.name} was changed by sluice alter at seq ${seq}, and the cursor (seq ${c.seq}) has events of it before that still to read; they are in the table's old column layout, which readers do not decode. Rebuild from a snapshot.`;
  }
  return true;
}

/**
 * A name the caller reads that the alters recorded since the cursor gave to
 * another column (or that an older alter row cannot vouch for), if any.
 * Only looked for when the schema version moved since the cursor.
 */
function lostColumnRead(
  db: Db,
  c: Cursor,
  tables: readonly CapturedTable[],
  reads: ((table: string, column: string) => boolean) | undefined,
  log: readonly DdlRecord[],
): { message: string; detail: Record<string, unknown> } | undefined {
  const alters = altersSince(db, c, log);
  if (alters.length === 0) return undefined;
  for (const t of tables) {
    const l = lineageSince(alters, t.tid);
    if (l === undefined) continue;
    const lost = lostColumns(l).filter((n) => reads?.(t.name, n) ?? true);
    if (lost.length === 0) continue;
    const why = l.unrecorded
      ? 'an alter recorded by an older sluice, which kept the column names but not which column each one is, so none is known to be the column it was'
      : 'a column dropped and added again under its name, or renamed onto it, is another column (only a RENAME COLUMN that sluice alter ran carries a column to a new name)';
    return {
      message: `Column ${lost.join(', ')} of ${t.name} is not the column the cursor read: sluice alter changed ${t.name} since (at seq ${l.alters.join(', ')}), and ${why}; its values were never read. Rebuild from a snapshot.`,
      detail: { table: t.name, columns: lost },
    };
  }
  return undefined;
}

/**
 * What a cursor is checked against (sourceBreak): the source as a reader
 * reads it now (validateCursor), or the source as a later cursor of it
 * says it was (cursorContinues).
 */
interface SourceNow {
  /** Names it in messages: the source's file, or the later cursor. */
  readonly name: string;
  readonly sourceId: string;
  readonly generation: number;
  /** The generation of the last bump (or of the capture's creation). */
  readonly bumpedGeneration: number;
  /** Why the generation last moved, where it is known. */
  readonly lastReason: string | null;
  /** The high-water mark. */
  readonly hw: number;
  /** The identity of its file (undefined: not known), read only once the checks before it passed. */
  readonly file: () => FileIdentity | undefined;
}

/** Why cursor `c` cannot go on against `now` by its source, generation, seq and file (undefined: as far as these tell, it can). */
function sourceBreak(c: Cursor, now: SourceNow): Rebuild | undefined {
  const rebuild = (reason: RebuildReason, message: string): Rebuild => ({ status: 'rebuild', reason, message });
  if (c.sourceId !== now.sourceId) {
    return rebuild(
      'SOURCE_CHANGED',
      `The cursor belongs to source ${c.sourceId}, but ${now.name} is source ${now.sourceId} (capture was re-created, or this is another database). Rebuild from a snapshot.`,
    );
  }
  if (c.generation > now.generation) {
    return rebuild(
      'HISTORY_DIVERGED',
      `The cursor is at generation ${c.generation} but ${now.name} is at ${now.generation}: the file was restored from an older copy. Rebuild from a snapshot.`,
    );
  }
  if (c.generation < now.bumpedGeneration) {
    return rebuild(
      'GENERATION_CHANGED',
      `The source generation moved from ${c.generation} to ${now.generation} (${now.lastReason ?? 'bump'}); changes in between may be unrecorded. Rebuild from a snapshot.`,
    );
  }
  if (c.seq > now.hw) {
    return rebuild(
      'SEQ_REGRESSED',
      `The cursor is at seq ${c.seq} but the source's high-water mark is ${now.hw}: the file was restored from an older copy. Rebuild from a snapshot.`,
    );
  }
  const file = now.file();
  if (c.file !== undefined && file !== undefined && !sameFile(c.file, file)) {
    return rebuild(
      'FILE_CHANGED',
      `The cursor was taken on another file (device/inode ${c.file.dev}/${c.file.ino}, now ${file.dev}/${file.ino}): the database was replaced or copied. Rebuild from a snapshot.`,
    );
  }
  return undefined;
}

/** TABLE_REARMED for `table` (`lastReason`: why the generation last moved). */
function tableRearmed(table: string, lastReason: string | null): Rebuild {
  return {
    status: 'rebuild',
    reason: 'TABLE_REARMED',
    message: `Table ${table} was re-armed since the cursor was made (${lastReason ?? 're-arm'}), so writes before that may be unrecorded or recorded by other triggers. Rebuild it from a snapshot.`,
    detail: { table },
  };
}

/**
 * Why the journal at the cursor is not the history the cursor continues, or
 * cannot tell that it is (undefined: it is): `now` is the newest event at or
 * below the cursor's seq in the journal of `name` (null: none), whose events
 * through `prunedThrough` were pruned.
 *
 * The cursor's proof is its anchor: the event there, and no event after it
 * up to the cursor's seq (with none, no event after the horizon the journal
 * was pruned through when the cursor was made, `x.pt`). Once pruning has
 * passed the anchor (or that horizon), the journal no longer holds what the
 * cursor's history had there: an older copy restored in place and written
 * until its horizon reaches the cursor's seq reads the same as the cursor's
 * own history, so the cursor cannot go on (CURSOR_PRUNED). Pruning is by
 * retention alone (at least 1,024 events), so only a reader at least
 * `retention` events behind its source's newest event gets there, one event
 * short of the cursor itself being below the horizon.
 */
function anchorBreak(
  c: Cursor,
  now: Anchor | null,
  prunedThrough: number,
  name: string,
): { readonly reason: Reason<'HISTORY_DIVERGED' | 'CURSOR_PRUNED'>; readonly message: string } | undefined {
  const restored = `: an older copy of ${name} was restored in place and written past the cursor. Rebuild from a snapshot.`;
  const diverged = (message: string) => ({ reason: 'HISTORY_DIVERGED' as const, message: `${message}${restored}` });
  const unchecked = `so the history the cursor continues cannot be checked (an older copy restored in place and written this far would read the same). Rebuild from a snapshot (sluice changes: start again without --since), or raise --retention.`;
  if (c.anchor === null) {
    // No event was at or below the cursor's seq; a retained one now is another history.
    if (now !== null && now.seq > prunedThrough)
      return diverged(`The journal now holds event ${now.seq} at or below the cursor's seq ${c.seq}, where the cursor's history had none`);
    // It had none after the horizon it was made at (the journal's start, or a cursor made before x.pt was kept: 0).
    const madeAt = typeof c.ext?.[PRUNED_KEY] === 'number' ? c.ext[PRUNED_KEY] : 0;
    if (prunedThrough > madeAt)
      return {
        reason: 'CURSOR_PRUNED',
        message: `The cursor at seq ${c.seq} had no event at or below it after seq ${madeAt}, and ${name} has been pruned through ${prunedThrough} since, ${unchecked}`,
      };
    return undefined;
  }
  if (c.anchor.seq <= prunedThrough)
    return {
      reason: 'CURSOR_PRUNED',
      message: `The cursor's last event, seq ${c.anchor.seq} (the cursor is at seq ${c.seq}), was pruned: ${name} is pruned through ${prunedThrough}, ${unchecked}`,
    };
  if (now === null || now.seq !== c.anchor.seq)
    return diverged(
      `The cursor's last event is seq ${c.anchor.seq}, but the journal's newest event at or below seq ${c.seq} is ${now === null ? 'none' : now.seq}`,
    );
  if (now.digest !== c.anchor.digest)
    return diverged(`Event ${c.anchor.seq} in the journal is not the one the cursor saw (another table, operation, time or image)`);
  return undefined;
}

/** Whether a file's or a stream's cursor continues a target's (cursorContinues). */
export type Continuation =
  /** It does, as far as the two cursors tell. */
  | { readonly status: 'continues' }
  /**
   * It is older than the cursor (a lower seq, or the same seq at an earlier
   * generation): it says nothing of what follows the cursor (a file
   * imported before, whose events the target holds).
   */
  | { readonly status: 'behind' }
  | Exclude<CursorValidation, { status: 'ok' }>;

/**
 * Whether `later`, a cursor of a file's or a stream's marker (a snapshot's or
 * a batch's end), continues `cursor`, a target's: validateCursor's rules,
 * with the source as `later` says it was when it was made standing for the
 * source. The same source, no generation after `later`'s and no bump since
 * `cursor`, the same file, each of `tables` (default: every table both
 * carry) armed at the same generation, and the same event at `cursor`'s
 * seq, compared where `later` tells it (at the same seq, or when no event
 * lies between the two). `later` at a lower seq than `cursor`, or at the
 * same seq of an earlier generation, is `behind`.
 */
export function cursorContinues(
  cursor: string | Cursor,
  later: Cursor,
  options: { readonly tables?: readonly string[] } = {},
): Continuation {
  const c = cursorOrInvalid(cursor);
  if ('status' in c) return c;
  if (c.sourceId === later.sourceId && (later.seq < c.seq || (later.seq === c.seq && later.generation < c.generation)))
    return { status: 'behind' };
  const ext = later.ext ?? {};
  const name = `the source at seq ${later.seq}`;
  const changed = sourceBreak(c, {
    name,
    sourceId: later.sourceId,
    generation: later.generation,
    // A cursor made before it carried the last bump's generation: any move of the generation counts as one.
    bumpedGeneration: typeof ext[BUMPED_KEY] === 'number' ? ext[BUMPED_KEY] : later.generation,
    lastReason: null,
    hw: later.seq,
    file: () => later.file,
  });
  if (changed !== undefined) return changed;
  for (const [i, table] of c.tables.entries()) {
    if (options.tables !== undefined && !options.tables.some((t) => foldIdent(t) === foldIdent(table))) continue;
    const j = later.tables.findIndex((t) => foldIdent(t) === foldIdent(table));
    if (j >= 0 && later.armed[j] !== c.armed[i]) return tableRearmed(table, null);
  }
  // The newest event at or below the cursor's seq that `later` knows: its own anchor, at the same seq, or when no retained event lies between.
  const pruned = typeof ext[PRUNED_KEY] === 'number' ? ext[PRUNED_KEY] : undefined;
  const known = later.seq === c.seq || (pruned !== undefined && (later.anchor === null || later.anchor.seq <= c.seq));
  const anchor = known ? anchorBreak(c, later.anchor, pruned ?? 0, 'the source') : undefined;
  if (anchor !== undefined) return { status: 'rebuild', reason: anchor.reason, message: anchor.message };
  return { status: 'continues' };
}

/**
 * Whether a stream's history continues `cursor`, a target's, where the
 * stream's last snapshot (`snapshot`, its cursor) lies below the cursor's
 * seq: the target either followed that snapshot's history past it, batch by
 * batch, or holds a history the snapshot replaced (the source went back: an
 * older copy restored, and its publisher published a snapshot at the
 * restored seq). Only a batch after the snapshot that ends at the cursor's
 * seq (`batchAt`, its cursor: the first of those after the snapshot that
 * ends at or past that seq) tells the first from the second, by
 * cursorContinues at the same seq (the event there, the generation, the
 * file); with none ending there, the target's seq is no place the
 * snapshot's history reached (SEQ_REGRESSED). A snapshot at or past the
 * cursor's seq is cursorContinues' to judge.
 */
export function streamContinues(
  cursor: string | Cursor,
  snapshot: Cursor,
  batchAt: Cursor | undefined,
  options: { readonly tables?: readonly string[] } = {},
): Continuation {
  const c = cursorOrInvalid(cursor);
  if ('status' in c) return c;
  if (snapshot.sourceId !== c.sourceId || snapshot.seq >= c.seq) return cursorContinues(c, snapshot, options);
  const below = `The stream's last snapshot is at seq ${snapshot.seq}, below the cursor's seq ${c.seq}, and was published after the history the cursor followed`;
  if (batchAt === undefined || batchAt.seq !== c.seq)
    return {
      status: 'rebuild',
      reason: 'SEQ_REGRESSED',
      message: `${below}: no batch of the stream after it ends at seq ${c.seq}, so the source went back below the cursor (an older copy was restored). Rebuild from a snapshot.`,
    };
  const v = cursorContinues(c, batchAt, options);
  // At the same seq of an earlier generation: the history after the snapshot is an older one than the cursor's.
  if (v.status === 'behind')
    return {
      status: 'rebuild',
      reason: 'HISTORY_DIVERGED',
      message: `${below}, and its batch ending at seq ${c.seq} is of generation ${batchAt.generation}, before the cursor's ${c.generation}: an older copy of the source was restored. Rebuild from a snapshot.`,
    };
  return v;
}

function asRebuild(err: unknown): CursorValidation {
  if (err instanceof FailClosedError && isRebuildReason(err.code)) {
    // Keep the table and the unarmed reason: "TABLE_UNARMED" alone does not say what to fix.
    return {
      status: 'rebuild',
      reason: err.code,
      message: err.message,
      ...(Object.keys(err.detail).length > 0 ? { detail: err.detail } : {}),
    };
  }
  throw err;
}

/** Validates and throws: FailClosedError (exit 3) for rebuild, InvalidInputError (exit 1) for garbage. */
export function requireValidCursor(db: Db, cursor: string | Cursor): Extract<CursorValidation, { status: 'ok' }> {
  const v = validateCursor(db, cursor);
  if (v.status === 'ok') return v;
  // Bad input from the caller, the same class decodeCursor throws, so callers can tell it from a rebuild.
  if (v.status === 'error') throw new InvalidInputError(v.reason, v.message);
  throw new FailClosedError(v.reason, v.message, { ...v.detail, rebuild: v.reason });
}

/**
 * The seq of an in-place alter of table `tid` after `cursorSeq` whose
 * old-layout events a reader at `cursorSeq` has still to read, if any
 * (such a reader rebuilds: SCHEMA_CHANGED).
 */
export function alterWithOldLayoutAfter(db: Db, cursorSeq: number, tid: number): number | undefined {
  // Events of the table in (cursorSeq, the alter's seq] were written in its old layout.
  for (const rec of readDdlLog(db, cursorSeq)) {
    if (rec.tables.some((t) => t.tid === tid && t.change === 'altered') && hasEventsBetween(db, tid, cursorSeq, rec.seq)) return rec.seq;
  }
  return undefined;
}
