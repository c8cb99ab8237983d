import { shadowBuildOf, openApplySession, TARGET_SCHEMA, readProjections, unguardedMarks, type ProjectionRecord } from '../target/index.ts';
import { targetTableProblems } from './health-target.ts';
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { InvalidInputError } from '../../errors.ts';
import {
  readQuietly,
  readSessionSync,
  canHoldNegativeZero,
  declaredType,
  quoteIdent,
  fromDriver,
  toJsonValue,
  type JsonValue,
  type SqlValue,
  describeTable,
  reinitCommand,
  repairAction,
  shellCommand,
} from '../../sqlite/index.ts';
import { isReasonCode, REASONS } from '../../reasons.ts';
import type { Db } from '../../sqlite/index.ts';
import { readSourceView, alterWithOldLayoutAfter, type SourceView } from '../../feed/index.ts';
import {
  compileProjection,
  sourceShape,
  type CompiledProjection,
  type SourceShape,
  parseStoredDefinition,
  kindNamed,
  statedFingerprint,
  kindOf,
} from '../../projection/index.ts';
import { excludedColumns } from '../../capture/index.ts';
import {
  compileStoredToday,
  isBroken,
  unbuiltMirrorAction,
  unbuiltMirrors,
  SOURCE_AFFINITY,
  sourceAffinityDetail,
  sourceMisfits,
  holdsOnlyOthers,
  noProjectionsOfSource,
  setOfSource,
} from '../projections/index.ts';
import {
  CHANGED_HELD,
  CHANGED_TABLE,
  costlyRewind,
  isChangedKey,
  rewindToCursor,
  uncapturedWrites,
  unrewindable,
  useRewindPageSize,
} from './verify-rewind.ts';
import { provedAtCursor, registerNegativeZero, sourceRows } from './verify-exact.ts';
import { stepProgress, type StepProgress, type StepReport } from './verify-progress.ts';
import { comparedWhileSuspended, recordVerdicts } from './verify-record.ts';
import { acrossWindow, cursorVerdict, type CursorVerdict } from './verify-cursor.ts';
import { suspensionRepair } from './suspension-repair.ts';
import { lostOfSource, projectionsOfSource } from './verify-set.ts';
import type { VerifyDiff, ProjectionVerification, VerifyReport } from './verify-types.ts';
export type { VerifyDiff, ProjectionVerification, VerifyReport } from './verify-types.ts';

const MAX_DIFFS = 10;

export interface VerifyOptions {
  /** For a progress bar: as each projection is compared, and from inside the statements that compare it. */
  readonly onProgress?: (p: VerifyProgress) => void;
  /**
   * Said before a rewind that costs more than comparing the table itself
   * (many more events after the cursor than rows: costlyRewind in
   * verify-rewind.ts): what it costs, and that `sluice sync` first makes
   * verify cheaper.
   */
  readonly onNote?: (note: string) => void;
  /**
   * Store what was found in the target (verify-record.ts): a projection that
   * differs is suspended (TARGET_EDITED), one suspended so that is equal again
   * is cleared, and an fts5 index is checked against its rows. Default true;
   * false only compares, writing nothing.
   */
  readonly record?: boolean;
}

export interface VerifyProgress {
  /** The projection being compared, or the last one compared. */
  readonly projection: string;
  /** Projections compared so far, of `count`. */
  readonly done: number;
  readonly count: number;
  /**
   * Where the comparison of `projection` is: the events after its cursor
   * read to rewind the keys they changed (`events`, of the seqs after the
   * cursor), its rows compared (`rows`), the changed keys compared at the
   * cursor (`keys`). Absent once the projection is compared.
   */
  readonly step?: StepReport;
}

