import fs from 'node:fs';
import { kindNamed } from '../../projection/index.ts';
import { openDatabase, type Db, type QuietHold, readQuietlySync, readSessionSync, shellCommand, shellWord } from '../../sqlite/index.ts';
import {
  readProjections,
  type ProjectionRecord,
  damagedTarget,
  fails,
  hasTargetMeta,
  allowProjectionWrites,
  guardFaults,
  triggerWriteFix,
  triggerWriteText,
  userTriggerWriteOf,
  type GuardFault,
  unguardedMarks,
} from '../target/index.ts';
import {
  damagedCapture,
  enableCommand,
  readState,
  readTables,
  STATE_TABLE,
  nextSyncArming,
  type CaptureState,
} from '../../capture/index.ts';
import { eventsAfter, firstEventMsAfter, lastJournalSeq, readSourceView, validateCursor } from '../../feed/index.ts';
import {
  columnsRead,
  cursorBreak,
  mirrorAllSource,
  nextSyncCapture,
  ownedBy,
  unbuiltMirrorAction,
  unbuiltMirrors,
  type BuildableFacts,
  type DecidedSuspension,
} from '../projections/index.ts';
import { InvalidInputError, SluiceError, isSqliteCorrupt } from '../../errors.ts';
import { targetTableProblems } from './health-target.ts';
import { reasonsOf } from '../../reasons.ts';
import { lostProjections } from './health-consumers.ts';
import { suspensionRepair, unarmedOf } from './suspension-repair.ts';
import { failedAttempts, runAgain } from './failed-attempts.ts';
import { brokenForecast, brokenProblem } from './health-definition.ts';
import { notHeldHealth, type FailureHealth, type ProjectionHealth, type HealthReport } from './health-types.ts';
export type { FailureHealth, ProjectionHealth, HealthFedBy, HealthReport } from './health-types.ts';

/** Why a cursor cannot continue that the next sync rebuilds from by itself (kind `rebuilt`): no action needed. */
const SYNC_REBUILDS: ReadonlySet<string> = reasonsOf('rebuilt');

/**
 * Of those, a cursor past what the source holds (an older copy restored):
 * the target holds changes the source no longer has, wrong until rebuilt
 * (between two cron syncs, hours): a problem, not a note.
 */
const AHEAD_OF_SOURCE: ReadonlySet<string> = new Set(['SEQ_REGRESSED', 'HISTORY_DIVERGED']);

export interface HealthOptions {
  /** A projection more than this many events behind needs action. */
  readonly maxLagEvents?: number;
  /** A projection whose oldest unapplied event waited more than this many ms needs action. */
  readonly maxLagMs?: number;
  /**
   * The lag of projections with no source path (fed by `sluice subscribe` or
   * `import`), by name, as the caller read it where they are fed (the CLI
   * reads the stream, `--nats`), or why it could not. Without an entry their
   * lag cannot be known, and a lag that cannot be known needs action.
   */
  readonly fedLag?: ReadonlyMap<string, FedLag>;
  /**
   * The source a subscribed target's stream carries, where it is on this
   * machine too (a pipeline file declares both the source and the
   * subscription): the lag of a projection fed from it is also read there,
   * and the larger counts. A stream tells only what was published into it;
   * one the publisher no longer writes (its URL moved) ends where the
   * replica is, and says lag 0 while the source goes on. Ignored for a
   * projection fed from another source id.
   */
  readonly localSource?: string;
  /** The time lags in ms are measured to (ms since the epoch). Default: now. */
  readonly now?: number;
  /**
   * The target is one `sluice run` follows (declared in its pipeline file):
   * what is to be run again (a failed first build, failed attempts) is run's
   * to retry, by itself, not a command the user runs.
   */
  readonly followedByRun?: boolean;
}

/**
 * A fed projection's lag, read from its stream, or why it could not be read
 * (a problem, with what to do). `rebuild`: the next subscribe rebuilds it
 * from the stream's snapshot (at `snapshotSeq`), for `reason`, as the
 * subscriber plans its start (broker/subscribe-plan.ts).
 */
export type FedLag =
  | {
      readonly sourceSeq: number;
      readonly lagEvents: number;
      readonly lagMs: number;
      readonly rebuild?: { readonly reason: string; readonly targetSeq: number; readonly snapshotSeq: number };
    }
  | { readonly unknown: string };

