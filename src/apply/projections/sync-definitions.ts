import type { Db } from '../../sqlite/index.ts';
import { InvalidInputError, SluiceError } from '../../errors.ts';
import { foldIdent, shellCommand } from '../../sqlite/index.ts';
import { readSourceView } from '../../feed/index.ts';
import { hasCapture, readState, readTables } from '../../capture/index.ts';
import {
  madeTables,
  madeTablesAt,
  type CompiledProjection,
  defaultProjectionName,
  checkCollisions,
  compileAgainstSource,
  parseDefinition,
  parseStoredDefinition,
  withStoredHandler,
  type ProjectionDefinition,
  type ProjectionDefinitionInput,
} from '../../projection/index.ts';
import { TARGET_SCHEMA, readProjections, type ProjectionRecord } from '../target/index.ts';
import { brokenDefinition, compileOrBroken, isBroken, type BrokenDefinition } from './broken-definition.ts';
import { nothingToMirror, type NothingToMirrorSay } from './nothing-to-mirror.ts';
import { compileMirror } from './unbuilt-mirrors.ts';
import {
  isDefaultMirror,
  MIRROR_ALL,
  mirrorsToAdd,
  nameHolders,
  type CapturedTableMode,
  type MirrorAll,
  type ProjectionSet,
  type SetChange,
  type Unmirrored,
} from './projection-set.ts';
import { holdsOnlyOthers, noProjectionsOfSource, setOfSource } from './source-projections.ts';

/*
 * Which projections a Syncer runs (and explain explains), compiled against
 * the source as it is now, and which of them a reinit names.
 *
 * - Given definitions (--projection) run, and are added to the target's set.
 *   One that does not compile is the caller's error (exit 1, nothing
 *   written), unless the target stores it as it is: it compiled before, so
 *   the source changed (reference 003), and it is suspended with its reason
 *   while the others run. A new one over a table the source does not capture
 *   is refused the same way as an unknown column.
 * - Without any, the target's set runs, as far as it is this source's
 *   (source-projections.ts: a projection or a "*" of another source file,
 *   there now or not, is left as it is): its stored definitions (one that
 *   no longer validates or compiles is suspended), and "*"
 *   (projection-set.ts), which adds the mirror of every captured table that
 *   has none yet. A new target gets "*".
 * - `--projection '*'` gives "*" beside definitions.
 */

/** A definition to sync, or "*" (a mirror of every captured images-mode table). */
export type DefinitionInput = ProjectionDefinitionInput | typeof MIRROR_ALL;

/** A given definition that cannot run and that the target does not store: the caller's error. */
export interface Refusal {
  readonly name: string;
  readonly error: SluiceError;
}

export interface Resolution {
  readonly compiled: CompiledProjection[];
  /** Projections this sync cannot compile that the target stores: each run suspends them in their own rows. */
  readonly broken: BrokenDefinition[];
  /** Given definitions refused (Syncer.open throws the first; a later refresh reports each as its projection's error). */
  readonly refused: Refusal[];
  /** Set when "*" runs: the captured tables it does not mirror, and why. */
  readonly mirrorAll: { readonly unmirrored: readonly Unmirrored[] } | undefined;
  /** What the first run stores in the target's set (undefined: nothing to store). */
  readonly store: SetChange | undefined;
  /**
   * The definitions the target stored when these were compiled (name -> its stored definition): a follower
   * compiles again when another program changed them (a repair made by another sync), and writes a suspension of
   * a stored projection only while the target still stores the definition it judged.
   */
  readonly stored: ReadonlyMap<string, string>;
  /**
   * Set when nothing is given and the target holds projections (or a "*") and none of them the source's:
   * the refusal Syncer.open throws (given both paths as typed) unless the source acknowledges projections the
   * target lost (source-projections.ts).
   */
  readonly othersOnly?: (paths: { readonly source: string; readonly target: string }) => InvalidInputError;
}

/** The stored form of a definition (its data, as newProjectionRecord stores it), with keys in one order. */
function canonical(d: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : typeof v === 'object' && v !== null
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([k]) => k !== 'handler')
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, x]) => [k, sort(x)]),
          )
        : v;
  return JSON.stringify(sort(d));
}

/** Whether the target stores `def` as it is (so it compiled against the source before). */
export function storedAsGiven(rec: ProjectionRecord | undefined, def: ProjectionDefinition): boolean {
  if (rec === undefined) return false;
  try {
    return sameDefinitionData(JSON.parse(rec.definition), def);
  } catch {
    return false;
  }
}

