import type { Db } from '../sqlite/index.ts';
import { beginHeld, commitHeld, foldIdent, rollbackOpen, shellCommand, writeTransaction } from '../sqlite/index.ts';
import { ensureGuards } from '../apply/edits/index.ts';
import { errorCode, FailClosedError, InvalidInputError, isSqliteBusy, isSqliteCorrupt } from '../errors.ts';
import type { ChangeBatch, Continuation, Cursor, Row } from '../feed/index.ts';
import { cursorContinues, decodeCursor, decodedBatch, decodedRows, lineToEvent, lineToRow } from '../feed/index.ts';
import {
  compileProjection,
  type CompiledProjection,
  type SourceShape,
  defaultMirror,
  lacksHandler,
  parseDefinition,
  parseStoredDefinition,
  type ProjectionDefinition,
  checkCollisions,
  madeTablesAt,
  probeExpressions,
  dropTemps,
  kindOf,
  isHandlerFailure,
  type AlterDecision,
} from '../projection/index.ts';
import {
  readProjection,
  readProjections,
  PROJECTIONS_TABLE,
  recordFedBy,
  clearUnguarded,
  readLeftCursors,
  recordLeftCursor,
} from '../apply/target/index.ts';
import type { DroppedIndex, DroppedTrigger, ProjectionRecord } from '../apply/target/index.ts';
import {
  isDefaultMirror,
  recordSuspension,
  SnapshotInstall,
  storeProjectionSet,
  streamMirrors,
  type ApplyTarget,
  type MirrorAll,
  type Suspension,
} from '../apply/projections/index.ts';
import { failureOf, recordFailed, runBatchPath } from '../apply/sync/index.ts';
import { classifyFromTarget, storeDefinition } from '../apply/evolution/index.ts';
import type { BatchLine, RowLine, SnapshotLine, TableLine } from './format.ts';
import type { ExportItem, ReadTotals } from './checked-reader.ts';

import type { ImportOptions, ImportReport, ItemStream } from './import-types.ts';
import type { ReasonCode } from '../reasons.ts';
import { carriedTables, carries, untrackedSuspension } from './untracked-tables.ts';
import { clearRefusals } from './import-refusal.ts';
import { batchReaching, type StreamMarker } from './stream-markers.ts';

const SCHEMA = 'main';

/** A key's values as text, equal for equal values (of one storage class): bigint, number, string, blob and null told apart. */
function keyText(values: readonly unknown[]): string {
  return JSON.stringify(
    values.map((v) => (typeof v === 'bigint' ? { i: String(v) } : v instanceof Uint8Array ? { b: Buffer.from(v).toString('hex') } : v)),
  );
}

/*
 * Feeds a stream of checked export items (import.ts) to the one applier
 * (apply/projections/applier.ts): each snapshot, and each batch, for every projection.
 */

/** Snapshot rows applied per statement batch while a snapshot streams in. */
const SNAPSHOT_CHUNK = 5000;

type Reader = AsyncGenerator<ExportItem, ReadTotals>;

/** A projection whose table the stream no longer carries, and its suspension (untracked-tables.ts). */
interface Untracked {
  readonly target: ApplyTarget;
  readonly p: CompiledProjection;
  readonly s: Suspension;
}

/** A projection's failed attempt in this run (apply/sync/projection-failure.ts). */
interface Failure {
  readonly code: string;
  readonly message: string;
}

/**
 * A custom handler's failure (its throw, a statement sluice refused it) as
 * the failure of its projection alone, as sync takes it: undefined for any
 * other error, and for one of the target's file (busy, full, damaged),
 * which stops the import as it stops a sync.
 */
function handlerFailure(err: unknown): Failure | undefined {
  if (!isHandlerFailure(err) || isSqliteBusy(err) || errorCode(err) === 'SQLITE_FULL' || isSqliteCorrupt(err)) return undefined;
  return failureOf(err);
}

/** What a projection a snapshot installs over, or skips, held before it: its cursor, and why the stream does not continue it if known. */
interface Prior {
  readonly cursor: string | null;
  readonly seq: number;
  readonly reason?: ReasonCode;
}

/**
 * The snapshot being read: per source table, the projections it installs and
 * the rows not yet added (with their line numbers), what each of them held
 * before (`prior`, by name), and the projections it skips as held (`held`).
 */
type Installing = Map<
  string,
  {
    readonly installs: SnapshotInstall[];
    chunk: Row[];
    lines: number[];
    readonly prior: ReadonlyMap<string, Prior>;
    readonly held: readonly (Prior & { readonly name: string; readonly left?: true })[];
  }
>;
type InstallingTable = Installing extends Map<string, infer T> ? T : never;

/**
 * Where a definition given is weighed (Importer #checkDefinitions): at `at`,
 * before the batch `line`, or (`older`) at a snapshot of table `table` at
 * seq `seq` of a file that reaches seq `reach`, below the projection's seq.
 */
interface Where {
  readonly at: string;
  readonly line?: BatchLine;
  readonly older?: { readonly table: string; readonly seq: number; readonly reach: number };
}