/**
 * Reports every projection of a target: state, lag in events and in ms
 * (read from its source), failed sync attempts, whether its cursor can
 * continue, its tables, and whether it needs action. Reads both files only,
 * held so that no -wal or -shm is left beside them (QuietHold).
 *
 * @example
 * const h = health('cache.db', { maxLagEvents: 10_000 });
 * if (!h.ok) for (const p of h.projections.filter((x) => x.needsAction)) console.log(p.name, p.action);
 */
export function health(targetPath: string, options: HealthOptions = {}): HealthReport {
  if (!fs.existsSync(targetPath))
    throw new InvalidInputError('DB_NOT_FOUND', `Target ${targetPath} does not exist. Pass a target written by \`sluice sync\`.`);
  // The target, and each source as it is first read, held while read (QuietHold): a reader of a WAL file would leave a -wal and -shm.
  return readQuietlySync([targetPath], (hold) => healthOf(targetPath, options, hold));
}

function healthOf(targetPath: string, options: HealthOptions, hold: QuietHold): HealthReport {
  const target = openDatabase(targetPath, { readonly: true, role: 'target' });
  // A read-only connection that can compile a write to a protected table (its guard calls this function): a user's
  // trigger that writes another projection's table is found by compiling writes to the projection's tables (triggerProblems).
  allowProjectionWrites(target);
  const sources = new Map<string, OpenedSource>();
  try {
    let records: ProjectionRecord[];
    try {
      // Not a vacuous ok: a file that holds no sluice target (a source passed by mistake, a file emptied) is no target of anything.
      if (!hasTargetMeta(target, 'main'))
        throw new InvalidInputError(
          'NOT_A_TARGET',
          `${targetPath} is not a sluice target (no _sluice_projections table)${target.prepare('SELECT 1 FROM main.sqlite_schema WHERE name = ?').get(STATE_TABLE) === undefined ? '' : ': it is a source (it has sluice capture)'}, so there is no projection whose health could be read. Pass a target written by \`sluice sync\` (sluice status reads a source).`,
        );
      records = readProjections(target, 'main');
    } catch (err) {
      if (isSqliteCorrupt(err)) throw damagedTarget(targetPath, err);
      throw err;
    }
    // A damage sync met (recorded) is confirmed here; the file is not scanned otherwise.
    if (records.some((r) => r.lastErrorCode === 'TARGET_CORRUPT' && r.failures > 0) && fails(target, 'main'))
      throw damagedTarget(targetPath);
    const local = options.localSource === undefined ? undefined : sourceFor({ sourcePath: options.localSource }, sources, hold);
    const projections = records.map((r) => one(r, target, sourceFor(r, sources, hold), targetPath, options, local?.db));
    projections.push(...pendingMirrors(target, records, sources, hold, targetPath));
    const readable = new Map([...sources].flatMap(([file, s]) => (s.db === undefined ? [] : [[file, s.db] as const])));
    projections.push(...lostProjections(target, targetPath, readable, new Set(projections.map((p) => p.name))));
    return { ok: projections.every((p) => !p.needsAction), projections };
  } finally {
    target.close();
    for (const s of sources.values()) s.db?.close();
  }
}

type OpenedSource = { readonly db: Db; readonly error?: undefined } | { readonly db?: undefined; readonly error: string };

function causeOf(err: unknown): string {
  return err instanceof SluiceError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
}

function sourceFor(r: Pick<ProjectionRecord, 'sourcePath'>, cache: Map<string, OpenedSource>, hold: QuietHold): OpenedSource | undefined {
  if (r.sourcePath === null) return undefined;
  let s = cache.get(r.sourcePath);
  if (s === undefined) {
    try {
      hold.add({ path: r.sourcePath, role: 'source' });
      s = { db: openDatabase(r.sourcePath, { readonly: true, role: 'source' }) };
    } catch (err) {
      s = { error: causeOf(err) };
    }
    cache.set(r.sourcePath, s);
  }
  return s;
}

/**
 * The mirrors "*" asks for that the target does not hold yet (a table
 * enabled after the last sync, or a first sync that failed before making
 * them): each needs a sync (MIRROR_NOT_BUILT), or, when sync cannot make it
 * as the table is (it leaves the table out), a change of the table
 * (MIRROR_REFUSED): the target is narrower than "*" asks either way. A
 * source that cannot be read is reported by the projections that read it.
 */