/**
 * Whether two definitions are the same as data (keys in any order): a
 * projection whose fingerprint moved while its definition did not was
 * reshaped by the source's DDL, not redefined.
 */
export function sameDefinitionData(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/**
 * TABLE_UNTRACKED for a new definition over a source table that is not
 * captured (the table exists: compileAgainstSource said so), naming the
 * command that captures it; undefined when it is captured.
 */
export function uncapturedTable(
  def: ProjectionDefinition,
  captured: readonly CapturedTableMode[],
  sourcePath: string,
): InvalidInputError | undefined {
  if (captured.some((t) => foldIdent(t.name) === foldIdent(def.source))) return undefined;
  return new InvalidInputError(
    'TABLE_UNTRACKED',
    `Projection ${def.name}: source table ${def.source} is not captured, so sluice has no changes of it to sync. Capture it first: ${shellCommand('enable', { source: sourcePath, table: def.source })}, then run this sync again.`,
  );
}

/** The stored definitions, parsed (with a custom handler's code loaded again), or why one cannot be. */
export async function storedDefinitions(records: readonly ProjectionRecord[]): Promise<(ProjectionDefinition | BrokenDefinition)[]> {
  const out: (ProjectionDefinition | BrokenDefinition)[] = [];
  for (const r of records) {
    let d: ProjectionDefinition;
    try {
      d = parseStoredDefinition(r.definition, `stored definition of ${r.name}`);
    } catch (err) {
      const b = brokenDefinition(r.name, r.sourceTable, 'parse', err);
      if (b === undefined) throw err;
      out.push(b);
      continue;
    }
    // A handler that cannot be loaded again stays an error of the open (CUSTOM_MODULE_NOT_FOUND names the fix).
    out.push(await withStoredHandler(d));
  }
  return out;
}

/** Whether "*" runs, given the inputs: given with them, else whether the target's set holds it (a new target: yes). */
export function mirrorAllOf(
  given: readonly DefinitionInput[],
  records: readonly ProjectionRecord[],
  set: ProjectionSet,
): MirrorAll | undefined {
  if (given.includes(MIRROR_ALL)) return { origin: 'given', stored: false, sourcePath: null, except: [] };
  if (given.length > 0) return undefined;
  if (set.mirrorAll !== undefined) return set.mirrorAll;
  // A stored set without "*" (a target built from definitions, each since dropped) is not a new target.
  return records.length === 0 && !set.stored ? { origin: 'default', stored: false, sourcePath: null, except: [] } : undefined;
}

/**
 * The projections of one sync run: given `given` (empty: the target's set),
 * compiled against the source on `db` (the source as main, the target
 * attached). Writes nothing; `store` says what the first run stores.
 * `say`: the NOTHING_TO_SYNC refusal in the caller's terms (SyncOptions.nothingToMirror).
 */
export async function resolveProjections(
  db: Db,
  given: readonly DefinitionInput[],
  sourcePath: string,
  say?: NothingToMirrorSay,
): Promise<Resolution> {
  const records = readProjections(db, TARGET_SCHEMA);
  const own = setOfSource(db, TARGET_SCHEMA, records, { sourceId: readState(db)?.sourceId, path: sourcePath });
  const set = own.set;
  const captured = readTables(db);
  const compiled: CompiledProjection[] = [];
  const broken: BrokenDefinition[] = [];
  const refused: Refusal[] = [];
  const defs = given.filter((d): d is ProjectionDefinitionInput => d !== MIRROR_ALL);
  for (const input of defs) {
    let d: ProjectionDefinition;
    try {
      d = parseDefinition(input);
    } catch (err) {
      if (!(err instanceof SluiceError)) throw err;
      refused.push({
        name: (input as { name?: unknown }).name === undefined ? '' : String((input as { name: unknown }).name),
        error: err,
      });
      continue;
    }
    const rec = records.find((r) => r.name === d.name);
    try {
      const p = compileAgainstSource(db, d);
      const untracked = rec === undefined ? uncapturedTable(p.definition, captured, sourcePath) : undefined;
      if (untracked !== undefined) refused.push({ name: d.name, error: untracked });
      else compiled.push(p);
    } catch (err) {
      // Stored as it is: it compiled before, so the source changed; suspended on its own. Otherwise the caller's error.
      const b = storedAsGiven(rec, d) ? brokenDefinition(d.name, d.source, 'compile', err) : undefined;
      if (b !== undefined) broken.push(b);
      else if (err instanceof SluiceError && err.exitCode === 1) refused.push({ name: d.name, error: storedOther(err, d.name, rec) });
      else throw err;
    }
  }
  // The stored definitions that run: the set's of this source without --projection; with '*' given, the mirrors "*" made.
  const named = new Set([...compiled, ...broken, ...refused].map((x) => x.name));
  const storedRun =
    given.length === 0
      ? own.projections
      : given.includes(MIRROR_ALL)
        ? records.filter((r) => isDefaultMirror(r) && !named.has(r.name))
        : [];
  for (const d of await storedDefinitions(storedRun)) {
    if ('reason' in d) {
      broken.push(d);
      continue;
    }
    // A stored projection that no longer fits the source is suspended on its own.
    const p = compileOrBroken(db, d);
    if (isBroken(p)) broken.push(p);
    else compiled.push(p);
  }
  // "*" of another source file (there now or not) is that file's: a plain sync of this one neither runs it nor stores it again.
  const mirrorAll = mirrorAllOf(given, records, own.othersMirrorAll ? { ...set, mirrorAll: undefined } : set);
  let unmirrored: Unmirrored[] = [];
  if (mirrorAll !== undefined) {
    const added = compileMirrorAll(
      db,
      captured,
      records,
      mirrorAll,
      compiled,
      broken.map((b) => b.name),
    );
    compiled.push(...added.compiled);
    unmirrored = added.unmirrored;
    if (compiled.length === 0 && broken.length === 0 && records.length === 0) {
      if (!hasCapture(db)) readSourceView(db); // CAPTURE_ABSENT, naming the source and the fix
      // Every mirror "*" made was dropped (sluice drop): the user's choice, a sync with nothing to do that says so
      // (and forgets the dropped projections' acknowledgements), not a source that captures nothing to mirror.
      if (mirrorAll.except.length === 0) throw nothingToMirror(db, sourcePath, captured, unmirrored, say);
      unmirrored = [...droppedFromMirrorAll(captured, mirrorAll), ...unmirrored];
    }
  }
  return {
    compiled,
    broken,
    refused,
    mirrorAll: mirrorAll === undefined ? undefined : { unmirrored },
    stored: storedDefinitionTexts(records),
    store: setChange(set, mirrorAll, own.othersMirrorAll && mirrorAll === undefined ? (set.mirrorAll?.sourcePath ?? null) : sourcePath),
    ...(given.length === 0 && holdsOnlyOthers(own, records)
      ? {
          othersOnly: (paths: { readonly source: string; readonly target: string }) =>
            noProjectionsOfSource('sync', paths.source, paths.target, records, set),
        }
      : {}),
  };
}

/**
 * A given definition's compile error, saying so when the target stores
 * another definition of that name (one another sync stored since, say the
 * repair of a follower's stale one): this sync leaves it as it is.
 */
function storedOther(err: SluiceError, name: string, rec: ProjectionRecord | undefined): SluiceError {
  if (rec === undefined) return err;
  return new InvalidInputError(
    err.code,
    `${err.message} The target stores another definition of ${name}, which this sync leaves as it is: pass that one, or one that fits the source, with --projection (a follower: fix its file, it reads it again).`,
    { cause: err },
  );
}

/** Each stored projection's definition as the target stores it, by name (Resolution.stored). */
function storedDefinitionTexts(records: readonly ProjectionRecord[]): Map<string, string> {
  return new Map(records.map((r) => [r.name, r.definition]));
}

/** Whether the target stores other definitions than `before` (a projection added, dropped, or its definition changed). */
export function storedDefinitionsMoved(before: ReadonlyMap<string, string>, now: readonly ProjectionRecord[]): boolean {
  return now.length !== before.size || now.some((r) => before.get(r.name) !== r.definition);
}

/**
 * The captured tables whose mirror was dropped from "*" (`except`), as the
 * tables it leaves out: said when the target holds no projection at all, so
 * that a sync with nothing to do says why and how to mirror them again.
 */
function droppedFromMirrorAll(captured: readonly CapturedTableMode[], mirrorAll: MirrorAll): Unmirrored[] {
  const except = new Set(mirrorAll.except);
  return captured
    .filter((t) => except.has(t.name))
    .map((t) => ({
      table: t.name,
      mode: t.mode,
      why: `its mirror was dropped from this target's "*" with sluice drop; sync --projection '*' mirrors it again`,
    }));
}

/**
 * The mirrors "*" adds beside `defined` (the run's compiled definitions;
 * `otherNames`: the run's projections that did not compile) and the
 * target's stored `records`, compiled; and the captured tables it leaves
 * unmirrored, with why.
 */
export function compileMirrorAll(
  db: Db,
  captured: readonly CapturedTableMode[],
  records: readonly ProjectionRecord[],
  mirrorAll: MirrorAll,
  defined: readonly CompiledProjection[],
  otherNames: readonly string[],
): { readonly compiled: CompiledProjection[]; readonly unmirrored: Unmirrored[] } {
  const names = nameHolders([
    ...records.map((r) => ({ name: r.name, table: r.sourceTable })),
    ...otherNames.map((name) => ({ name, table: records.find((r) => r.name === name)?.sourceTable })),
    ...defined.map((p) => ({ name: p.name, table: p.source.table })),
  ]);
  const tables = new Map<string, string>();
  for (const r of records) for (const t of madeTables(r)) tables.set(foldIdent(t), r.name);
  for (const p of defined) for (const t of madeTablesAt(p)) tables.set(foldIdent(t), p.name);
  const added = mirrorsToAdd(captured, records, mirrorAll, { names, tables });
  const compiled: CompiledProjection[] = [];
  for (const d of added.mirrors) {
    const c = compileMirror(db, d);
    if ('refused' in c) added.unmirrored.push({ table: d.source, mode: 'images', why: c.refused });
    else compiled.push(c);
  }
  return { compiled, unmirrored: added.unmirrored };
}

/**
 * What the first run stores: the set table on a target that has none, and
 * "*" when it runs and is not stored as it is. `sourcePath`: the source "*"
 * is stored with (this run's, or the other source's whose "*" it leaves).
 */
function setChange(
  set: { readonly stored: boolean; readonly mirrorAll: MirrorAll | undefined },
  run: MirrorAll | undefined,
  sourcePath: string | null,
): SetChange | undefined {
  // An older target counted as built by the default keeps "*" beside what is given now.
  const mirrorAll = run?.origin ?? (set.mirrorAll !== undefined && !set.mirrorAll.stored ? set.mirrorAll.origin : undefined);
  if (!set.stored) return { sourcePath, ...(mirrorAll === undefined ? {} : { mirrorAll }) };
  if (run === undefined) return undefined;
  const stored = set.mirrorAll;
  // Given in this run (--projection '*') it is stored again, its list of dropped tables cleared; "*" as the target
  // stores it (read back, stored: true, whatever its origin) keeps that list.
  const givenNow = run.origin === 'given' && !run.stored;
  if (stored === undefined || givenNow || stored.sourcePath !== sourcePath) return { sourcePath, mirrorAll: run.origin };
  return undefined;
}

/**
 * The compiled projections without those whose name or target table another
 * one (of the run, or stored in the target and not in the run) already
 * takes: each of those is refused with DUPLICATE_PROJECTION or
 * TARGET_COLLISION (the open throws it; a refresh reports it).
 */
export function admitted(
  compiled: readonly CompiledProjection[],
  records: readonly ProjectionRecord[],
): { readonly kept: CompiledProjection[]; readonly refused: Refusal[] } {
  const inRun = new Set(compiled.map((p) => p.name));
  // Projections stored in the target but not part of this run keep their tables.
  const others = records.filter((r) => !inRun.has(r.name)).map((r) => ({ name: r.name, tables: madeTables(r) }));
  const kept: CompiledProjection[] = [];
  const refused: Refusal[] = [];
  for (const p of compiled) {
    try {
      checkCollisions([...others, ...[...kept, p].map((k) => ({ name: k.name, tables: madeTablesAt(k) }))]);
      kept.push(p);
    } catch (err) {
      if (!(err instanceof SluiceError)) throw err;
      refused.push({ name: p.name, error: err });
    }
  }
  return { kept, refused };
}

/** The projections to rebuild: each given by its name, or by its table's name when it has its default name (see name.ts). */
export function resolveReinit(names: readonly string[], projections: readonly CompiledProjection[]): string[] {
  return names.map((name) => {
    if (projections.some((p) => p.name === name)) return name;
    const byTable = projections.find(
      (p) => foldIdent(p.source.table) === foldIdent(name) && p.name === defaultProjectionName(p.source.table),
    );
    if (byTable !== undefined) return byTable.name;
    throw new InvalidInputError(
      'PROJECTION_NOT_FOUND',
      `Cannot reinit ${name}: no projection of that name in this sync (have: ${projections.map((p) => p.name).join(', ')}). Pass the name of a stored projection, or its --projection file.`,
    );
  });
}