/**
 * Compares every projection of a target with its source at one consistent
 * seq, by per-key checksums computed in SQL over the typed values. Runs in
 * one read transaction over both files, each projection at its own cursor:
 * keys the source changed after it are counted (inFlight) and compared as
 * the source had them then (their first later event's before image), so a
 * live source never produces a false difference and a tampered row is found
 * whatever the source did since (one pass over the events after the
 * cursor, then a lookup of each key they changed: the caught-up comparison
 * plus work bounded by the events); a cursor the journal no longer reaches is
 * BEHIND, not ok. A projection that is suspended or whose last sync failed is not
 * compared at all, and not ok; nor is one synced from the source's file
 * under an earlier capture of it (SOURCE_CHANGED); a projection of another
 * source file, there now or not, is left out (verify-set.ts). One
 * the source acknowledges for this target that the target lost is listed,
 * not ok (CONSUMER_NOT_BUILT). A target with no projection of the source is
 * an error (NO_PROJECTIONS_OF_SOURCE), not a vacuous ok.
 *
 * @example
 * const r = await verify('app.db', 'cache.db');
 * if (!r.ok) console.log(r.projections.filter((p) => !p.ok));
 */
export async function verify(sourcePath: string, targetPath: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  // verify only reads. openApplySession creates a missing target (for sync),
  // which here would turn a mistyped path into a new empty file and a
  // vacuous "ok"; refuse it instead.
  if (!fs.existsSync(targetPath))
    throw new InvalidInputError(
      'DB_NOT_FOUND',
      `Target ${targetPath} does not exist. Pass a target written by \`sluice sync\` or \`sluice import\`.`,
    );
  // Both files held while verify reads them (readQuietly): a reader of a WAL file would leave a -wal and -shm beside it.
  return readQuietly([sourcePath, targetPath], () => compareAll(sourcePath, targetPath, options));
}

/** verify() with both files held. */
function compareAll(sourcePath: string, targetPath: string, options: VerifyOptions): VerifyReport {
  // Read-only on both sides: verify writes nothing, re-arms nothing.
  const session = openApplySession(sourcePath, targetPath, {
    readonly: true,
    command: (source, target) => shellCommand('verify', { source, target }),
  });
  const db = session.db;
  let found: { sourceSeq: number; records: ProjectionRecord[]; out: ProjectionVerification[]; marked: Set<string> };
  try {
    useRewindPageSize(db);
    registerHash(db);
    // SQLite ends the transaction itself on some errors (SQLITE_IOERR, FULL,
    // NOMEM): the session then has nothing to roll back, and the error is the first one.
    found = readSessionSync(db, () => {
      // The target first: each attached file's snapshot is taken at its first
      // read, and a follower applies only what the source committed, so a
      // source read after the target is at or past every cursor it holds.
      // Read the other way round, a follower committing between the two reads
      // put cursors past the source's snapshot: rows compared against an
      // older source, false diffs (and a false TARGET_EDITED suspension).
      const all = readProjections(db, TARGET_SCHEMA);
      const view = readSourceView(db);
      // The projections the source answers for (verify-set.ts), as a plain sync of it runs them.
      const { records, mirrorAll } = projectionsOfSource(db, all, view, sourcePath);
      // The mirrors "*" asks for that the target does not hold yet: not ok (projection-set.ts); none when "*" is another source's.
      const missing = (
        mirrorAll
          ? unbuiltMirrors(
              db,
              db,
              TARGET_SCHEMA,
              all,
              [...view.tables.values()].map((a) => a.table),
            )
          : []
      ).map((d) => {
        const { reason, action } = unbuiltMirrorAction(d, sourcePath, targetPath);
        return { name: d.name, ok: false, seq: 0, checked: 0, inFlight: 0, diffs: [], reason, skipped: `not compared: ${action}` };
      });
      // The projections the source acknowledges for this target that it lost (CONSUMER_NOT_BUILT): not ok, as sync and health say.
      const lost = lostOfSource(db, { source: sourcePath, target: targetPath }, new Set([...all, ...missing].map((p) => p.name)));
      if (records.length === 0 && missing.length === 0 && lost.length === 0) {
        // Projections of other sources only: refused as a plain sync and explain of this source refuse it (source-projections.ts).
        const own = setOfSource(db, TARGET_SCHEMA, all, { sourceId: view.state.sourceId, path: sourcePath });
        if (holdsOnlyOthers(own, all)) throw noProjectionsOfSource('verify', sourcePath, targetPath, all, own.set);
        throw new InvalidInputError(
          'NO_PROJECTIONS_OF_SOURCE',
          `Target ${targetPath} holds no projection of source ${sourcePath}, so there is nothing to verify. Pass a target that ${syncOf(sourcePath)} wrote into, or run ${syncOf(sourcePath, targetPath)} first.`,
        );
      }
      const paths = { source: sourcePath, target: targetPath };
      const onProgress = options.onProgress;
      let current = { projection: records[0]?.name ?? '', done: 0 };
      const progress = stepProgress(db, onProgress && ((step) => onProgress({ ...current, count: records.length, step })));
      const compared = (r: ProjectionRecord) => (comparedWhileSuspended(r) ? { ...r, state: 'active' as const, lastError: null } : r);
      const out = records.map((r, i) => {
        current = { projection: r.name, done: i };
        const v = verifyOne(
          db,
          compared(r),
          view.hw,
          view.tables.get(r.sourceTable)?.table.tid,
          view.state.prunedThrough,
          paths,
          undefined,
          {
            progress,
            onNote: options.onNote,
            view,
            held: comparedWhileSuspended(r) ? (r.reason ?? undefined) : undefined,
          },
        );
        onProgress?.({ projection: r.name, done: i + 1, count: records.length });
        return v;
      });
      out.push(...missing, ...lost);
      const marked = new Set(unguardedMarks(db, TARGET_SCHEMA).map((m) => m.projection));
      return { sourceSeq: view.hw, records, out, marked };
    });
  } finally {
    session.close();
  }
  const projections = options.record === false ? found.out : recordVerdicts(targetPath, found.records, found.out, sourcePath, found.marked);
  return { ok: projections.every((p) => p.ok), sourceSeq: found.sourceSeq, projections };
}