function pendingMirrors(
  target: Db,
  records: readonly ProjectionRecord[],
  sources: Map<string, OpenedSource>,
  hold: QuietHold,
  targetPath: string,
): ProjectionHealth[] {
  const sourcePath = mirrorAllSource(target, 'main', records);
  const source = sourcePath === null ? undefined : sourceFor({ sourcePath }, sources, hold);
  if (sourcePath === null || source?.db === undefined) return [];
  let unbuilt;
  try {
    unbuilt = unbuiltMirrors(source.db, target, 'main', records, readTables(source.db));
  } catch {
    return [];
  }
  return unbuilt.map((d) => {
    // One the next sync cannot build either (it leaves the table out, exit 0) says why, and what makes it buildable.
    const { reason, action } = unbuiltMirrorAction(d, sourcePath, targetPath);
    return notHeldHealth({
      name: d.name,
      kind: 'mirror',
      state: 'pending',
      reason,
      detail: { table: d.source, ...(d.refused === undefined ? {} : { why: d.refused }) },
      seq: 0,
      sourcePath,
      action,
      problems: [action],
    });
  });
}

/** What health reads from the source for one projection, in one read transaction. */
interface SourceFacts {
  sourceSeq: number | null;
  lagEvents: number | null;
  lagMs: number | null;
  rebuild: string | null;
  problems: string[];
  /**
   * Its cursor cannot continue on the source, for this reason, and the next
   * sync rebuilds it: its rows may lack changes the source has (writes its
   * table's triggers missed before a re-arm, a bump's, another capture's),
   * and how many is not known until then (lagEvents and lagMs are null).
   * Past a lag bound, that needs action. (A cursor below the pruned horizon
   * has a lag: the events it lacks.)
   */
  lagUnknown?: string;
  /**
   * The next sync suspends it: its stored definition no longer fits the
   * source (brokenForecast). Its problem is then the only one read from the
   * source: that sync neither rebuilds it nor lifts a suspension it has.
   */
  suspends?: string;
}

function readSource(r: ProjectionRecord, source: Db, targetPath: string, now: number): SourceFacts {
  const facts: SourceFacts = { sourceSeq: null, lagEvents: null, lagMs: null, rebuild: null, problems: [] };
  readSessionSync(source, () => {
    try {
      const state = readState(source);
      if (state === undefined) {
        facts.problems.push(
          `the source ${r.sourcePath} has no capture any more: run ${enableCommand(r.sourcePath ?? source.name, [r.sourceTable])}, then sluice sync`,
        );
        return;
      }
      // A table of the capture dropped outside sluice: sync of it fails (or the writers do), whatever the cursor.
      const damaged = damagedCapture(source, r.sourcePath ?? source.name);
      if (damaged !== undefined) {
        facts.problems.push(`${damaged.code}: ${damaged.message}`);
        return;
      }
      facts.sourceSeq = Math.max(lastJournalSeq(source), state.prunedThrough);
      const table = readTables(source).find((t) => t.name === r.sourceTable);
      if (table !== undefined) Object.assign(facts, lag(source, r, state, table.tid, facts.sourceSeq, now));
      // Sync compiles every stored definition before it steps one: one that no longer fits is suspended, whatever its cursor or arming.
      const broken = brokenForecast(source, r);
      if (broken !== undefined) {
        facts.suspends = broken.reason;
        facts.problems.push(brokenProblem(broken, r, targetPath));
        return;
      }
      if (table === undefined)
        facts.problems.push(
          `the source no longer captures ${r.sourceTable}, so ${r.name} is not synced: capture it again (${shellCommand('enable', { source: r.sourcePath ?? '', table: r.sourceTable })}) and run sluice sync, or remove the projection and its tables (${shellCommand('drop', { target: targetPath, projection: r.name })})`,
        );
      if (r.cursor !== null) {
        const v = validateCursor(source, r.cursor, undefined, {
          allowSchemaWindow: kindNamed(r.kind)?.verification !== undefined,
          reads: columnsRead(r),
          tables: [r.sourceTable],
        });
        // What the next sync does with a cursor that cannot continue, decided by sync's own rule: a snapshot rebuilds it,
        // unless the table cannot be built from (switched to keys mode: NEEDS_IMAGES_MODE, where the cursor says SCHEMA_CHANGED).
        const next = v.status === 'rebuild' ? cursorBreak(nextSyncBuild(source, r), v) : undefined;
        if (next !== undefined) facts.rebuild = next.reason;
        if (v.status === 'rebuild' && v.reason !== 'CURSOR_PRUNED') {
          facts.lagEvents = null;
          facts.lagMs = null;
          // (One the next sync suspends instead has that problem already.)
          if (next?.does === 'rebuild') facts.lagUnknown = v.reason;
        }
        if (v.status === 'rebuild' && next?.does === 'suspend' && next.reason !== v.reason) {
          facts.problems.push(unbuildableProblem(r, v.reason, next, source, targetPath));
          if (r.state === 'active') facts.suspends = next.reason;
          return;
        }
        if (v.status === 'rebuild' && AHEAD_OF_SOURCE.has(v.reason) && r.sourcePath !== null)
          facts.problems.push(
            `${v.reason}: ${v.message} (until it is rebuilt, ${r.name} holds changes the source does not have: the next sluice sync rebuilds it by itself, a follower (sluice run, sync --follow) within a second of the restore: ${shellCommand('sync', { source: r.sourcePath, target: targetPath })})`,
          );
        if (v.status !== 'ok' && !SYNC_REBUILDS.has(v.reason)) {
          // A table not armed: writes go unrecorded until the next sync, which re-arms it by itself unless the source must be fixed first.
          const unarmed = v.status === 'rebuild' && v.reason === 'TABLE_UNARMED' ? unarmedOf(v.detail, r.sourceTable).table : undefined;
          const then =
            unarmed !== undefined && r.sourcePath !== null && nextSyncArming(source, unarmed) !== 'unarmed'
              ? `the next sluice sync re-arms ${unarmed} on the source and rebuilds ${r.name} by itself: ${shellCommand('sync', { source: r.sourcePath, target: targetPath })}`
              : `the next sluice sync cannot rebuild ${r.name} by itself`;
          facts.problems.push(`${v.reason}: ${v.message} (${then})`);
        }
      }
    } catch (err) {
      facts.problems.push(`the source ${r.sourcePath} cannot be read: ${causeOf(err)}`);
    }
  });
  return facts;
}

