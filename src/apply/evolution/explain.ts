import fs from 'node:fs';
import { InvalidInputError, SluiceError } from '../../errors.ts';
import type { Db } from '../../sqlite/index.ts';
import { foldIdent, readQuietly, readSession, repairAction, shellCommand } from '../../sqlite/index.ts';
import { readSourceView, type SourceView } from '../../feed/index.ts';
import {
  type CompiledProjection,
  type SourceShape,
  withStoredHandler,
  parseDefinition,
  parseStoredDefinition,
  type ProjectionDefinition,
  type ProjectionDefinitionInput,
  capturedShape,
  compileAgainstSource,
  classifyChange,
  type AlterClassification,
  type AlterReasonCode,
  type ClassifiedChange,
  type UncompiledProjection,
  madeTables,
  madeTablesAt,
} from '../../projection/index.ts';
import { readState, readTables } from '../../capture/index.ts';
import {
  isDefaultMirror,
  MIRROR_ALL,
  setOfSource,
  acknowledgesLost,
  holdsOnlyOthers,
  noProjectionsOfSource,
  compileMirrorAll,
  mirrorAllOf,
  storedAsGiven,
  uncapturedTable,
} from '../projections/index.ts';
import type { StatePart } from '../../projection/index.ts';
import { openApplySession, TARGET_SCHEMA, readProjections, type ProjectionRecord } from '../target/index.ts';
import { alterFacts, type RebuildCost } from './explain-facts.ts';
import { predictSync, type SyncPrediction } from './sync-classify.ts';
import { suspensionRepair } from '../check/index.ts';

/** One side of a change: exactly what the projection is made from (the fingerprint covers all of it). */
export interface DefinitionInputs {
  readonly name: string;
  readonly fingerprint: string | null;
  /** The definition as data (a custom handler is code: only its declared version is in the fingerprint). */
  readonly definition: unknown;
  readonly sourceShape: SourceShape | null;
}

export interface ProjectionExplanation {
  readonly name: string;
  readonly kind: string;
  readonly sourceTable: string;
  readonly targetTable: string | null;
  readonly classification: AlterClassification;
  readonly reason: AlterReasonCode;
  /** State parts not proved valid (empty when Compatible). */
  readonly affected: readonly StatePart[];
  readonly changes: readonly ClassifiedChange[];
  /** The stored side (null: not in the target yet) and the new one. */
  readonly inputs: { readonly old: DefinitionInputs | null; readonly new: DefinitionInputs };
  readonly cost: RebuildCost;
  /**
   * What the next sync does with it, which follows from the classification:
   * Compatible continues; Rebuildable rebuilds (beside the live projection
   * and swapped in where its kind allows); Rejected is refused with the
   * reason (nothing written), or, for a cursor that cannot go on or a
   * stored definition that no longer compiles, suspended with the reason
   * health shows.
   */
  readonly sync: SyncPrediction;
  /** For a Rejected change: what to do, with the command. */
  readonly repair?: string;
}

export interface ExplainReport {
  /** True when every projection is Compatible: sync continues each from its cursor. */
  readonly ok: boolean;
  readonly sourceSeq: number;
  readonly projections: readonly ProjectionExplanation[];
}

export interface ExplainOptions {
  /** Definitions to explain, and `'*'`, as for sync. Default: the target's set (its stored definitions, and "*" when it holds it). */
  readonly projections?: readonly (ProjectionDefinitionInput | typeof MIRROR_ALL)[];
  /**
   * A target whose projections are all other sources' (source-projections.ts), none given: 'refuse' (the default) throws
   * NO_PROJECTIONS_OF_SOURCE, as a plain sync of it does; 'empty' reports no projection (alter's forecast of each target).
   */
  readonly othersOnly?: 'refuse' | 'empty';
}

/**
 * Classifies, for each projection a sync would run, the change from what
 * its target holds to what would run now (its definition, its source
 * table's shape, its cursor, its target's indexes): Compatible, Rebuildable
 * or Rejected, with the reason code, the state parts affected, both
 * fingerprints and the rebuild's cost. Writes nothing: both files are
 * opened read-only, in one read transaction, and held so that no -wal or
 * -shm is left beside them (readQuietly).
 *
 * @example
 * const r = await explainAlter('app.db', 'cache.db', { projections: [{ name: 'open', source: 'issues', kind: 'map', columns: { id: 'id' } }] });
 * for (const p of r.projections) console.log(p.name, p.classification, p.reason);
 */