/**
 * Whether projection `rec`, applied up to `hw` in the caller's transaction
 * (the source read in the same one), holds exactly the source's rows: the
 * proof of continuity sync runs after DDL that sluice did not make
 * (SCHEMA_WINDOW). Only for kinds verify can check (not custom).
 */
export function matchesSourceAt(db: Db, rec: ProjectionRecord, hw: number, tid: number): boolean {
  registerHash(db);
  return verifyOne(db, { ...rec, state: 'active', lastError: null, seq: hw }, hw, tid, 0).ok;
}

/**
 * Compares projection `rec` with the source at its own cursor in the
 * caller's transaction (the source at `hw`), whatever its stored state: the
 * check of a projection another program may have edited (target-edits.ts).
 */
export function compareAtCursor(db: Db, rec: ProjectionRecord, hw: number, tid: number, prunedThrough: number): ProjectionVerification {
  registerHash(db);
  return verifyOne(db, { ...rec, state: 'active', lastError: null }, hw, tid, prunedThrough);
}

/**
 * Whether a shadow built for `rec` (its tables at `shadow`, its new
 * definition and shape, caught up to `seq`) holds exactly the source's rows:
 * row counts, keys and checksums, compared in the caller's read transaction
 * with the source at `hw`. Keys the journal changed after `seq` are left
 * out: the swap reads each of them again from the source.
 */
export function shadowMatchesSource(
  db: Db,
  rec: ProjectionRecord,
  shadow: {
    readonly table: string;
    readonly definition: string;
    readonly shape: string;
    readonly fingerprint: string;
    readonly seq: number;
  },
  hw: number,
  tid: number,
): ProjectionVerification {
  registerHash(db);
  const candidate: ProjectionRecord = {
    ...rec,
    definition: shadow.definition,
    sourceShape: shadow.shape,
    fingerprint: shadow.fingerprint,
    seq: shadow.seq,
    state: 'active',
    lastError: null,
  };
  return verifyOne(db, candidate, hw, tid, 0, undefined, shadow.table);
}