/** Feeds a stream of checked export items to the applier: snapshots and batches, each in one target transaction. */
export class Importer {
  readonly #db: Db;
  readonly #options: ImportOptions;
  /** The stream's label and whether it is a segment's (ItemStream), for errors, and the furthest cursor it is known to reach. */
  #stream: {
    readonly label: string;
    readonly segment: boolean;
    readonly lastCursor?: () => string | undefined;
    readonly markers?: () => readonly StreamMarker[];
  } = {
    label: '',
    segment: false,
  };
  /**
   * By projection: the cursor of a history it was rebuilt away from that the stream continues (readLeftCursors), or null
   * when it continues none; the stream then changes nothing for it (#leftBy).
   */
  readonly #left = new Map<string, string | null>();
  /** ItemStream.lastCursor, decoded once asked for (null: none, or not a cursor). */
  #later: Cursor | null | undefined;
  /** Why a snapshot of the stream rebuilt a projection (ImportReport `rebuilt`), by name: committed, and of the snapshot being read. */
  readonly #rebuilt = new Map<string, ReasonCode>();
  #rebuilding = new Map<string, ReasonCode>();
  readonly #shapes = new Map<string, SourceShape>();
  /** The seq of the snapshot whose table lines were read last (undefined: none yet). */
  #snapshotSeq: number | undefined;
  #stored: Map<string, SourceShape> | undefined;
  #projections: CompiledProjection[] | undefined;
  #applied = 0;
  #skipped = 0;
  /** Tables of the snapshot being read that no projection installs (the target holds them). */
  readonly #heldRows = new Set<string>();
  /** Compiled projections whose definition is the one the target holds, or stored there by #checkDefinitions. */
  readonly #settled = new WeakSet<CompiledProjection>();
  /** The names of the definitions given (ImportOptions.projections), once #checkDefinitions needs them. */
  #given: ReadonlySet<string> | undefined;
  /** Indexes a user added that a snapshot in this file replaced its tables without (see user-indexes.ts). */
  readonly #droppedIndexes: (DroppedIndex & { readonly projection: string })[] = [];
  /**
   * Projections whose custom handler failed in this run, recorded as sync
   * records it: they take no more batches in this run (their cursor stays
   * where the failure left it), and a later snapshot of the run builds one
   * again.
   */
  readonly #failures = new Map<string, Failure>();
  readonly #droppedTriggers: (DroppedTrigger & { readonly projection: string })[] = [];
  /** ImportOptions.rebuildBelow, until the stream's first snapshot has been read. */
  #below: ReasonCode | undefined;

  constructor(db: Db, options: ImportOptions) {
    this.#db = db;
    this.#options = options;
    this.#below = options.rebuildBelow;
  }

  /** ImportOptions.checkTarget: throws when the target is gone (TARGET_GONE), before anything more is written. */
  #checkTarget(): void {
    this.#options.checkTarget?.(this.#db);
  }

  /** Where each projection stands (its seq and cursor), by name; empty when the target's records do not read (the run reports that). */
  #standing(): Map<string, string> {
    try {
      return new Map(readProjections(this.#db, SCHEMA).map((p) => [p.name, `${p.seq} ${p.cursor ?? ''}`]));
    } catch {
      return new Map();
    }
  }

  async run(stream: ItemStream): Promise<ImportReport> {
    // Where each projection stood before this file, to tell those it moved on (clearRefusals: an import's only).
    const startedAt = this.#options.fedBy?.via === 'import' ? this.#standing() : undefined;
    this.#stream = {
      label: stream.label,
      segment: stream.segment === true,
      ...(stream.lastCursor === undefined ? {} : { lastCursor: stream.lastCursor }),
      ...(stream.markers === undefined ? {} : { markers: stream.markers }),
    };
    const size = this.#options.onProgress === undefined ? 0 : (stream.size?.() ?? 0);
    let bytes = 0;
    const reader = stream.read({
      shapeOf: (t) => this.#shapeOf(t),
      onRead: (b) => (bytes = b),
      heldThrough: (sourceId) => this.#heldThrough(sourceId),
      rowsHeld: (table) => this.#heldRows.has(table),
      target: this.#db,
    });
    const progress = () => this.#options.onProgress?.({ bytes, size, batchesApplied: this.#applied, batchesSkipped: this.#skipped });
    let totals: ReadTotals | undefined;
    const group = new BatchGroup(this.#db, stream.atHand === true || stream.groupDelivered === true, () => this.#checkTarget());
    const committed = () => {
      if (!this.#db.inTransaction) stream.committed?.();
    };
    const next = async (): Promise<IteratorResult<ExportItem, ReadTotals>> => {
      const item = reader.next();
      if (stream.groupDelivered !== true || !this.#db.inTransaction) return item;
      // Already delivered, it resolves within this turn's microtasks; else the group commits before waiting on it.
      const ready = await Promise.race([item, new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined)))]);
      if (ready !== undefined) return ready;
      group.commit();
      committed();
      return item;
    };
    // The last batch's, when it came from an attached segment: its events are read in SQL as they are applied, and as
    // their group commits, so an error SQLite raises then may be the segment's (segment-read.ts attachedUnreadable).
    let unreadable: ((err: unknown) => Error | undefined) | undefined;
    /** The cursor of the last batch read since the last snapshot: the tables the stream carries there. */
    let carrying: string | undefined;
    /** The seq of the snapshot the stream ended inside (nothing of it committed), if it did. */
    let cut: number | undefined;
    try {
      try {
        for (let item = await next(); totals === undefined; item = await next()) {
          if (item.done === true) {
            totals = item.value;
            group.commit();
            committed();
            continue;
          }
          const value = item.value;
          if (value.kind === 'batch') {
            // Before anything of the batch is written (in a group, a target gone rolls back the batches before it too).
            this.#checkTarget();
            await this.#checkDefinitions(this.#compiled(), { at: `${stream.label}:${value.n}`, line: value.line });
            group.open(this.#compiled());
            carrying = value.line.cursor;
            unreadable = value.unreadable;
            await this.#onBatch(
              value.line,
              value.events.map((e) => lineToEvent(e.line)),
              `${stream.label}:${value.n}`,
              value.segment,
            );
            group.added(value.line.count);
            progress();
            committed();
          } else {
            group.commit();
            committed();
            this.#checkTarget();
            unreadable = undefined;
            carrying = undefined; // (a snapshot installs the mirror "*" asks for of every table it holds)
            // A snapshot (its table lines, rows and marker) is one transaction; a file that ends inside one commits none of it.
            totals = await this.#snapshot(value, reader);
            if (totals !== undefined) cut = this.#snapshotSeq;
            if (totals === undefined) {
              progress();
              committed();
            }
          }
        }
      } finally {
        // The batches applied before an error stay applied, as when each had its own transaction (the failed one rolled back to its savepoint).
        try {
          group.commit();
        } finally {
          dropTemps(this.#db);
          // A file's reader stopped early (an error here) closes its file now, not when it is collected. A stream's is
          // told to stop too, without waiting (a read it has pending waits for the broker): the segment message it was in
          // closes its in-memory connection (segment-read.ts) once it gets there.
          if (stream.atHand === true) await reader.return(undefined as unknown as ReadTotals);
          else void reader.return(undefined as unknown as ReadTotals).catch(() => {});
        }
      }
    } catch (err) {
      throw unreadable?.(err) ?? err;
    }
    // Nothing more is written to a target gone meanwhile (a follower stopped while its stream was idle).
    this.#checkTarget();
    // A file cut inside its first snapshot (an export still writing it, or killed there) builds nothing: a target with no
    // projection is no target, and an empty one would read as healthy. Refused as a file with no snapshot is.
    if (cut !== undefined && this.#options.fedBy?.via !== 'subscribe' && readProjections(this.#db, SCHEMA).length === 0)
      throw new InvalidInputError(
        'IMPORT_NO_SNAPSHOT',
        `${stream.label}: the file ends inside its snapshot at seq ${cut} (the ${totals.incompleteTail} lines after its last complete marker were read, not applied): the snapshot is not complete, and the target has no projections to keep, so nothing was committed. Import the whole file once its export has finished writing it (an export killed inside its snapshot writes it again when run again).`,
      );
    // A stream with nothing to apply (an empty file, or one cut short inside its snapshot) still refuses a changed definition.
    if (this.#projections === undefined) await this.#checkGivenDefinitions(stream.label);
    // A run that applied nothing (a file imported again) still says how the projections are fed.
    const ran = (this.#projections ?? []).map((p) => p.name);
    if (this.#options.fedBy !== undefined && ran.length > 0)
      await writeTransaction(this.#db, () => {
        this.#recordFed(ran);
        // An import that succeeded: a file refused before (import-refusal.ts) no longer stands, for those that did not fail now.
        if (this.#options.fedBy?.via === 'import') {
          const now = this.#standing();
          clearRefusals(
            this.#db,
            SCHEMA,
            ran.filter((n) => !this.#failures.has(n)),
            new Set(ran.filter((n) => now.get(n) === undefined || now.get(n) !== startedAt?.get(n))),
          );
        }
      });
    const all = this.#options.mirrorAll;
    if (all !== undefined && !all.stored && ran.length > 0)
      await storeProjectionSet(this.#db, SCHEMA, { mirrorAll: all.origin, sourcePath: all.sourcePath });
    const projections: ImportReport['projections'][number][] = (this.#projections ?? []).map((p) => {
      const r = readProjection(this.#db, SCHEMA, p.name);
      const dropped = this.#droppedIndexes.filter((d) => d.projection === p.name).map(({ name, table, why }) => ({ name, table, why }));
      const error = this.#failures.get(p.name);
      const droppedTriggers = this.#droppedTriggers
        .filter((d) => d.projection === p.name)
        .map(({ name, table, why, sql }) => ({ name, table, why, sql }));
      return {
        name: p.name,
        state: r?.state ?? 'absent',
        ...(r?.reason != null ? { reason: r.reason } : {}),
        seq: r?.seq ?? 0,
        ...(dropped.length === 0 ? {} : { droppedIndexes: dropped }),
        ...(error === undefined ? {} : { error }),
        ...(this.#rebuilt.has(p.name) ? { rebuilt: this.#rebuilt.get(p.name) as ReasonCode } : {}),
        ...(droppedTriggers.length === 0 ? {} : { droppedTriggers }),
        ...(this.#leftAction(p.name, r?.seq ?? 0) ?? {}),
      };
    });
    if (all !== undefined && carrying !== undefined) projections.push(...this.#unbuiltMirrors(all, carrying, stream.label));
    return {
      lines: totals.lines,
      batchesApplied: this.#applied,
      batchesSkipped: this.#skipped,
      incompleteTail: totals.incompleteTail,
      projections,
    };
  }

  /**
   * The projections this run is about, for recording a refusal of its
   * stream (import-refusal.ts): those it compiled, else the definitions it
   * runs; undefined when not even those can be read (then every projection
   * of the target is).
   */
  concerned(): string[] | undefined {
    if (this.#projections !== undefined) return this.#projections.map((p) => p.name);
    try {
      return this.#definitions()?.map((d) => d.name);
    } catch {
      return undefined;
    }
  }

  /**
   * Records the failed attempt of projection `p` of source `sourceId`, in
   * the transaction open on the target (the failed work rolled back): in its
   * row, which a first build that failed gets (building, no cursor), with
   * how it is fed, so that health says how to run it again.
   */
  #recordFailure(p: CompiledProjection, sourceId: string, f: Failure): void {
    recordFailed(this.#db, SCHEMA, { name: p.name, p, sourceId: () => sourceId, sourcePath: null }, f.code, f.message);
    this.#recordFed([p.name]);
    this.#failures.set(p.name, f);
    this.#options.onFailure?.(p.name, f);
  }

  /**
   * The mirrors "*" asks for (ImportOptions.mirrorAll) of tables the stream
   * carries at `cursor` (its last batch's) that the target does not hold,
   * its snapshot having been read before them (a file exported with --since
   * from a cursor of a later export): their events were read and not
   * applied. Each is reported pending, MIRROR_NOT_BUILT, with what builds
   * it, so the target is not narrower than "*" asks without a word. Not for
   * a subscriber, whose publisher publishes a snapshot that holds a table it
   * adds (STREAM_TABLES_ADDED), which subscribe waits for (subscribe-wants.ts).
   */
  #unbuiltMirrors(all: MirrorAll, cursor: string, label: string): ImportReport['projections'][number][] {
    if (this.#options.fedBy?.via === 'subscribe') return [];
    const defined = (this.#projections ?? []).map((p) => ({ name: p.name, source: p.source.table }));
    return streamMirrors(readProjections(this.#db, SCHEMA), all, decodeCursor(cursor).tables, defined).map((d) => ({
      name: d.name,
      state: 'pending',
      reason: 'MIRROR_NOT_BUILT',
      seq: 0,
      action: `table ${d.source} is in the stream ${label} carries, but this target, which mirrors every table its files carry ("*"), has no mirror of it, and the file has no snapshot of it to build one from: its events in the file were not applied. Import a file that starts with a snapshot (sluice export SOURCE --out NEW_FILE writes one), which builds the mirror of ${d.source}`,
    }));
  }

  /** Records how `names` are fed (ImportOptions.fedBy), in the transaction open on the target (fed-by.ts). */
  #recordFed(names: readonly string[]): void {
    if (this.#options.fedBy !== undefined) recordFedBy(this.#db, SCHEMA, names, this.#options.fedBy);
  }

  #target(sourceId: string): ApplyTarget {
    return { db: this.#db, schema: SCHEMA, sourceId, sourcePath: null };
  }

  /** The shape of a table: from this stream's table lines, else the target's projections (a stream exported with --since has none). */
  #shapeOf(table: string): SourceShape | undefined {
    if (this.#stored === undefined) {
      const rows = this.#db.prepare(`SELECT source_shape FROM ${PROJECTIONS_TABLE}`).pluck().all() as string[];
      this.#stored = new Map(rows.map((r) => JSON.parse(r) as SourceShape).map((s) => [s.table, s]));
    }
    const stored = this.#stored;
    const folded = (m: Map<string, SourceShape>) => [...m.values()].find((x) => foldIdent(x.table) === foldIdent(table));
    return this.#shapes.get(table) ?? stored.get(table) ?? folded(this.#shapes) ?? folded(stored);
  }

  /**
   * The seq through which every projection to import holds source
   * `sourceId`'s events: a batch's events at or below it are not needed
   * (positionBatch applies only those after a projection's seq), so the
   * reader need not parse them. 0 when a projection is new, of another
   * source, or anything is not known yet.
   */
  #heldThrough(sourceId: string): number {
    try {
      // The compiled ones once there are (asked before every batch: parsing the stored definitions each time was a tenth of a subscriber's work).
      const names = (this.#projections ?? this.#definitions() ?? []).map((d) => d.name);
      let through = names.length === 0 ? 0 : Number.MAX_SAFE_INTEGER;
      for (const name of names) {
        const rec = readProjection(this.#db, SCHEMA, name);
        through = rec === undefined || rec.sourceId !== sourceId ? 0 : Math.min(through, rec.seq);
        if (through === 0) break;
      }
      return through;
    } catch {
      return 0; // (the error comes again where it did before, with the batch)
    }
  }

  /** The definitions to import: given, else the target's stored ones, else undefined (a mirror of every table in the stream). */
  #definitions(): ProjectionDefinition[] | undefined {
    if (this.#options.projections !== undefined && this.#options.projections.length > 0) {
      const given = this.#options.projections.map((d) => parseDefinition(d));
      if (this.#options.mirrorAll === undefined) return given;
      // With "*", the mirrors it made before run beside them.
      const mirrors = readProjections(this.#db, SCHEMA).filter((r) => isDefaultMirror(r) && !given.some((d) => d.name === r.name));
      return [...given, ...mirrors.map((r) => parseStoredDefinition(r.definition, `stored definition of ${r.name}`))];
    }
    const stored = this.#db.prepare(`SELECT name, definition FROM ${PROJECTIONS_TABLE} ORDER BY name`).all() as {
      name: string;
      definition: string;
    }[];
    if (stored.length === 0) return undefined;
    return stored.map((s) => parseStoredDefinition(s.definition, `stored definition of ${s.name}`));
  }

  /** The definitions of a snapshot's table `table`: those of `defs` that read it, and the mirror "*" adds for it (ImportOptions.mirrorAll). */
  #definitionsOf(table: string, defs: ProjectionDefinition[] | undefined): ProjectionDefinition[] {
    if (defs === undefined) return [defaultMirror(table)];
    const own = defs.filter((x) => foldIdent(x.source) === foldIdent(table));
    const all = this.#options.mirrorAll;
    if (all === undefined) return own;
    return [...own, ...streamMirrors(readProjections(this.#db, SCHEMA), all, [table], defs)];
  }

  #compile(d: ProjectionDefinition): CompiledProjection {
    const shape = this.#shapeOf(d.source);
    if (shape === undefined) {
      if (this.#options.noShape !== undefined)
        throw this.#options.noShape(
          d.name,
          d.source,
          this.#snapshotSeq === undefined ? undefined : { seq: this.#snapshotSeq, tables: [...this.#shapes.keys()] },
        );
      throw new InvalidInputError(
        'IMPORT_NO_SHAPE',
        `Projection ${d.name}: the file has no snapshot of table ${d.source} and the target has no projection of it yet. Export without --since first, then import that file.`,
      );
    }
    if (lacksHandler(d))
      throw new InvalidInputError(
        'BAD_DEFINITION',
        `Projection ${d.name}: pass its definition file with --projection so its handler can run.`,
      );
    const p = compileProjection(d, shape);
    // As sync does: SQLite judges the expressions (over a TEMP table shaped like the source; nothing is written).
    probeExpressions(this.#db, p);
    return p;
  }

  #compiled(): CompiledProjection[] {
    if (this.#projections !== undefined) return this.#projections;
    const out = (this.#definitions() ?? [...this.#shapes.keys()].map(defaultMirror)).map((d) => this.#compile(d));
    checkCollisions(out.map((p) => ({ name: p.name, tables: madeTablesAt(p) })));
    this.#projections = out;
    return out;
  }

  /**
   * Projections whose definition in this run is not the one the target
   * built them with (their fingerprints differ), and that no snapshot of
   * this stream has rebuilt: the change is classified as sync and explain
   * classify it (classifyFromTarget). A Compatible one is stored and the
   * projection goes on from its cursor. Any other needs a rebuild from a
   * snapshot, which the stream does not have here, or is Rejected: refused
   * before the batch (`line`, at `at`) is applied, with nothing written, so
   * that no batch is applied by a definition other than the one the rows
   * were built by. Only a definition given (ImportOptions.projections) is
   * checked: a stored one is the target's own. Projections of another
   * source are left to #onBatch.
   */
  async #checkDefinitions(projections: readonly CompiledProjection[], where: Where): Promise<void> {
    this.#given ??= new Set((this.#options.projections ?? []).map((d) => parseDefinition(d).name));
    for (const compiled of projections) {
      if (this.#settled.has(compiled)) continue;
      const rec = this.#given.has(compiled.name) ? readProjection(this.#db, SCHEMA, compiled.name) : undefined;
      const sourceId = where.line?.sourceId ?? rec?.sourceId;
      if (rec === undefined || rec.cursor === null || rec.sourceId !== sourceId || rec.fingerprint === compiled.fingerprint) {
        this.#settled.add(compiled);
        continue;
      }
      // A batch it holds already (a file older than the target) is not applied to it: its definition is weighed against
      // the table's shape the projection holds, not the file's older one (a `sluice alter` since is no change of definition).
      const p = where.line !== undefined && where.line.seq <= rec.seq ? this.#atHeldShape(compiled.definition, rec) : compiled;
      if (rec.fingerprint === p.fingerprint) continue;
      const target = this.#target(rec.sourceId);
      const c = classifyFromTarget(target, p, rec);
      if (c === 'compatible') {
        await writeTransaction(this.#db, () => storeDefinition(target, p));
        this.#settled.add(p);
        continue;
      }
      if ('refused' in c) throw c.refused.error;
      throw new InvalidInputError('IMPORT_NO_SNAPSHOT', this.#redefinedMessage(p, rec, c.rebuild, where));
    }
  }

  /** The refusal of a changed definition of `p` (stored as `rec`) that needs a rebuild (`decision`), where the stream has no snapshot. */
  #redefinedMessage(p: CompiledProjection, rec: ProjectionRecord, decision: AlterDecision, where: Where): string {
    const changes = decision.changes.filter((c) => c.classification !== 'Compatible').map((c) => c.reason);
    const what = `${[...new Set(changes)].join(', ')}; not proved to stay valid: ${decision.affected.join(', ')}`;
    const subscribed = this.#options.fedBy?.via === 'subscribe';
    const stream = subscribed ? 'stream' : 'file';
    const older = where.older;
    // A subscriber starts from the stream's last snapshot of the table when it has one whole (subscribe-wants.ts redefined).
    const none =
      older !== undefined
        ? `the ${stream} cannot rebuild it to where it stands: its snapshot of table ${older.table} is at seq ${older.seq} and it reaches seq ${older.reach}, before the target's seq ${rec.seq} (it is older than the target)`
        : subscribed
          ? `the stream holds no complete snapshot of table ${p.source.table} to rebuild it from`
          : where.line === undefined
            ? `the file holds no snapshot (nor any batch)`
            : `the file has no snapshot before this batch (seq ${where.line.fromSeq}-${where.line.seq})`;
    const repair = subscribed
      ? `Let the source's publisher publish a new snapshot (sluice publish, or a sluice run that publishes the source, publishes one when the stream's retention dropped the last) and subscribe again: it rebuilds ${p.name} from it with this definition; or subscribe with the definition it was built with (the target's own, used when no --projection is given)`
      : `Import a file that starts with a snapshot (sluice export SOURCE --out NEW_FILE writes one) with this definition, which rebuilds ${p.name}; or import this file with the definition it was built with (the target's own, used when no --projection is given)`;
    return `${where.at}: projection ${p.name}: the definition given is not the one it was built with (${what}), so it must be rebuilt from a snapshot (${decision.classification}, as sluice explain classifies it), and ${none}. ${p.name} was not changed: it keeps its rows, its cursor at seq ${rec.seq} and the definition it was built with. ${repair}.`;
  }

  /** #checkDefinitions for the given definitions the target holds, when the stream held nothing to apply (no batch, no snapshot). */
  async #checkGivenDefinitions(label: string): Promise<void> {
    const given = (this.#options.projections ?? []).map((d) => parseDefinition(d));
    const held = given.filter((d) => readProjection(this.#db, SCHEMA, d.name) !== undefined);
    if (held.length > 0)
      await this.#checkDefinitions(
        held.map((d) => this.#compile(d)),
        { at: label },
      );
  }

  /** Reads a snapshot from its first item to its marker and installs it; returns the totals if the stream ends inside it (nothing committed). */
  async #snapshot(first: ExportItem, reader: Reader): Promise<ReadTotals | undefined> {
    const defs = this.#definitions();
    const snap: Installing = new Map();
    this.#projections = undefined;
    this.#rebuilding = new Map();
    const r = await writeTransaction(
      this.#db,
      async () => {
        for (let item: ExportItem = first; ;) {
          if (item.kind === 'table') await this.#onTable(item.line, item.n, defs, snap);
          else if (item.kind === 'row') await this.#onRow(snap, item.line.table, item.line.row, item.n);
          else if (item.kind === 'snapshot') {
            const done = await this.#onSnapshot(item.line, snap);
            this.#checkTarget(); // a target gone while its rows came is not committed to
            return { done };
          }
          const next = await reader.next();
          if (next.done === true) return { ended: next.value };
          item = next.value;
        }
      },
      { mode: 'immediate', keep: (x) => 'done' in x, onRollback: () => dropTemps(this.#db) },
    );
    this.#stored = undefined;
    if (!('ended' in r)) {
      for (const [name, reason] of this.#rebuilding) this.#rebuilt.set(name, reason);
      for (const u of r.done) await recordSuspension(u.target, u.p, u.s);
      return undefined;
    }
    this.#projections = undefined; // (compiled inside the transaction that rolled back)
    return r.ended;
  }

  /**
   * A table line: the projections of its table start installing, unless they
   * are at or past this snapshot already and the stream continues their
   * cursors. The first of a snapshot refuses a stream of another source than
   * the target's projections (SOURCE_CHANGED), as its first batch would.
   */
  async #onTable(line: TableLine, n: number, defs: ProjectionDefinition[] | undefined, snap: Installing): Promise<void> {
    if (snap.size === 0) {
      this.#heldRows.clear();
      if (this.#options.replaceSource !== true)
        for (const d of defs ?? []) {
          const rec = readProjection(this.#db, SCHEMA, d.name);
          if (rec !== undefined) checkSource(d.name, rec.sourceId, line.sourceId, this.#at(n));
        }
    }
    this.#snapshotSeq = line.seq;
    this.#shapes.set(line.table, {
      table: line.table,
      columns: line.columns,
      keyColumns: line.keyColumns,
      withoutRowid: line.withoutRowid,
      rowidAlias: line.rowidAlias,
    });
    const installs: SnapshotInstall[] = [];
    const prior = new Map<string, Prior>();
    const held: (Prior & { readonly name: string; readonly left?: true })[] = [];
    for (const d of this.#definitionsOf(line.table, defs)) {
      const p = this.#compile(d);
      const rec = readProjection(this.#db, SCHEMA, p.name);
      // Of another source, and asked to replace it: built again from this snapshot, whatever its seq.
      if (rec !== undefined && !(this.#options.replaceSource === true && rec.sourceId !== line.sourceId)) {
        checkSource(p.name, rec.sourceId, line.sourceId, this.#at(n));
        // A stream of a history the projection was rebuilt away from changes nothing for it, whatever its seqs.
        if (rec.cursor !== null && this.#leftBy(rec, line.table) !== null) {
          held.push({ name: p.name, cursor: rec.cursor, seq: rec.seq, left: true });
          continue;
        }
        // A table line carries its snapshot's seq (one read transaction). Held already, unless the stream goes on
        // from another history than the target's (its last cursor, as the snapshot's own comes after its rows).
        // One never built (its first build failed) is built.
        // Past it, where the stream's history since does not continue them (ImportOptions.rebuildBelow), it is installed.
        const behind = rec.cursor !== null && rec.seq >= line.seq;
        const reason =
          behind && rec.fingerprint === p.fingerprint
            ? ((rec.seq > line.seq ? this.#below : undefined) ?? this.#pastSnapshot(rec, line) ?? this.#notContinued(rec, line.table))
            : behind
              ? await this.#olderFile(d, rec, line, n)
              : undefined;
        if (reason === null) {
          held.push({ name: p.name, cursor: rec.cursor, seq: rec.seq });
          continue;
        }
        prior.set(p.name, { cursor: rec.cursor, seq: rec.seq, ...(reason === undefined ? {} : { reason }) });
      }
      installs.push(SnapshotInstall.begin(this.#target(line.sourceId), p, rec));
    }
    snap.set(line.table, { installs, chunk: [], lines: [], prior, held });
    if (installs.length === 0) this.#heldRows.add(line.table);
    else this.#heldRows.delete(line.table);
  }

  /**
   * For a projection (`rec`, defined by `d`) at or past a snapshot of the
   * stream, whose definition compiled against the snapshot's table shape is
   * not the one it was built with: null when the file is older than the
   * target (the furthest cursor it reaches, ItemStream.lastCursor, is below
   * the projection's seq) and continues its history, so it cannot bring the
   * projection forward and changes nothing for it; undefined otherwise (the
   * snapshot rebuilds it by this definition, and the file's batches take it
   * on to the file's end). The shape alone differing (a `sluice alter` the
   * target was synced past, after the file was written) is no change of
   * definition: held. A definition given that differs from the one the
   * projection was built with, against the target's shape, is weighed as
   * before a batch (#checkDefinitions): a Compatible one is stored, any other
   * refused (IMPORT_NO_SNAPSHOT), nothing of the snapshot committed. Not for
   * a subscriber, whose stream goes on past the snapshot it started from.
   */
  async #olderFile(d: ProjectionDefinition, rec: ProjectionRecord, line: TableLine, n: number): Promise<null | undefined> {
    if (this.#options.fedBy?.via === 'subscribe' || (rec.seq > line.seq && this.#below !== undefined)) return undefined;
    const reach = this.#reach();
    // Older: its last marker before the target's seq, or at it at an earlier generation (cursorContinues: behind).
    if (reach === undefined || !this.#behind(rec) || this.#notContinued(rec, line.table) !== null) return undefined;
    await this.#checkDefinitions([this.#atHeldShape(d, rec)], { at: this.#at(n), older: { table: line.table, seq: line.seq, reach } });
    return null;
  }

  /** `d` compiled against the table's shape projection `rec` holds (its stored source shape), else against the stream's (#compile). */
  #atHeldShape(d: ProjectionDefinition, rec: ProjectionRecord): CompiledProjection {
    try {
      return compileProjection(d, JSON.parse(rec.sourceShape) as SourceShape);
    } catch {
      return this.#compile(d); // (it does not compile against that shape: not the definition the projection holds)
    }
  }

  /**
   * Whether the furthest cursor the stream is known to reach (ItemStream.lastCursor) is older than projection `rec`'s:
   * before its seq, or at it at an earlier generation (a file written before the table was re-armed, `enable --exclude`).
   */
  #behind(rec: ProjectionRecord): boolean {
    const later = this.#laterCursor();
    if (later === null || rec.cursor === null) return false;
    if (later.seq < rec.seq) return true;
    return later.sourceId === rec.sourceId && cursorContinues(rec.cursor, later).status === 'behind';
  }

  /**
   * For projection `rec`, of `table`, past a snapshot of the stream (`line`), where the stream reaches past its seq and
   * its markers are known (ItemStream.markers): null when a batch after the snapshot ends exactly at its seq and continues
   * its cursor (the snapshot is held); why not when the one that ends there is of another history (the snapshot is
   * installed over it). Undefined when this does not decide: no batch ends at its seq (one spans it), a subscriber's
   * stream, a file older than the projection or reaching exactly its seq (#notContinued).
   */
  #pastSnapshot(rec: ProjectionRecord, line: TableLine): ReasonCode | null | undefined {
    const markers = this.#stream.markers?.();
    const later = this.#laterCursor();
    if (this.#options.fedBy?.via === 'subscribe' || markers === undefined || rec.cursor === null) return undefined;
    if (rec.seq <= line.seq || later === null || later.sourceId !== rec.sourceId || later.seq <= rec.seq) return undefined;
    // What the stream's last cursor tells on its own (another file, a bump, a re-arm) is the reason, where it tells one.
    const told = this.#notContinued(rec, line.table);
    if (told !== null) return told;
    const token = batchReaching(markers, line.seq, rec.seq);
    let at: Cursor | undefined;
    try {
      at = token === undefined ? undefined : decodeCursor(token);
    } catch {
      at = undefined; // (the reader refuses it when it gets there)
    }
    // No batch ends there: one spans it. Its events up to the projection's seq carry no cursor to compare, so
    // nothing shows them another history's (a source restored from an older copy and written past the seq reads
    // so too, and is not caught here: verify finds it); the rest of that batch is applied, as for any target
    // holding part of a batch (two exports of one source cut in other places, a sync between two imports).
    if (at === undefined || at.seq !== rec.seq) return undefined;
    const v = cursorContinues(rec.cursor, at, { tables: [line.table] });
    // At its seq, of an earlier generation: the history after the snapshot is an older one than the projection's.
    if (v.status === 'behind') return 'HISTORY_DIVERGED';
    return broken(v)?.reason ?? null;
  }

  /**
   * The cursor of a history projection `rec` (of `table`) was rebuilt away from (readLeftCursors) that the stream
   * continues: one of its markers is at that cursor's seq and continues it (the same event there), and none is at the
   * projection's seq continuing its cursor; null when none.
   */
  #leftBy(rec: ProjectionRecord, table: string): string | null {
    const known = this.#left.get(rec.name);
    if (known !== undefined) return known;
    let found: string | null = null;
    // (A subscriber's stream starts from its publisher's snapshot: broker/subscribe-plan.ts judges it.)
    const left = this.#options.fedBy?.via === 'subscribe' ? [] : readLeftCursors(this.#db, SCHEMA, rec.name);
    if (left.length > 0) {
      const markers = this.#stream.markers?.() ?? [];
      const last = this.#stream.lastCursor?.();
      const tokens = markers.length > 0 ? markers.map((m) => m.cursor) : last === undefined ? [] : [last];
      const cursors = tokens.flatMap((t) => {
        try {
          return [decodeCursor(t)];
        } catch {
          return [];
        }
      });
      // A stream with a marker at the projection's seq that continues its cursor goes on from the history it holds.
      const continues = cursors.some(
        (m) => m.seq === rec.seq && rec.cursor !== null && cursorContinues(rec.cursor, m, { tables: [table] }).status === 'continues',
      );
      found = continues
        ? null
        : (left.find((l) => {
            let c: Cursor;
            try {
              c = decodeCursor(l);
            } catch {
              return false;
            }
            return cursors.some(
              (m) => m.sourceId === c.sourceId && m.seq === c.seq && cursorContinues(c, m, { tables: [table] }).status === 'continues',
            );
          }) ?? null);
    }
    this.#left.set(rec.name, found);
    return found;
  }

  /** What the report says of projection `name` (at `seq`) when the stream holds a history it was rebuilt away from. */
  #leftAction(name: string, seq: number): { readonly action: string } | undefined {
    const left = this.#left.get(name);
    if (left === undefined || left === null) return undefined;
    let at: number | string = '?';
    try {
      at = decodeCursor(left).seq;
    } catch {
      // (a stored cursor that does not decode was never found)
    }
    return {
      action: `nothing to do: ${this.#stream.label} holds a history of the source that ${name} was rebuilt away from (at seq ${at}: its source was restored from an older copy and written again), so nothing of it was applied; ${name} keeps the history it holds, at seq ${seq}. Import the source's newer exports`,
    };
  }

  /** The seq of the furthest cursor the stream is known to reach (ItemStream.lastCursor), undefined when not known. */
  #reach(): number | undefined {
    return this.#laterCursor()?.seq;
  }

  /** ItemStream.lastCursor, decoded once (null: none, or not a cursor). */
  #laterCursor(): Cursor | null {
    if (this.#later === undefined) {
      try {
        const token = this.#stream.lastCursor?.();
        this.#later = token === undefined ? null : decodeCursor(token);
      } catch {
        this.#later = null; // (a hint: the reader checks every cursor it applies)
      }
    }
    return this.#later;
  }

  /** Where item `n` of the stream is, for errors: `<file>:<line>`, or a segment alone (its items are not lines). */
  #at(n: number): string {
    return this.#stream.segment ? this.#stream.label : `${this.#stream.label}:${n}`;
  }

  /**
   * Why the stream does not continue the cursor of `rec`, a projection of
   * `table` at or past a snapshot of the stream, by the furthest cursor the
   * stream is known to reach (ItemStream.lastCursor): a reason (the
   * snapshot is installed over it), or null when it does, or nothing tells.
   */
  #notContinued(rec: ProjectionRecord, table: string): ReasonCode | null {
    const later = this.#laterCursor();
    // (One of another source is no hint: the reader refuses its lines when it gets there.)
    if (later === null || later.sourceId !== rec.sourceId || rec.cursor === null) return null;
    return broken(cursorContinues(rec.cursor, later, { tables: [table] }))?.reason ?? null;
  }

  /** A row line's row, decoded only when some projection installs it (a snapshot a target already has is read, not decoded). */
  async #onRow(snap: Installing, table: string, row: RowLine['row'], n: number): Promise<void> {
    const t = snap.get(table);
    if (t === undefined || t.installs.length === 0) return;
    t.chunk.push(lineToRow(row));
    t.lines.push(n);
    if (t.chunk.length >= SNAPSHOT_CHUNK) await this.#flush(table, t);
  }

  /** The rows read so far, added to each projection being installed (so a snapshot never sits in memory whole). */
  async #flush(table: string, t: InstallingTable): Promise<void> {
    if (t.chunk.length === 0) return;
    const chunk = t.chunk;
    const lines = t.lines;
    const rows = decodedRows(this.#db, (this.#shapes.get(table) as SourceShape).columns, chunk);
    t.chunk = [];
    t.lines = [];
    for (const install of t.installs) {
      try {
        await install.add(rows);
      } catch (err) {
        throw this.#duplicateKey(err, install, table, chunk, lines) ?? err;
      }
    }
  }

  /**
   * What a snapshot's rows that broke the primary key of the table they are
   * built into are, when they did (SQLITE_CONSTRAINT_PRIMARYKEY on the
   * install's own table, whose key is a copy of the source table's): two
   * rows with one key, which no source table holds, so the file was edited.
   * A refusal naming the file and table, and (a JSONL file's) the lines: the
   * two, when both are among the rows just added, else theirs. Undefined for
   * any other error.
   */
  #duplicateKey(
    err: unknown,
    install: SnapshotInstall,
    table: string,
    rows: readonly Row[],
    lines: readonly number[],
  ): InvalidInputError | undefined {
    if (errorCode(err) !== 'SQLITE_CONSTRAINT_PRIMARYKEY' || !(err instanceof Error) || !err.message.includes(install.buildTable))
      return undefined;
    const key = install.p.source.keyColumns;
    const what = `table ${table}'s key (${key.join(', ')})`;
    const end =
      'A snapshot holds one row per key, so the file was edited or is not one sluice wrote; nothing of the snapshot was committed. Export again, or import the file sluice wrote.';
    const { label, segment } = this.#stream;
    if (segment)
      return new InvalidInputError(
        'IMPORT_DUPLICATE_KEY',
        `Segment ${label}: its snapshot holds two rows with one value of ${what}. ${end}`,
      );
    const seen = new Map<string, number>();
    for (const [i, row] of rows.entries()) {
      const k = keyText(key.map((c) => row[c] ?? null));
      const first = seen.get(k);
      if (first !== undefined)
        return new InvalidInputError(
          'IMPORT_DUPLICATE_KEY',
          `${label}:${lines[i]}: this row line has the value of ${what} the row line at line ${first} has. ${end}`,
        );
      seen.set(k, lines[i] as number);
    }
    return new InvalidInputError(
      'IMPORT_DUPLICATE_KEY',
      `${label}:${lines[0]}-${lines.at(-1)}: a row line among these has the value of ${what} an earlier row line of its snapshot has. ${end}`,
    );
  }

  /**
   * The snapshot's marker, checked by the reader: each projection swaps in
   * with the snapshot's cursor. Returns the projections of its source behind
   * it whose table it does not carry, to suspend once it is committed
   * (untracked-tables.ts).
   */
  async #onSnapshot(line: SnapshotLine, snap: Installing): Promise<Untracked[]> {
    const cursor = decodeCursor(line.cursor);
    for (const [table, t] of snap) {
      if (!line.tables.includes(table)) continue;
      // One held at this very seq whose cursor this one does not continue, though the stream's last one did (or none
      // was known): its rows were not read, so it cannot be built here; nothing of the snapshot is committed.
      for (const h of t.held) {
        if (h.left === true) continue;
        const why = h.seq === line.seq && h.cursor !== null ? broken(cursorContinues(h.cursor, cursor, { tables: [table] })) : undefined;
        if (why !== undefined)
          throw new FailClosedError(
            why.reason,
            `${this.#stream.label} (its snapshot at seq ${line.seq}): the snapshot does not continue projection ${h.name} in the target, at the same seq: ${why.message} Its rows were not read for it (what the stream reaches was not known before them, or continued the target), so nothing of the snapshot was committed. ${stoppedFix(this.#options.fedBy?.via === 'subscribe')}.`,
          );
      }
      await this.#flush(table, t);
      const built: string[] = [];
      for (const install of t.installs) {
        const was = t.prior.get(install.p.name);
        const why =
          was?.reason ?? (was?.cursor == null ? undefined : broken(cursorContinues(was.cursor, cursor, { tables: [table] }))?.reason);
        let droppedIndexes: readonly DroppedIndex[];
        let droppedTriggers: readonly DroppedTrigger[];
        try {
          // In a savepoint: a custom handler's init that fails takes only its own build back.
          ({ droppedIndexes, droppedTriggers } = await writeTransaction(this.#db, async () => {
            const left = readLeftCursors(this.#db, SCHEMA, install.p.name);
            const r = await install.finish(line.cursor, line.seq);
            // Rebuilt because its source went back to another history: the one it held is left (a file of it changes nothing).
            // (Only where a cursor at the same seq showed another history: a seq alone tells none.)
            if (was?.cursor != null && why === 'HISTORY_DIVERGED' && this.#options.fedBy?.via !== 'subscribe') left.push(was.cursor);
            for (const c of left) recordLeftCursor(this.#db, SCHEMA, install.p.name, c);
            clearUnguarded(this.#db, SCHEMA, install.p.name); // made anew from the snapshot: an unguarded table's mark has done its work
            ensureGuards(this.#db, SCHEMA, install.p.name); // a protected target's guards, on the tables made anew
            return r;
          }));
        } catch (err) {
          const failure = handlerFailure(err);
          if (failure === undefined) throw err;
          install.abort();
          this.#recordFailure(install.p, line.sourceId, failure);
          continue;
        }
        if (why !== undefined) this.#rebuilding.set(install.p.name, why);
        this.#failures.delete(install.p.name);
        built.push(install.p.name);
        for (const d of droppedIndexes) this.#droppedIndexes.push({ projection: install.p.name, ...d });
        for (const d of droppedTriggers) this.#droppedTriggers.push({ projection: install.p.name, ...d });
      }
      this.#recordFed(built);
    }
    this.#below = undefined;
    this.#stored = undefined;
    this.#projections = undefined;
    const carried = carriedTables(line.cursor);
    const untracked: Untracked[] = [];
    // Every projection has its shape now, and none collides.
    for (const p of this.#compiled()) {
      if (carries(carried, p)) continue;
      const rec = readProjection(this.#db, SCHEMA, p.name);
      if (rec === undefined || rec.sourceId !== line.sourceId || rec.state === 'suspended' || rec.seq >= line.seq) continue;
      const at = `${this.#stream.label} (its snapshot at seq ${line.seq})`;
      untracked.push({ target: this.#target(line.sourceId), p, s: untrackedSuspension(p, rec, at, line.seq, carried) });
    }
    return untracked;
  }

  async #onBatch(
    line: BatchLine,
    events: ReturnType<typeof lineToEvent>[],
    at: string,
    segment?: (table: string, columns: readonly string[]) => ChangeBatch,
  ): Promise<void> {
    const db = this.#db;
    const projections = this.#compiled();
    if (projections.length === 0) {
      throw new InvalidInputError(
        'IMPORT_NO_SNAPSHOT',
        `${at}: the target has no projections and the file has no snapshot before this batch (seq ${line.fromSeq}-${line.seq}): there is nothing to apply its events to. Import a file that starts with a snapshot (sluice export without --since), or pass --projection with a target made from one.`,
      );
    }
    const target = this.#target(line.sourceId);
    const carried = carriedTables(line.cursor);
    let untracked: Untracked[] = [];
    let failed: { p: CompiledProjection; f: Failure }[] = [];
    const r = await writeTransaction(
      db,
      async (): Promise<{ applied: boolean; suspended?: { p: CompiledProjection; s: Suspension } }> => {
        let applied = false;
        untracked = [];
        failed = [];
        for (const p of projections) {
          // Its handler failed in this run: its cursor stays where the failure left it.
          if (this.#failures.has(p.name)) continue;
          const rec = readProjection(db, SCHEMA, p.name);
          // (One whose first build failed has a row, and no rows yet.)
          if (rec === undefined || (rec.cursor === null && rec.state !== 'suspended')) {
            throw new InvalidInputError(
              'IMPORT_NO_SNAPSHOT',
              `Projection ${p.name} has no rows yet and this file has no snapshot before seq ${line.fromSeq}. Import a file that starts with a snapshot (sluice export without --since).`,
            );
          }
          checkSource(p.name, rec.sourceId, line.sourceId, at);
          // A stream of a history it was rebuilt away from: nothing of it is applied to it (#leftBy).
          if (rec.cursor !== null && this.#leftBy(rec, p.source.table) !== null) continue;
          // Its table is not in the stream (capture taken off it): suspended, and the others go on, as in sync;
          // not for a batch it already holds (a file imported again changes nothing).
          if (!carries(carried, p)) {
            if (rec.state !== 'suspended' && rec.seq < line.seq)
              untracked.push({ target, p, s: untrackedSuspension(p, rec, at, line.fromSeq, carried) });
            continue;
          }
          // A batch that reaches the target's seq must go on from the history the target holds, as sync's cursor
          // check asks of the source; the file has no snapshot the target could be rebuilt from here.
          if (rec.state !== 'suspended' && rec.cursor !== null && line.fromSeq <= rec.seq && rec.seq <= line.seq) {
            const why = broken(cursorContinues(rec.cursor, decodeCursor(line.cursor), { tables: [p.source.table] }));
            if (why !== undefined)
              throw new FailClosedError(
                why.reason,
                `${at}: this batch (seq ${line.fromSeq}-${line.seq}) does not continue projection ${p.name} in the target, at seq ${rec.seq}, so nothing of it was applied: ${why.message} ${stoppedFix(this.#options.fedBy?.via === 'subscribe')}.`,
                { projection: p.name, rebuild: why.reason },
              );
          }
          // A subscriber's batch that spans the target's seq would be applied past it, its events up to that seq taken to
          // be the ones the target holds; it does not carry what proves it (the journal's event there, which the cursor
          // anchors), so a source restored from an older copy and written again past that seq reads the same: not applied
          // (the subscriber rebuilds from the stream's snapshot: subscribe-plan.ts). A file's batch is, in a file without a
          // snapshot (--since) only: one with a snapshot rebuilt such a projection from it (#pastSnapshot, docs/jsonl.md).
          if (
            this.#options.fedBy?.via === 'subscribe' &&
            rec.state !== 'suspended' &&
            rec.cursor !== null &&
            line.fromSeq < rec.seq &&
            rec.seq < line.seq
          )
            throw new FailClosedError(
              'HISTORY_DIVERGED',
              `${at}: this batch (seq ${line.fromSeq}-${line.seq}) spans projection ${p.name}'s seq ${rec.seq} in the target, so nothing of it was applied: only its events past seq ${rec.seq} would be, and nothing in it shows that its events up to there are the history the target holds (a source restored from an older copy and written again after the target got to seq ${rec.seq} publishes such a batch). ${stoppedFix(this.#options.fedBy?.via === 'subscribe')}.`,
              { projection: p.name, rebuild: 'HISTORY_DIVERGED' },
            );
          const path = () =>
            runBatchPath(target, p, rec, rec.seq, {
              batch: () => {
                const columns = p.source.columns.map((c) => c.name);
                // A segment's batch is read where it lies, in SQL (segment-batch.ts).
                if (segment !== undefined) return segment(p.source.table, columns);
                const mine = events.filter((e) => e.table === p.source.table);
                return decodedBatch(db, p.source.table, columns, mine, line.fromSeq, line.seq);
              },
              explicit: false,
              what: `${at}`,
              // A file's gap is repaired by a file, not by a sync from the stored cursor.
              ...(this.#options.gapFix !== undefined
                ? { gapFix: this.#options.gapFix(p.name) }
                : this.#options.fedBy?.via === 'import'
                  ? { gapFix: fileGapFix(p.name) }
                  : {}),
              end: 'batch',
              cursor: () => line.cursor,
            });
          let out: Awaited<ReturnType<typeof path>>;
          if (p.kind !== 'custom') out = await path();
          else
            try {
              // In a savepoint: a handler that fails takes only its own projection's part of the batch back.
              out = await writeTransaction(db, path);
            } catch (err) {
              const f = handlerFailure(err);
              if (f === undefined) throw err;
              failed.push({ p, f });
              continue;
            }
          // A suspension that stands, or a batch already applied: nothing to do for this projection.
          if (out.kind === 'held' || out.kind === 'none') continue;
          if (out.kind === 'suspended') return { applied, suspended: { p, s: out } };
          this.#recordFed([p.name]);
          applied = true;
        }
        return { applied };
      },
      { mode: 'immediate', keep: (x) => x.suspended === undefined, onRollback: () => dropTemps(db) },
    );
    for (const u of untracked) await recordSuspension(u.target, u.p, u.s);
    // Recorded once the batch's transaction has ended (it may have rolled back for another projection's suspension).
    for (const { p, f } of failed) await writeTransaction(db, () => this.#recordFailure(p, line.sourceId, f));
    if (r.suspended !== undefined) {
      const { p, s } = r.suspended;
      await recordSuspension(target, p, s);
      throw new FailClosedError(s.reason, suspendedMessage(p, s, line, this.#options.fedBy?.via === 'subscribe'));
    }
    if (r.applied) this.#applied++;
    else this.#skipped++;
  }
}

/**
 * Consecutive batches of a stream at hand (or already delivered: ItemStream.groupDelivered) in one target transaction, each
 * in its own savepoint (writeTransaction nests), up to the smallest default
 * batch of the projections' kinds: sync applies the same events in batches
 * of that size, and a commit per batch line of the file (1,000 events)
 * cost import a WAL write and a sync each (bench/import.ts). A batch that
 * fails or suspends rolls back to its savepoint only; the ones before it
 * commit. A live stream commits each batch by itself, or, grouping what is
 * delivered, as soon as the next batch is not already there.
 */
class BatchGroup {
  readonly #db: Db;
  readonly #enabled: boolean;
  /** ImportOptions.checkTarget: a group whose target is gone is rolled back, not committed. */
  readonly #check: () => void;
  #events = 0;
  #limit = 0;

  constructor(db: Db, enabled: boolean, check: () => void) {
    this.#db = db;
    this.#enabled = enabled;
    this.#check = check;
  }

  open(projections: readonly CompiledProjection[]): void {
    if (!this.#enabled || this.#db.inTransaction) return;
    this.#limit = Math.min(...projections.map((p) => kindOf(p).defaultBatch));
    beginHeld(this.#db, 'immediate');
    this.#events = 0;
  }

  added(events: number): void {
    this.#events += events;
    if (this.#events >= this.#limit) this.commit();
  }

  commit(): void {
    if (!this.#enabled || !this.#db.inTransaction) return;
    try {
      this.#check();
    } catch (err) {
      rollbackOpen(this.#db);
      throw err;
    }
    commitHeld(this.#db);
  }
}

/** Why the batch ending at `line` suspended projection `p`, and what to do (`subscribed`: the batches come from a stream, not a file). */
function suspendedMessage(p: CompiledProjection, s: Suspension, line: BatchLine, subscribed: boolean): string {
  const seq = line.seq;
  // The source captures the table in keys mode (its events carry no images), which a file cannot tell before its
  // events: nothing in the target is wrong, and only the source's capture mode, then a snapshot taken after it, helps.
  if (s.reason === 'NEEDS_IMAGES_MODE') {
    const table = p.source.table;
    const then = subscribed
      ? `its publisher then publishes a new snapshot (the change of mode ends the stream's position), and sluice subscribe rebuilds ${p.name} from it`
      : `then export a new file (sluice export SOURCE --out NEW_FILE starts with a snapshot) and import it, which rebuilds ${p.name}`;
    return `Projection ${p.name} (${p.kind}) needs each change's row images, but table ${table} is captured in keys mode on the source, so the batch ending at seq ${seq} holds its events without them: it was not applied, and ${p.name} is suspended with the rows it had. Nothing in the target needs repair; fix the source: capture ${table} in images mode (${shellCommand('enable', { source: 'SOURCE', table })} --mode images, SOURCE: the database of source ${line.sourceId}); ${then}.`;
  }
  if (s.reason === 'TARGET_CONSTRAINT')
    return `Projection ${p.name} was suspended while importing the batch ending at seq ${seq}: ${JSON.stringify(s.detail)}. Drop the index, then import again.`;
  // A user's trigger that writes another projection's table (batch-path.ts): nothing of the batch was written.
  if (s.reason === 'USER_TRIGGER_WRITES_PROJECTION')
    return `Projection ${p.name} was suspended before the batch ending at seq ${seq}, which is not applied: ${String(s.detail.message)}.`;
  // A table made again by hand without its key (batch-path.ts): nothing of the batch was written.
  if (s.reason === 'TARGET_TABLE_CHANGED')
    return `Projection ${p.name} was suspended before the batch ending at seq ${seq}, which is not applied: ${String(s.detail.message)}. ${snapshotFix(subscribed)}, or run sluice reinit SOURCE TARGET ${p.name} where the source is.`;
  return `Projection ${p.name} diverged while importing the batch ending at seq ${seq}: ${JSON.stringify(s.detail)}. It is suspended; repair or rebuild the target.`;
}

/**
 * What to do after a stop fail-closed (a batch or snapshot that does not
 * continue the target's history): for a file, rebuild from a new one; for a
 * stream, subscribe again, which rebuilds the target from the stream's
 * snapshot that does not continue it (subscribe-plan.ts: a publisher
 * publishes one when its source was restored, re-armed or bumped), not a
 * new target.
 */
function stoppedFix(subscribed: boolean): string {
  return subscribed
    ? "Run sluice subscribe again: it rebuilds the target from the stream's snapshot that does not continue it (the source's publisher publishes one when the source was restored from an older copy, re-armed or bumped)"
    : snapshotFix(false);
}

/** How a projection is rebuilt from a snapshot when the batches at hand cannot do it (`subscribed`: they come from a stream, not a file). */
function snapshotFix(subscribed: boolean): string {
  const snapshot = subscribed
    ? "subscribe into a new target (it is built from the stream's snapshot)"
    : 'import a new export file (sluice export SOURCE --out NEW_FILE starts with one)';
  return `Rebuild it from a snapshot: ${snapshot}`;
}

/** The reason and message of a cursor the stream does not continue (undefined: it does, or it is behind the target). */
function broken(c: Continuation): { readonly reason: ReasonCode; readonly message: string } | undefined {
  if (c.status !== 'rebuild' && c.status !== 'error') return undefined;
  // The cursor check's own advice (rebuild from a snapshot) is what the caller says, for a file or a stream.
  return { reason: c.reason, message: c.message.replace(/ Rebuild (it )?from a snapshot\.$/, '') };
}

function checkSource(name: string, stored: string, file: string, at: string): void {
  if (stored !== file)
    throw new FailClosedError(
      'SOURCE_CHANGED',
      `Projection ${name} in the target follows source ${stored}, but ${at} is from ${file}. Import into a new target, or drop the projection's tables first.`,
    );
}

/** BATCH_GAP's repair for an imported projection: the export file holding the missing events first, or a file that starts with a snapshot. */
function fileGapFix(name: string): string {
  return `Nothing of the batch was applied. Import the export file that holds them first (an earlier file of the same export, the one this file's export went on from), then this one again; or rebuild ${name} from a snapshot: import a new export file (sluice export SOURCE --out NEW_FILE starts with one).`;
}