export async function explainAlter(sourcePath: string, targetPath: string, options: ExplainOptions = {}): Promise<ExplainReport> {
  requireTarget(targetPath);
  const inputs = options.projections ?? [];
  // A definition that does not parse is the caller's error, before anything is opened.
  const given = inputs.filter((d): d is ProjectionDefinitionInput => d !== MIRROR_ALL).map((d) => parseDefinition(d));
  // Held while read (readQuietly): a reader of a WAL file would leave a -wal and -shm beside it.
  return readQuietly([sourcePath, targetPath], async () => {
    const session = openApplySession(sourcePath, targetPath, {
      readonly: true,
      command: (source, target) => shellCommand('explain', { source, target }),
    });
    const db = session.db;
    try {
      return await readSession(db, async () => {
        if (inputs.length === 0 && options.othersOnly !== 'empty') refuseOthersOnly(db, sourcePath, targetPath);
        return explainDefinitions(db, sourcePath, targetPath, await definitionsToExplain(db, sourcePath, inputs, given));
      });
    } finally {
      session.close();
    }
  });
}

/** A plain explain of a target whose projections are all other sources' is refused as a plain sync of it is (source-projections.ts). */
function refuseOthersOnly(db: Db, sourcePath: string, targetPath: string): void {
  const records = readProjections(db, TARGET_SCHEMA);
  const own = setOfSource(db, TARGET_SCHEMA, records, { sourceId: readState(db)?.sourceId, path: sourcePath });
  if (holdsOnlyOthers(own, records) && !acknowledgesLost(db, sourcePath, targetPath))
    throw noProjectionsOfSource('explain', sourcePath, targetPath, records, own.set);
}

/** explain and alter --target read a target, never make one: a missing one is an error (exit 1). */
export function requireTarget(targetPath: string): void {
  // openApplySession would make a missing target; explain makes nothing.
  if (!fs.existsSync(targetPath))
    throw new InvalidInputError(
      'DB_NOT_FOUND',
      `Target ${targetPath} does not exist. Pass a target written by \`sluice sync\` (explain never creates one).`,
    );
}

/** What explain classifies (definitionsToExplain): the run's inputs, and the definitions that run, given and stored. */
interface ToExplain {
  readonly inputs: readonly (ProjectionDefinitionInput | typeof MIRROR_ALL)[];
  readonly defs: readonly Pending[];
}

/**
 * What explain classifies, as sync runs it (sync-definitions.ts): the
 * definitions given (parsed: `given`), and the target's stored ones of its
 * set (with their custom handlers loaded, which is why this is async and
 * apart from explainDefinitions): all of them without inputs, the mirrors
 * "*" made with '*' given. The mirrors "*" adds are found when classified.
 * `db` has the target attached (an apply session), source `sourcePath` as
 * main: without inputs, the stored ones of another source file (there now or
 * not) are that file's, as sync leaves them (source-projections.ts).
 */
export async function definitionsToExplain(
  db: Db,
  sourcePath: string,
  inputs: readonly (ProjectionDefinitionInput | typeof MIRROR_ALL)[],
  given: readonly ProjectionDefinition[] = inputs
    .filter((d): d is ProjectionDefinitionInput => d !== MIRROR_ALL)
    .map((d) => parseDefinition(d)),
): Promise<ToExplain> {
  const records = readProjections(db, TARGET_SCHEMA);
  const named = new Set(given.map((d) => d.name));
  const own = setOfSource(db, TARGET_SCHEMA, records, { sourceId: readState(db)?.sourceId, path: sourcePath }).projections;
  const storedRun =
    inputs.length === 0 ? own : inputs.includes(MIRROR_ALL) ? records.filter((r) => isDefaultMirror(r) && !named.has(r.name)) : [];
  return { inputs, defs: [...given.map((d) => ({ def: d, given: true })), ...(await stored(storedRun))] };
}