/**
 * How the next sync finds the projection's source table when it steps it:
 * as the source captures it now, armed again if that sync re-arms it
 * (capture's nextSyncArming) before it steps a projection.
 */
function nextSyncBuild(source: Db, r: ProjectionRecord): BuildableFacts {
  return {
    projection: { table: r.sourceTable, needsImages: kindNamed(r.kind)?.needsImages !== false },
    table: nextSyncCapture(source, readSourceView(source), r.sourceTable),
  };
}

/** The problem of a projection whose cursor a snapshot would repair (`cursor`), but whose table the next sync cannot build from: it suspends it (`s`). */
function unbuildableProblem(r: ProjectionRecord, cursor: string, s: DecidedSuspension, source: Db, targetPath: string): string {
  const table = typeof s.detail.table === 'string' ? s.detail.table : r.sourceTable;
  const why =
    s.reason === 'NEEDS_IMAGES_MODE'
      ? `${table} is captured in ${String(s.detail.mode)} mode, and a ${r.kind} projection is built and kept from row images`
      : s.reason === 'TABLE_UNTRACKED'
        ? `the source no longer captures ${table}`
        : `${table} is not armed, and the next sync cannot re-arm it`;
  const repair = suspensionRepair({ ...r, reason: s.reason, detail: s.detail }, r.sourcePath ?? undefined, targetPath, source);
  return `${s.reason}: the next sluice sync suspends ${r.name} rather than rebuild it: its cursor cannot continue (${cursor}), and no snapshot can rebuild it, as ${why}: ${repair.startsWith(`${s.reason}: `) ? repair.slice(s.reason.length + 2) : repair}`;
}

function lag(
  source: Db,
  r: ProjectionRecord,
  state: CaptureState,
  tid: number,
  sourceSeq: number,
  now: number,
): Pick<SourceFacts, 'lagEvents' | 'lagMs'> {
  const oldest = firstEventMsAfter(source, tid, r.seq);
  const since = (ms: number) => Math.max(0, now - ms);
  if (r.seq < state.prunedThrough) {
    const lagEvents = sourceSeq - r.seq;
    const lagMs = lagEvents === 0 ? 0 : r.lastEventMs !== null ? since(r.lastEventMs) : oldest === undefined ? 0 : since(oldest);
    return { lagEvents, lagMs };
  }
  const lagEvents = eventsAfter(source, tid, r.seq);
  return { lagEvents, lagMs: oldest === undefined ? 0 : since(oldest) };
}