/** A projection not compared because its cursor does not continue on the source: not ok with the cursor's reason. */
function notContinued(
  base: Pick<ProjectionVerification, 'name' | 'seq' | 'checked' | 'inFlight' | 'diffs'>,
  cursor: Extract<CursorVerdict, { continues: false }>,
): ProjectionVerification {
  return {
    ...base,
    ok: false,
    reason: cursor.reason,
    skipped: cursor.skipped,
    ...(cursor.repair === undefined ? {} : { repair: cursor.repair }),
  };
}

/** What verify() passes to each comparison besides the projection: its progress and where to say that a rewind is costly. */
interface CompareContext {
  readonly progress?: StepProgress | undefined;
  readonly onNote?: ((note: string) => void) | undefined;
  /** The source as read in the caller's transaction: its cursor is checked against it first (verify-cursor.ts). */
  readonly view?: SourceView | undefined;
  /** The suspension it is compared under (TARGET_EDITED), if any. */
  readonly held?: string | undefined;
}

function verifyOne(
  db: Db,
  rec: ProjectionRecord,
  hw: number,
  tid: number | undefined,
  prunedThrough: number,
  paths?: { readonly source: string; readonly target: string },
  shadowAt?: string,
  context: CompareContext = {},
): ProjectionVerification {
  const v = compareOne(db, rec, hw, tid, prunedThrough, paths, shadowAt, context);
  if (paths === undefined || v.ok || v.repair !== undefined) return v;
  // The repair health would print for it (src/reasons.ts), where the catalog has one.
  const code = v.diffs.length > 0 ? 'ROWS_DIFFER' : rec.state === 'suspended' ? rec.reason : v.reason;
  const has = rec.state === 'suspended' || (code !== undefined && code !== null && isReasonCode(code) && REASONS[code].repair !== null);
  if (!has) return v;
  return {
    ...v,
    repair:
      rec.state === 'suspended'
        ? suspensionRepair(rec, paths.source, paths.target, db)
        : repairAction(rec.name, code, paths.source, paths.target, rec.sourceTable),
  };
}