/**
 * explain's classification of `toExplain` (definitionsToExplain) on `db`
 * (the source as main, the target attached), in the caller's transaction:
 * a read transaction (explainAlter), or sluice alter's own, after its DDL
 * ran (a forecast: src/apply/evolution/alter-targets.ts). Reads only.
 */
export function explainDefinitions(db: Db, sourcePath: string, targetPath: string, toExplain: ToExplain): ExplainReport {
  const { inputs } = toExplain;
  const defs = [...toExplain.defs];
  const view = readSourceView(db);
  const records = readProjections(db, TARGET_SCHEMA);
  const captured = readTables(db);
  const nexts = defs.map((d) => {
    if (d.def === undefined) return d.broken;
    const rec = records.find((r) => r.name === d.def.name);
    const next = compileOrError(db, d.def);
    // A new definition over a table the source does not capture is refused, as sync refuses it.
    const untracked =
      d.given === true && rec === undefined && !('error' in next) ? uncapturedTable(d.def, captured, sourcePath) : undefined;
    return untracked === undefined ? next : { ...next, error: { code: untracked.code, message: untracked.message } };
  });
  // "*" of another source file (there now or not) is that file's: sync runs it not (sync-definitions.ts).
  const set = setOfSource(db, TARGET_SCHEMA, records, { sourceId: view.state.sourceId, path: sourcePath });
  const mirrorAll = mirrorAllOf(inputs, records, set.othersMirrorAll ? { ...set.set, mirrorAll: undefined } : set.set);
  if (mirrorAll !== undefined) {
    const compiled = nexts.filter((n): n is CompiledProjection => !('error' in n));
    const added = compileMirrorAll(
      db,
      captured,
      records,
      mirrorAll,
      compiled,
      nexts.filter((n) => 'error' in n).map((n) => n.name),
    );
    for (const p of added.compiled) {
      defs.push({ def: p.definition });
      nexts.push(p);
    }
  }
  const names = new Set(nexts.map((n) => n.name));
  const projections: ProjectionExplanation[] = [];
  // Which projection claims each target table: the first of this run, or one stored that this run leaves out.
  const claimed = new Map<string, string>();
  for (const [i, d] of defs.entries()) {
    let next = nexts[i] as CompiledProjection | UncompiledProjection;
    if (!('error' in next)) next = claimTables(next, claimed, records, names);
    // sync matches a definition to its stored projection by name: a new name is a new projection (or collides).
    const rec = records.find((r) => r.name === next.name);
    // A given definition the target stores as it is compiled before: sync suspends it when it no longer does (the source changed).
    const callers = d.given === true && !(d.def !== undefined && 'error' in next && storedAsGiven(rec, d.def));
    projections.push(explainOne(db, view, targetPath, sourcePath, rec, next, callers));
  }
  return { ok: projections.every((p) => p.classification === 'Compatible'), sourceSeq: view.hw, projections };
}

/** `p`, or why it cannot be built: another projection writes one of its tables (as sync's checkCollisions refuses). */
function claimTables(
  p: CompiledProjection,
  claimed: Map<string, string>,
  records: readonly ProjectionRecord[],
  inRun: ReadonlySet<string>,
): CompiledProjection | UncompiledProjection {
  const stored = records.filter((r) => !inRun.has(r.name));
  // Every table a build makes, an FTS5 index's own included (as checkCollisions).
  for (const t of madeTablesAt(p)) {
    const other = claimed.get(foldIdent(t)) ?? stored.find((r) => madeTables(r).some((x) => foldIdent(x) === foldIdent(t)))?.name;
    if (other !== undefined && other !== p.name) {
      const message = `Projections ${other} and ${p.name} both write target table ${t}. Set a distinct "target" on one of them.`;
      return { name: p.name, definition: p.definition, source: p.source, error: { code: 'TARGET_COLLISION', message } };
    }
  }
  for (const t of madeTablesAt(p)) claimed.set(foldIdent(t), p.name);
  return p;
}