/**
 * A projection with no source to read. Imported: its lag is not tracked
 * (a note, no problem). Otherwise its lag as the caller read it from the
 * stream, else a problem (never ok).
 */
function fedFacts(r: ProjectionRecord, fed: FedLag | undefined, targetPath: string): SourceFacts & { note?: string } {
  const unknown = (why: string): SourceFacts => ({ sourceSeq: null, lagEvents: null, lagMs: null, rebuild: null, problems: [why] });
  if (r.fedBy?.via === 'import')
    return {
      sourceSeq: null,
      lagEvents: null,
      lagMs: null,
      rebuild: null,
      problems: [],
      note: `the lag of an import is not tracked (last imported from ${r.fedBy.file} at ${new Date(r.fedBy.ms).toISOString()}): import the next export file to bring it up to date`,
    };
  if (fed === undefined && r.fedBy?.via === 'subscribe')
    return unknown(
      `the lag of ${r.name} was not read from stream ${r.fedBy.stream} at ${r.fedBy.url}, where sluice subscribe reads it: read it there (${shellCommand('health', { target: targetPath })}), or pass the broker's URL: ${shellCommand('healthFromStream', { target: targetPath })}`,
    );
  if (fed === undefined)
    return unknown(
      `the lag of ${r.name} cannot be known from the target: it has no source path to read, and the target does not record what feeds it (made before that was recorded); for a subscribed target, read it from the stream: ${shellCommand('healthFromStream', { target: targetPath })}; for an imported one, import a file again (${shellCommand('importInto', { target: targetPath })}: a file already applied changes no row), and the target records it`,
    );
  if ('unknown' in fed) return unknown(fed.unknown);
  const facts: SourceFacts = { sourceSeq: fed.sourceSeq, lagEvents: fed.lagEvents, lagMs: fed.lagMs, rebuild: null, problems: [] };
  const next = fed.rebuild;
  if (next === undefined) return facts;
  // The next subscribe rebuilds it from the stream's snapshot, said as for a synced projection whose next sync does (readSource).
  facts.rebuild = next.reason;
  // Behind the stream's batches (their events are known, as for CURSOR_PRUNED); else its rows may lack what no count tells.
  if (next.reason !== 'SUBSCRIBER_BEHIND_STREAM') {
    facts.lagEvents = null;
    facts.lagMs = null;
    facts.lagUnknown = next.reason;
  }
  if (AHEAD_OF_SOURCE.has(next.reason)) {
    const by = r.fedBy?.via === 'subscribe' ? r.fedBy : undefined;
    const subscribe = `sluice subscribe ${shellWord(targetPath)} --nats ${by === undefined ? 'URL' : shellWord(by.url)} --source ${shellWord(by?.sourceId ?? r.sourceId)}`;
    facts.problems.push(
      `${next.reason}: the last snapshot of stream ${by?.stream ?? 'the stream'}, at seq ${next.snapshotSeq}, was published after the source went back below seq ${next.targetSeq} of ${r.name} (restored from an older copy?) (until it is rebuilt, ${r.name} holds changes the source does not have: the next sluice subscribe rebuilds it by itself, a follower (sluice subscribe --follow, sluice run) as soon as it meets the snapshot: ${subscribe})`,
    );
  }
  return facts;
}

/**
 * A subscribed projection's lag read from its stream, raised to its lag
 * against the source itself when that is on this machine
 * (HealthOptions.localSource) and is the one the projection is fed from
 * (the same source id): a stream the publisher stopped writing says lag 0
 * while the source goes on. A lag the stream could not tell stays a problem.
 */
function atLeastLocalLag(fed: SourceFacts & { note?: string }, r: ProjectionRecord, local: Db | undefined, now: number): SourceFacts {
  if (local === undefined || r.fedBy?.via !== 'subscribe' || fed.lagEvents === null) return fed;
  const sourceId = r.fedBy.sourceId;
  const here = readSessionSync(local, () => {
    try {
      const state = readState(local);
      if (state?.sourceId !== sourceId) return undefined;
      const sourceSeq = Math.max(lastJournalSeq(local), state.prunedThrough);
      const table = readTables(local).find((t) => t.name === r.sourceTable);
      return table === undefined ? undefined : { sourceSeq, ...lag(local, r, state, table.tid, sourceSeq, now) };
    } catch {
      return undefined; // (the source cannot be read now: the stream's lag is all there is)
    }
  });
  if (here === undefined) return fed;
  return {
    ...fed,
    sourceSeq: Math.max(fed.sourceSeq ?? 0, here.sourceSeq),
    lagEvents: Math.max(fed.lagEvents, here.lagEvents ?? 0),
    lagMs: Math.max(fed.lagMs ?? 0, here.lagMs ?? 0),
  };
}