function compareOne(
  db: Db,
  rec: ProjectionRecord,
  hw: number,
  tid: number | undefined,
  prunedThrough: number,
  paths: { readonly source: string; readonly target: string } | undefined,
  /**
   * A shadow (shadow-build.ts): compare the tables built at this name, and
   * leave out the keys changed after `rec.seq`, which its swap reads again
   * from the source (so they need not match now).
   */
  shadowAt: string | undefined,
  context: CompareContext,
): ProjectionVerification {
  const base = { name: rec.name, seq: rec.seq, checked: 0, inFlight: 0, diffs: [] as VerifyDiff[] };
  const asOf = `its rows are as of seq ${rec.seq}, so they need not match the source at seq ${hw}`;
  if (rec.state === 'suspended') {
    return {
      ...base,
      ok: false,
      reason: rec.reason ?? rec.state,
      skipped: `not compared: ${rec.name} is suspended and ${asOf}; ${suspensionRepair(rec, paths?.source, paths?.target, db)}`,
    };
  }
  if (rec.state !== 'active')
    return {
      ...base,
      ok: false,
      reason: rec.reason ?? rec.state,
      skipped: `not compared: ${rec.name} is ${rec.state} (its first snapshot has not committed); run sluice sync`,
    };
  if (rec.lastError !== null) {
    return {
      ...base,
      ok: false,
      reason: 'SYNC_FAILING',
      skipped: `not compared: the last sync of ${rec.name} failed (${rec.lastError}) and ${asOf}; fix that and run sluice sync, then verify again`,
    };
  }
  if (kindNamed(rec.kind)?.verification === undefined) return { ...base, ok: true, reason: 'NOT_VERIFIABLE' };
  if (tid === undefined)
    return { ...base, ok: false, reason: 'TABLE_UNTRACKED', skipped: `not compared: ${rec.sourceTable} is not captured on the source` };
  // A table of it dropped or changed by hand (its columns, keys or declaration): what health says (the one rule), not
  // SQLite's "no such table" from the comparison, nor "ok" from rows a key without its PRIMARY KEY matches twice.
  const tables = shadowAt === undefined ? targetTableProblems(db, rec, paths?.source, paths?.target ?? db.name, TARGET_SCHEMA) : [];
  if (tables[0] !== undefined) return { ...base, ok: false, reason: 'TARGET_TABLE_CHANGED', skipped: `not compared: ${tables[0]}` };
  const today = fitsSourceToday(db, rec);
  if (today !== undefined) return { ...base, ok: false, ...today };
  // Synced from the source's file under another capture of it (capture enabled again since: SOURCE_CHANGED): its seq
  // is of another journal, so the cursor says why first, before anything below reads this journal at that seq.
  const other =
    context.view !== undefined && paths !== undefined && rec.sourceId !== context.view.state.sourceId
      ? cursorVerdict(db, rec, context.view, paths, context.held)
      : undefined;
  if (other?.continues === false) return notContinued(base, other);
  if (prunedThrough > rec.seq) {
    return {
      ...base,
      ok: false,
      reason: 'BEHIND',
      skipped: `not compared: the source's journal is pruned through seq ${prunedThrough}, past ${rec.name}'s cursor (seq ${rec.seq}), so the keys changed after seq ${rec.seq} cannot be told; the next sluice sync rebuilds it (CURSOR_PRUNED), then verify again`,
    };
  }
  const altered = alterWithOldLayoutAfter(db, rec.seq, tid);
  if (altered !== undefined)
    return {
      ...base,
      ok: false,
      reason: 'SCHEMA_CHANGED',
      skipped: `not compared: sluice alter changed ${rec.sourceTable} at seq ${altered}, and ${rec.name} (at seq ${rec.seq}) has events of it from before that in the old column layout; the next sluice sync rebuilds it, then verify again`,
    };
  const unreadable = unrewindable(db, rec, tid);
  if (unreadable !== undefined) return { ...base, ok: false, ...unreadable };
  // After the checks above, as sync's step makes them before its own (a table not captured with images first).
  const cursor =
    other ?? (context.view === undefined || paths === undefined ? undefined : cursorVerdict(db, rec, context.view, paths, context.held));
  if (cursor?.continues === false) return notContinued(base, cursor);
  const window = cursor?.window === true && context.held === undefined;
  // The table as it is: the same fingerprint (fitsSourceToday) after an in-place alter
  // can come with other columns, and the journal's events after the alter are in their layout.
  const info = describeTable(db, rec.sourceTable);
  const shape = info === undefined ? (JSON.parse(rec.sourceShape) as SourceShape) : sourceShape(info, excludedColumns(db, info.name));
  const compiled = compileProjection(parseStoredDefinition(rec.definition, `stored definition of ${rec.name}`), shape);
  const p: CompiledProjection = shadowAt === undefined ? compiled : { ...compiled, targetTable: shadowAt };
  const progress = context.progress;
  if (hw > rec.seq && context.onNote !== undefined) {
    const note = costlyRewind(db, rec, tid, hw, paths);
    if (note !== undefined) context.onNote(note);
  }
  // The keys changed after the cursor, each with its row at the cursor (verify-rewind.ts): one pass over those events.
  const inFlight = hw > rec.seq ? rewindToCursor(db, p, tid, rec.seq, hw, progress) : 0;
  if (inFlight === undefined) {
    dropWorkTables(db);
    return {
      ...base,
      ok: false,
      reason: 'BEHIND',
      skipped: `not compared: the key of ${rec.sourceTable} is not among its captured columns, so the keys changed after seq ${rec.seq} cannot be told; run sluice sync, then verify again`,
    };
  }
  // A changed key's source row that is not what its last event left: written by a writer capture did not see.
  if (inFlight > 0 && shadowAt === undefined && paths !== undefined) {
    const missed = uncapturedWrites(db, p, MAX_DIFFS);
    if (missed !== undefined) {
      dropWorkTables(db);
      return { ...base, ok: false, inFlight, ...uncaptured(rec, p, missed, window) };
    }
  }
  const k = p.key.map((_, i) => `k${i}`);
  const caveats = negativeZeroCaveat(
    shape,
    paths === undefined ? `rebuild ${rec.name}` : reinitCommand(rec.name, paths.source, paths.target),
  );
  // Rows that match are proved so in SQL alone (verify-exact.ts); the
  // checksums below compare what it cannot prove, and name the keys that differ. (Only for a kind whose
  // rows are one table keyed by the source key: a 'copy' shadow build.)
  if (shadowBuildOf(p) === 'copy') {
    const same = provedAtCursor(db, p, TARGET_SCHEMA, { changed: inFlight, shadow: shadowAt !== undefined, progress });
    if (same !== undefined) {
      dropWorkTables(db);
      return { ...base, ok: true, checked: same, inFlight, diffs: [], ...(caveats.length === 0 ? {} : { caveats }) };
    }
  }
  db.exec('DROP TABLE IF EXISTS temp._sluice_vs; DROP TABLE IF EXISTS temp._sluice_vt');
  progress?.start(
    'rows',
    Number(
      db
        .prepare(`SELECT count(*) FROM main.${quoteIdent(p.source.table)}`)
        .pluck()
        .get() as bigint,
    ),
  );
  db.prepare(`CREATE TEMP TABLE _sluice_vs AS ${sourceSide(db, p, undefined, progress?.sample())}`).run();
  progress?.end();
  db.exec(`CREATE TEMP TABLE _sluice_vt AS ${targetSide(p)}`);
  // Without these the join below is a nested scan of one side per row of
  // the other: hours for a table of 100k rows.
  db.exec(`CREATE INDEX temp._sluice_vt_k ON _sluice_vt (${k.join(', ')})`);
  // Keys changed after the cursor are compared as the source had them at
  // the cursor: the rows of the changed keys that had one then.
  const rewound = inFlight > 0 && shadowAt === undefined;
  if (rewound) {
    db.prepare(
      `DELETE FROM temp._sluice_vs WHERE ${isChangedKey(
        p,
        k.map((c) => `_sluice_vs.${c}`),
      )}`,
    ).run();
    const atCursor = `(SELECT * FROM ${CHANGED_TABLE} WHERE ${CHANGED_HELD} = 1) AS ${quoteIdent(p.source.table)}`;
    db.prepare(`INSERT INTO temp._sluice_vs ${sourceSide(db, p, atCursor)}`).run();
  }
  const on = k.map((c) => `s.${c} IS t.${c}`).join(' AND ');
  // A shadow leaves the changed keys out: its swap reads each of them again from the source.
  const skip =
    inFlight === 0 || rewound
      ? 'true'
      : `NOT ${isChangedKey(
          p,
          k.map((c) => `coalesce(s.${c}, t.${c})`),
        )}`;
  const rows = db
    .prepare(
      `SELECT ${k.map((c) => `coalesce(s.${c}, t.${c})`).join(', ')}, s.h IS NULL AS missing_s, t.h IS NULL AS missing_t
      FROM temp._sluice_vs s FULL OUTER JOIN temp._sluice_vt t ON ${on}
      WHERE (s.h IS NOT t.h) AND ${skip} LIMIT ${MAX_DIFFS}`,
    )
    .raw()
    .all() as unknown[][];
  const checked = Number(db.prepare('SELECT count(*) FROM temp._sluice_vs').pluck().get() as bigint);
  const diffs = rows.map((r): VerifyDiff => ({
    key: r.slice(0, k.length).map((v) => toJsonValue(fromDriver(v ?? null))),
    kind: Number(r[k.length + 1]) === 1 ? 'missing' : Number(r[k.length]) === 1 ? 'extra' : 'different',
  }));
  dropWorkTables(db);
  const found = { ...base, ok: diffs.length === 0, checked, inFlight, diffs, ...(caveats.length === 0 ? {} : { caveats }) };
  // Rows that differ because the source holds values its declared types store otherwise: said so, with the repair
  // that works (a rebuild alone copies them so again), not as a hand edit.
  if (diffs.length > 0 && !window && paths !== undefined && shadowAt === undefined) {
    const misfits = sourceMisfits(db, p);
    if (misfits.length > 0) {
      const detail = sourceAffinityDetail(p, misfits);
      const repair = suspensionRepair({ name: rec.name, reason: SOURCE_AFFINITY, detail: { ...detail } }, paths.source, paths.target);
      return { ...found, reason: SOURCE_AFFINITY, sourceAffinity: detail, repair };
    }
  }
  return acrossWindow(found, window);
}