/** A definition to explain (`given`: by the caller, not stored), or a stored one that no longer parses (with why). */
type Pending =
  | { readonly def: ProjectionDefinition; readonly given?: boolean; readonly name?: undefined; readonly broken?: undefined }
  | {
      readonly def?: undefined;
      readonly given?: undefined;
      readonly name: string;
      readonly broken: UncompiledProjection;
    };

/** The target's stored definitions, parsed (a custom handler loaded again), or why one cannot be. */
async function stored(records: readonly ProjectionRecord[]): Promise<Pending[]> {
  const out: Pending[] = [];
  for (const r of records) {
    try {
      const d = parseStoredDefinition(r.definition, `stored definition of ${r.name}`);
      out.push({ def: await withStoredHandler(d) });
    } catch (err) {
      if (!(err instanceof SluiceError)) throw err;
      out.push({ name: r.name, broken: { name: r.name, error: { code: err.code, message: err.message } } });
    }
  }
  return out;
}

/** The definition compiled and checked against today's source as sync does, or why it cannot be. */
export function compileOrError(db: Db, def: ProjectionDefinition): CompiledProjection | UncompiledProjection {
  const shape = capturedShape(db, def.source);
  try {
    return compileAgainstSource(db, def);
  } catch (err) {
    if (!(err instanceof SluiceError)) throw err;
    return {
      name: def.name,
      definition: def,
      ...(shape === undefined ? {} : { source: shape }),
      error: { code: err.code, message: err.message },
    };
  }
}

function explainOne(
  db: Db,
  view: SourceView,
  targetPath: string,
  sourcePath: string,
  rec: ProjectionRecord | undefined,
  next: CompiledProjection | UncompiledProjection,
  given: boolean,
): ProjectionExplanation {
  // A projection that never built (no cursor) has no state to keep: a first build.
  const old = rec?.cursor == null ? undefined : rec;
  const compiled = 'error' in next ? undefined : next;
  const { facts, cost } = alterFacts(db, view, targetPath, old, next);
  const decision = classifyChange(old, next, facts);
  const worst = decision.changes.find((c) => c.classification === decision.classification && c.reason === decision.reason);
  const repairReason = worst?.change.kind === 'cursor' ? worst.change.reason : decision.reason;
  const { handler: _h, ...data } = (next.definition ?? {}) as { handler?: unknown };
  const table = compiled?.source.table ?? next.definition?.source ?? rec?.sourceTable;
  return {
    name: next.name,
    kind: compiled?.kind ?? next.definition?.kind ?? rec?.kind ?? 'unknown',
    sourceTable: compiled?.source.table ?? next.definition?.source ?? rec?.sourceTable ?? '',
    targetTable: compiled?.targetTable ?? null,
    classification: decision.classification,
    reason: decision.reason,
    affected: decision.affected,
    changes: decision.changes,
    inputs: {
      old:
        old === undefined
          ? null
          : {
              name: old.name,
              fingerprint: old.fingerprint,
              definition: JSON.parse(old.definition),
              sourceShape: JSON.parse(old.sourceShape) as SourceShape,
            },
      new: {
        name: next.name,
        fingerprint: decision.fingerprints.new,
        definition: next.definition === undefined ? null : data,
        sourceShape: next.source ?? null,
      },
    },
    cost,
    sync: predictSync(decision, old, next, given, { db, view }),
    ...(decision.classification === 'Rejected'
      ? { repair: rejectedRepair(db, next.name, repairReason, sourcePath, targetPath, table) }
      : {}),
  };
}

/**
 * The repair of a Rejected change: the catalog's, but for a table the next
 * sync cannot re-arm by itself (TABLE_UNARMED) what sync and health say of
 * it, read on the source as it is now (the enable that re-arms it, with the
 * columns it must leave out or be told to capture), not the catalog's
 * switch to images mode.
 */
function rejectedRepair(db: Db, name: string, reason: string, sourcePath: string, targetPath: string, table: string | undefined): string {
  if (reason === 'TABLE_UNARMED' && table !== undefined)
    return suspensionRepair({ name, reason, sourceTable: table, sourcePath }, sourcePath, targetPath, db);
  return repairAction(name, reason, sourcePath, targetPath, table);
}