/** A protected target's tables of `r` whose guard triggers another program dropped, or made again so they guard nothing: hand edits go in again, unseen. */
function guardProblems(target: Db, r: ProjectionRecord, targetPath: string): string[] {
  const vars = { source: r.sourcePath ?? undefined, target: targetPath };
  return guardFaults(target, 'main', r.name, ownedBy(r)).map(
    (g) =>
      `table ${g.table} of projection ${r.name} is not guarded any more: this target is protected (sluice protect), but ${guardFaultText(g)}, so writes outside sluice to it are accepted again and may have been made; find them with ${shellCommand('verify', vars)}, and guard it again with ${shellCommand('protect', vars)}`,
  );
}

/**
 * A user's trigger that a write to `r`'s tables fires and that writes
 * another projection's table (or sluice's own): the rule sync checks
 * before each batch (projection-writes.ts userTriggerWrites), said before
 * a sync runs into it (a trigger just made). Once it suspended `r`, the
 * suspension says it.
 */
function triggerProblems(target: Db, r: ProjectionRecord, targetPath: string): string[] {
  if (r.state === 'suspended' && r.reason === 'USER_TRIGGER_WRITES_PROJECTION') return [];
  const w = userTriggerWriteOf(target, 'main', r.name);
  if (w === undefined) return [];
  return [
    `USER_TRIGGER_WRITES_PROJECTION: ${triggerWriteText(w)} whenever sluice writes table ${w.fired.table}, inside sluice's own transaction (where neither sluice protect's guards nor the hand-edit watch see it): the next sync, import or subscribe applies nothing to projection ${r.name} while it is there (suspended), or it would change ${w.projection === null ? "sluice's own bookkeeping" : `projection ${w.projection}`} behind sluice's back; ${triggerWriteFix(w, targetPath)}`,
  ];
}

/**
 * Tables of `r` that sluice found unguarded and guarded again (protect, or
 * sync making a dropped guard again): writes outside sluice may have gone in
 * meanwhile, and only a verify of the projection tells (it clears the mark).
 */
function unguardedProblems(target: Db, r: ProjectionRecord, targetPath: string): string[] {
  const vars = { source: r.sourcePath ?? undefined, target: targetPath };
  return unguardedMarks(target, 'main', r.name).map(
    (m) =>
      `table ${m.table} of projection ${r.name} was unguarded since ${new Date(m.sinceMs).toISOString()} or later (its guard triggers were found missing or altered and made again at ${new Date(m.foundMs).toISOString()}), so writes outside sluice may have gone in; run ${shellCommand('verify', vars)}: it compares the projection with its source, suspends it (TARGET_EDITED) if they differ, and clears this once it has compared it`,
  );
}

/** What is wrong with the guard triggers of a table, in words. */
function guardFaultText(g: GuardFault): string {
  const them = (names: readonly string[]) =>
    `its guard trigger${names.length === 1 ? '' : 's'} ${names.join(', ')} ${names.length === 1 ? 'is' : 'are'}`;
  const parts: string[] = [];
  if (g.missing.length > 0) parts.push(`${them(g.missing)} missing (dropped by another program)`);
  for (const on of new Set(g.elsewhere.map((e) => e.on))) {
    const names = g.elsewhere.filter((e) => e.on === on).map((e) => e.trigger);
    parts.push(
      `${them(names)} on table ${on}, not on ${g.table} (${g.table} was renamed to ${on}, its triggers followed it, and a table ${g.table} was made again)`,
    );
  }
  for (const name of g.altered)
    parts.push(
      `its guard trigger ${name} is not the one sluice protect made (made again under its name by another program, it may refuse nothing)`,
    );
  return parts.join('; ');
}

function failureOf(r: ProjectionRecord): FailureHealth | null {
  if (r.failures === 0 && r.lastError === null) return null;
  return { code: r.lastErrorCode ?? 'APPLY_FAILED', message: r.lastError ?? '', ms: r.lastErrorMs, consecutive: Math.max(1, r.failures) };
}