/** What verify says of source rows of changed keys that are not what the journal's last events left (uncapturedWrites). */
function uncaptured(
  rec: ProjectionRecord,
  p: CompiledProjection,
  missed: { readonly count: number; readonly keys: readonly JsonValue[][] },
  window: boolean,
): { reason: string; skipped: string } {
  const keys = `${missed.keys.map((key) => JSON.stringify(key)).join(', ')}${missed.count > missed.keys.length ? ` and ${missed.count - missed.keys.length} more` : ''}`;
  const rows = `${missed.count} ${missed.count === 1 ? 'row' : 'rows'} of ${rec.sourceTable} (by ${p.source.keyColumns.join(', ')}: ${keys}) ${missed.count === 1 ? 'is' : 'are'} not what the journal's last event of ${missed.count === 1 ? 'its key' : 'each key'} after ${rec.name}'s cursor (seq ${rec.seq}) left`;
  if (window)
    return {
      reason: 'SCHEMA_WINDOW',
      skipped: `not compared: DDL sluice did not make ran on the source since the cursor of ${rec.name}, and ${rows}: the next sluice sync compares it with the source and rebuilds it by itself (SCHEMA_WINDOW), then verify again`,
    };
  return {
    reason: 'UNCAPTURED_WRITE',
    skipped: `not compared: ${rows} (its after image, or no row after a delete): a connection capture did not see wrote them (triggers off), and no sync brings such writes to any reader of ${rec.sourceTable}`,
  };
}

function dropWorkTables(db: Db): void {
  db.exec(
    `DROP TABLE IF EXISTS temp._sluice_vs; DROP TABLE IF EXISTS temp._sluice_vt; DROP TABLE IF EXISTS temp._sluice_vsrc; DROP TABLE IF EXISTS temp._sluice_vrw; DROP TABLE IF EXISTS ${CHANGED_TABLE}`,
  );
}

/**
 * Why the stored definition cannot be compared today, if it cannot: it no
 * longer validates, or it names what the source no longer has, a column its
 * computed columns or filter read included (the suspension the next sync
 * gives it: compileStoredToday, the rule sync and explain use), or the
 * source's table changed so that the next sync rebuilds it
 * (DEFINITION_CHANGED).
 */
function fitsSourceToday(db: Db, rec: ProjectionRecord): { reason: string; skipped: string } | undefined {
  const today = compileStoredToday(db, rec);
  if (isBroken(today)) return { reason: today.reason, skipped: `not compared: ${String(today.detail.message)}` };
  // (A target built by import or subscribe holds the fingerprint over the shape its file or stream stated: statedFingerprint.)
  if (today.fingerprint !== rec.fingerprint && statedFingerprint(today) !== rec.fingerprint)
    return {
      reason: 'DEFINITION_CHANGED',
      skipped: `not compared: the source's table ${today.source.table} changed since ${rec.name} was built; the next sluice sync rebuilds it, then verify again`,
    };
  return undefined;
}

/*
 * Capture cannot tell 0.0 from -0.0 in SQL (docs/journal.md, Known
 * trade-offs): an update between them in a column that can hold -0.0 (no
 * affinity, or ANY in a STRICT table) is not journaled. This check reads exact IEEE bytes, so a target left at the
 * other zero shows as different here; the caveat says why.
 */