function one(
  r: ProjectionRecord,
  target: Db,
  source: OpenedSource | undefined,
  targetPath: string,
  options: HealthOptions,
  local?: Db,
): ProjectionHealth {
  const sourcePath = r.sourcePath ?? undefined;
  let facts: SourceFacts & { note?: string } = { sourceSeq: null, lagEvents: null, lagMs: null, rebuild: null, problems: [] };
  if (source?.error !== undefined) facts.problems.push(`the source ${r.sourcePath} cannot be opened: ${source.error}`);
  else if (source?.db !== undefined) facts = readSource(r, source.db, targetPath, options.now ?? Date.now());
  else if (r.state !== 'suspended')
    facts = atLeastLocalLag(fedFacts(r, options.fedLag?.get(r.name), targetPath), r, local, options.now ?? Date.now());
  // A suspension the next sync gives it comes first; one it has, or a first build, that it replaces is not repaired as it is.
  const problems: string[] = facts.suspends === undefined ? [] : [...facts.problems];
  if (r.state === 'suspended' && facts.suspends === undefined) problems.push(suspensionRepair(r, sourcePath, targetPath, source?.db));
  const again = runAgain(r, targetPath, options.followedByRun === true);
  if (r.state === 'building' && facts.suspends === undefined)
    problems.push(
      r.failures > 0
        ? `its first build failed (see the failure below): ${again ?? 'run sluice sync again'}`
        : `an initial build was interrupted: ${again ?? 'run sluice sync again'}`,
    );
  const failure = failureOf(r);
  if (failure !== null) problems.push(failedAttempts(r, failure, targetPath, options.followedByRun === true));
  problems.push(
    ...(facts.suspends === undefined ? facts.problems : []),
    ...targetTableProblems(target, r, sourcePath, targetPath),
    ...guardProblems(target, r, targetPath),
    ...unguardedProblems(target, r, targetPath),
    ...triggerProblems(target, r, targetPath),
  );
  const catchUp = r.sourcePath === null ? 'sluice subscribe' : 'sluice sync';
  const bounded = [
    ...(options.maxLagEvents === undefined ? [] : [`--max-lag-events ${options.maxLagEvents}`]),
    ...(options.maxLagMs === undefined ? [] : [`--max-lag-ms ${options.maxLagMs}`]),
  ];
  if (bounded.length > 0 && facts.lagUnknown !== undefined && r.state !== 'suspended' && facts.suspends === undefined)
    problems.push(
      `the lag of ${r.name} is not known, so it is not within ${bounded.join(' and ')}: its cursor cannot continue on the source (${facts.lagUnknown}), and until the next ${r.sourcePath === null ? 'subscribe rebuilds it from the stream' : 'sync rebuilds it from the source'} it may lack changes the source has: run ${r.sourcePath === null ? catchUp : shellCommand('sync', { source: r.sourcePath, target: targetPath })} (or keep ${catchUp} --follow running)`,
    );
  if (options.maxLagEvents !== undefined && facts.lagEvents !== null && facts.lagEvents > options.maxLagEvents) {
    problems.push(
      `a lag of ${facts.lagEvents} events is past --max-lag-events ${options.maxLagEvents}: run ${catchUp} (or keep ${catchUp} --follow running)`,
    );
  }
  if (options.maxLagMs !== undefined && facts.lagMs !== null && facts.lagMs > options.maxLagMs) {
    problems.push(
      `a lag of ${facts.lagMs} ms is past --max-lag-ms ${options.maxLagMs}: run ${catchUp} (or keep ${catchUp} --follow running)`,
    );
  }
  return {
    name: r.name,
    kind: r.kind,
    state: r.state,
    reason: r.reason,
    detail: r.detail,
    seq: r.seq,
    sourcePath: r.sourcePath,
    sourceSeq: facts.sourceSeq,
    lagEvents: facts.lagEvents,
    lagMs: facts.lagMs,
    lastError: r.lastError,
    failure,
    rebuild: facts.rebuild,
    needsAction: problems.length > 0,
    ...(problems.length === 0 ? {} : { action: problems[0] }),
    problems,
    fedBy: r.sourcePath !== null ? { via: 'sync', source: r.sourcePath } : r.fedBy,
    ...(facts.note === undefined ? {} : { note: facts.note }),
  };
}