function negativeZeroCaveat(shape: SourceShape, repair: string): string[] {
  // A STRICT table's ANY column keeps every value as written, -0.0 included, as a column without a type does (declaredType).
  const cols = shape.columns.filter((c) => canHoldNegativeZero(declaredType(c))).map((c) => c.name);
  if (cols.length === 0) return [];
  return [
    `an update between 0.0 and -0.0 in ${cols.join(', ')} of ${shape.table} (columns without affinity, or ANY in a STRICT table) is not journaled; this check compares exact bytes, so such a row would show as different here (repair: ${repair})`,
  ];
}

/** The source side's per-key hashes, over the source table or `from` (a table of its shape, aliased to its name). */
function sourceSide(db: Db, p: CompiledProjection, from?: string, sample?: string): string {
  const s = sourceRows(db, p, from);
  const where = sample === undefined ? s.where : s.where === '' ? ` WHERE ${sample}` : `${s.where} AND ${sample}`;
  return `SELECT ${s.keys.map((k, i) => `${k} AS k${i}`).join(', ')}, ${hashOf(s.values)} AS h FROM ${s.from}${where}`;
}

function targetSide(p: CompiledProjection): string {
  const t = kindOf(p).verification?.target(TARGET_SCHEMA, p);
  if (t === undefined) throw new Error(`projection ${p.name} of kind ${p.kind} cannot be verified`);
  return `SELECT ${t.keys.map((k, i) => `${k} AS k${i}`).join(', ')}, ${hashOf(t.values)} AS h FROM ${t.from}`;
}

/**
 * The hash call for a list of SQL values: each value goes in as its storage
 * class and, for TEXT, its bytes (a JS string would hide malformed UTF-8).
 */
function hashOf(values: readonly string[]): string {
  if (values.length === 0) return "''";
  // Two arguments a value, and SQLite takes at most 1000 in a call (SQLITE_MAX_FUNCTION_ARG): a wide table's
  // values go in chunks, one digest each, joined (both sides of a comparison chunk their values alike).
  const chunks: string[] = [];
  for (let i = 0; i < values.length; i += HASH_CHUNK) {
    const args = values
      .slice(i, i + HASH_CHUNK)
      .map((v) => `typeof(${v}), CASE WHEN typeof(${v}) = 'text' THEN CAST(${v} AS BLOB) ELSE ${v} END`);
    chunks.push(`sluice_row_hash(${args.join(', ')})`);
  }
  return chunks.join(' || ');
}

/** Values per sluice_row_hash call: 500 arguments, well under SQLite's 1000. */
const HASH_CHUNK = 250;

/** sluice_row_hash(v...): a digest of the values by storage class and bytes. */
function registerHash(db: Db): void {
  registerNegativeZero(db);
  db.function('sluice_row_hash', { deterministic: true, varargs: true, safeIntegers: true }, (...args: unknown[]) => {
    const h = createHash('sha1');
    for (let i = 0; i + 1 < args.length; i += 2) {
      const cls = String(args[i]);
      const v = fromDriver(args[i + 1] ?? null) as SqlValue;
      h.update(cls[0] as string);
      if (cls === 'text' || cls === 'blob') {
        h.update(`${(v as Uint8Array).length}:`).update(v as Uint8Array);
      } else if (cls === 'real') {
        const buf = Buffer.alloc(8);
        buf.writeDoubleBE(v as number);
        h.update(buf);
      } else if (cls === 'integer') h.update(`${String(v)};`);
    }
    return h.digest('hex').slice(0, 20);
  });
}

/** `sluice sync SOURCE [TARGET]` as it is typed. */
function syncOf(sourcePath: string, targetPath?: string): string {
  return targetPath === undefined
    ? shellCommand('syncSource', { source: sourcePath })
    : shellCommand('sync', { source: sourcePath, target: targetPath });
}
