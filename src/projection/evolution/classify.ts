import type { ReasonOf } from '../../reasons.ts';
import { foldIdent } from '../../sqlite/index.ts';
import { compileProjection, type CompiledProjection, type SourceShape } from '../compile.ts';
import { parseStoredDefinition, type CustomHandler, type ProjectionDefinition } from '../definition.ts';
import { diffShapes, STATE_PARTS, type AlterChange, type InvalidCode, type StatePart } from './changes.ts';
import { ALL_PARTS, type KindAlterRules } from './kinds.ts';
import { kindRules } from '../kinds/registry.ts';
import { DEFAULT_ORACLE, type AlterStateOracle, type OracleContext, type StateProof } from './oracle.ts';
import type { AlterFacts } from './facts.ts';
export type { CursorFact, AlterFacts } from './facts.ts';

export { DEFAULT_ORACLE };
export type { AlterStateOracle, OracleContext, StateProof } from './oracle.ts';

/*
 * The classification of a change to a projection (003's AlterClassification),
 * pure: the projection as stored in its target against the definition as it
 * would run now, compiled against today's source table, plus the facts only
 * the databases know (AlterFacts: whether the cursor continues, a filter's
 * row count, the target's indexes, disk space). explain (src/apply/evolution/explain.ts)
 * gathers the facts read-only; sync can call classifyChange with the same.
 *
 * Compatible needs a positive proof, by an AlterStateOracle, that each of
 * the four state parts (rows, cursor, keys, auxiliary) stays valid under
 * every change found; a part without a proof is not proved. Otherwise the
 * change is Rebuildable when a shadow of the projection can be built and
 * swapped in, and Rejected when validation or resources forbid both.
 */

export type AlterClassification = 'Compatible' | 'Rebuildable' | 'Rejected';

/** A stable code of the reason catalog (kind `alter` in src/reasons.ts). */
export type AlterReasonCode = ReasonOf<'alter'>;

/** The stored side: a ProjectionRecord (src/apply/target/target-meta.ts) fits. */
export interface StoredProjection {
  readonly name: string;
  readonly kind: string;
  readonly targetTable: string;
  readonly definition: string;
  readonly sourceShape: string;
  readonly fingerprint: string;
  readonly cursor: string | null;
}

/** A new definition that did not compile against the source (or whose source table is gone). */
export interface UncompiledProjection {
  readonly name: string;
  readonly definition?: ProjectionDefinition;
  /** Today's source shape, when the table exists. */
  readonly source?: SourceShape;
  readonly error: { readonly code: string; readonly message: string };
}

export interface ClassifiedChange {
  readonly change: AlterChange;
  readonly classification: AlterClassification;
  readonly reason: AlterReasonCode;
  /** Parts without a proof (empty when Compatible). */
  readonly affected: readonly StatePart[];
  readonly proof: StateProof;
  /** Why Rejected or Rebuildable beyond the proof, when a rule decided it (a shadow, disk space). */
  readonly why?: string;
  /**
   * For a Rejected change that sync suspends the projection for (with this
   * reason, which health shows with its repair) instead of refusing it: a
   * cursor that does not continue and cannot be rebuilt from the source.
   */
  readonly suspends?: string;
}

export interface AlterDecision {
  readonly name: string;
  readonly classification: AlterClassification;
  /** The reason of the first change with the worst classification. */
  readonly reason: AlterReasonCode;
  readonly affected: readonly StatePart[];
  readonly changes: readonly ClassifiedChange[];
  readonly fingerprints: { readonly old: string | null; readonly new: string | null };
}

const RANK: Record<AlterClassification, number> = { Compatible: 0, Rebuildable: 1, Rejected: 2 };

/**
 * Classifies the change from `old` (undefined: not in the target yet) to
 * `next`. Call it before writing anything; `Compatible` means continuing
 * from the stored cursor, with the stored row updated to `next` (name,
 * definition, fingerprint), keeps the projection exact.
 *
 * @example
 * const d = classifyChange(record, compiled, { cursor: { continues: true } });
 * if (d.classification === 'Rebuildable') buildShadowAndSwap();
 */
export function classifyChange(
  old: StoredProjection | undefined,
  next: CompiledProjection | UncompiledProjection,
  facts: AlterFacts = {},
  options: { readonly oracle?: AlterStateOracle } = {},
): AlterDecision {
  const oracle = options.oracle ?? DEFAULT_ORACLE;
  const compiled = 'error' in next ? undefined : next;
  const kind = compiled?.kind ?? next.definition?.kind ?? old?.kind ?? 'custom';
  const rules = kindRules(kind) ?? kindRules('custom');
  if (rules === undefined) throw new Error('unreachable: the custom kind has rules');
  const oldCompiled = old === undefined ? undefined : compileStored(old);
  const changes = detectChanges(old, oldCompiled, next, rules, facts);
  const ctx: OracleContext = { rules, old: oldCompiled, next: compiled, facts };
  const classified = changes.map((c) => classifyOne(c, ctx, oracle, compiled ?? { ownedTables: [] }));
  let worst = classified[0] as ClassifiedChange;
  for (const c of classified) if (RANK[c.classification] > RANK[worst.classification]) worst = c;
  const affected = STATE_PARTS.filter((p) => classified.some((c) => c.classification !== 'Compatible' && c.affected.includes(p)));
  return {
    name: next.name,
    classification: worst.classification,
    reason: worst.reason,
    affected,
    changes: classified,
    fingerprints: { old: old?.fingerprint ?? null, new: compiled?.fingerprint ?? null },
  };
}

/** Compiles without running a custom handler's code: a stored row keeps the definition as data only. */
const STAND_IN: CustomHandler = { apply: () => undefined };

/** The stored side compiled over its stored shape (a custom handler's code is not needed), or undefined when it no longer compiles. */
export function compileStored(old: Pick<StoredProjection, 'name' | 'definition' | 'sourceShape'>): CompiledProjection | undefined {
  try {
    const d = parseStoredDefinition(old.definition, `stored definition of ${old.name}`, STAND_IN);
    return compileProjection(d, JSON.parse(old.sourceShape) as SourceShape);
  } catch {
    return undefined;
  }
}

/**
 * Whether `p`'s rows or auxiliary state depend on source column `column`
 * (its kind's rules: a mirror or a custom handler reads every column, a map
 * or an fts5 index the columns it copies, its key, and every name its SQL
 * mentions).
 */
export function readsColumn(p: CompiledProjection, column: string): boolean {
  return (kindRules(p.kind) ?? (kindRules('custom') as KindAlterRules)).uses(p, column);
}

const COLUMN_ERRORS = new Set(['UNKNOWN_COLUMN', 'MISSING_KEY']);

function invalidCode(errorCode: string, message: string): InvalidCode {
  if (errorCode === 'UNKNOWN_SOURCE_TABLE') return 'ALTER_SOURCE_TABLE_MISSING';
  if (errorCode === 'MISSING_KEY') return 'ALTER_KEY_MISSING';
  if (errorCode === 'KEY_COLLATION_MISMATCH') return 'ALTER_KEY_NOT_UNIQUE';
  if (errorCode === 'UNKNOWN_COLUMN' || (errorCode === 'BAD_EXPRESSION' && /no such column/i.test(message))) return 'ALTER_UNKNOWN_COLUMN';
  return 'ALTER_DEFINITION_INVALID';
}

function detectChanges(
  old: StoredProjection | undefined,
  oldCompiled: CompiledProjection | undefined,
  next: CompiledProjection | UncompiledProjection,
  rules: KindAlterRules,
  facts: AlterFacts,
): AlterChange[] {
  const out: AlterChange[] = [];
  if (old !== undefined && old.name !== next.name) out.push({ kind: 'renamed', from: old.name, to: next.name });
  const oldShape = old === undefined ? undefined : (JSON.parse(old.sourceShape) as SourceShape);
  const nowShape = 'error' in next ? next.source : next.source;
  const sameTable = oldShape !== undefined && nowShape !== undefined && foldIdent(oldShape.table) === foldIdent(nowShape.table);
  // What the source's DDL did, as far as the projection reads it.
  if (sameTable && oldShape !== undefined && nowShape !== undefined) {
    const reader = oldCompiled;
    out.push(...diffShapes(oldShape, nowShape, (c) => (reader === undefined ? true : rules.uses(reader, c)), facts.columns));
  }
  if ('error' in next) {
    // A compile failure that a dropped or renamed column explains is that column's Rejection.
    const explained =
      (COLUMN_ERRORS.has(next.error.code) || next.error.code === 'BAD_EXPRESSION') &&
      out.some((c) => c.kind === 'source-column' && c.used && (c.change === 'dropped' || c.change === 'renamed'));
    if (!explained)
      out.push({
        kind: 'invalid',
        code: invalidCode(next.error.code, next.error.message),
        errorCode: next.error.code,
        message: next.error.message,
      });
  } else if (old === undefined) {
    out.push({ kind: 'added' });
  } else if (oldCompiled === undefined) {
    out.push({ kind: 'definition', code: 'ALTER_COLUMNS_CHANGED', field: 'stored definition', parts: ALL_PARTS });
  } else if (oldCompiled.kind !== next.kind) {
    out.push({ kind: 'definition', code: 'ALTER_KIND_CHANGED', field: 'kind', parts: ALL_PARTS });
  } else if (!sameTable) {
    out.push({ kind: 'definition', code: 'ALTER_SOURCE_CHANGED', field: 'source', parts: ALL_PARTS });
  } else {
    if (foldIdent(oldCompiled.targetTable) !== foldIdent(next.targetTable))
      out.push({ kind: 'definition', code: 'ALTER_TARGET_CHANGED', field: 'target', parts: ['rows', 'auxiliary'] });
    out.push(...rules.diff(oldCompiled, next, old.fingerprint));
  }
  if (old !== undefined && facts.cursor !== undefined && !facts.cursor.continues)
    out.push({ kind: 'cursor', reason: facts.cursor.reason, message: facts.cursor.message, rebuildable: facts.cursor.rebuildable });
  if (out.length === 0)
    out.push({ kind: 'unchanged', restated: old !== undefined && !('error' in next) && old.fingerprint !== next.fingerprint });
  for (const ix of facts.targetIndexes ?? []) out.push({ kind: 'target-index', ...ix });
  // Only a build makes the table: a projection that continues keeps the tables it has.
  const builds = out.some((c) => c.kind !== 'unchanged' && c.kind !== 'target-index');
  if (facts.targetTableTaken !== undefined && builds && !('error' in next)) out.push({ kind: 'target-table', ...facts.targetTableTaken });
  return out;
}

/** The code of a change, whatever it is classified as. */
function changeReason(c: AlterChange): AlterReasonCode {
  switch (c.kind) {
    case 'unchanged':
      return 'ALTER_UNCHANGED';
    case 'added':
      return 'ALTER_PROJECTION_ADDED';
    case 'renamed':
      return 'ALTER_RENAMED';
    case 'definition':
      return c.code;
    case 'filter':
      return 'ALTER_FILTER_CHANGED';
    case 'source-column':
      if (c.change === 'added') return 'ALTER_SOURCE_COLUMN_ADDED';
      if (!c.used) return 'ALTER_SOURCE_COLUMN_UNUSED';
      return c.change === 'dropped'
        ? 'ALTER_SOURCE_COLUMN_DROPPED'
        : c.change === 'renamed'
          ? 'ALTER_SOURCE_COLUMN_RENAMED'
          : 'ALTER_SOURCE_COLUMN_RETYPED';
    case 'source-key':
      return 'ALTER_SOURCE_KEY_CHANGED';
    case 'source-table':
      return 'ALTER_SOURCE_TABLE_CHANGED';
    case 'cursor':
      return 'ALTER_CURSOR_INVALID';
    case 'target-index':
      return c.unique ? 'ALTER_TARGET_UNIQUE_INDEX' : 'ALTER_TARGET_INDEX';
    case 'target-table':
      return 'TARGET_TABLE_EXISTS';
    case 'invalid':
      return c.code;
  }
}

/** Why validation forbids both continuing and a rebuild, if it does. */
function rejection(c: AlterChange, next: CompiledProjection | undefined): string | undefined {
  if (c.kind === 'invalid' || c.kind === 'target-table') return c.message;
  // A definition that still compiles over the new columns (a mirror, a retyped column) is rebuilt from them.
  if (c.kind === 'source-column' && c.used && c.change !== 'added' && next === undefined)
    return `source column ${c.column} that the projection reads was ${c.change}${c.to === undefined ? '' : ` (now ${c.to})`}, and the definition names it: a destructive or ambiguous change is not followed`;
  if (c.kind === 'cursor' && !c.rebuildable)
    return `the cursor does not continue (${c.reason}) and the source must be fixed before a rebuild`;
  return undefined;
}

function classifyOne(
  c: AlterChange,
  ctx: OracleContext,
  oracle: AlterStateOracle,
  next: Pick<CompiledProjection, 'ownedTables'>,
): ClassifiedChange {
  const reason = changeReason(c);
  const proof = oracle.prove(c, ctx);
  const affected = STATE_PARTS.filter((p) => proof[p]?.holds !== true);
  const base = { change: c, proof, affected };
  const rejected = rejection(c, ctx.next);
  if (rejected !== undefined)
    return {
      ...base,
      classification: 'Rejected',
      reason,
      why: rejected,
      // sync suspends a projection whose cursor cannot go on (with the cursor's reason), as it always has.
      ...(c.kind === 'cursor' ? { suspends: c.reason } : {}),
    };
  if (affected.length === 0) return { ...base, classification: 'Compatible', reason };
  // A first build has no old state to keep readable, and a cursor that does not continue (the source was
  // bumped, restored or replaced) has none worth keeping: the rebuild is the only outcome that is not stale,
  // so it runs beside the live projection where the kind allows and in one transaction where not,
  // whatever the disk (a rebuild that runs out of it fails, and the projection keeps its old rows).
  if (c.kind === 'cursor') return { ...base, classification: 'Rebuildable', reason };
  if (c.kind !== 'added') {
    const shadow = ctx.rules.shadow(next);
    if (!shadow.holds) return { ...base, classification: 'Rejected', reason: 'ALTER_CUSTOM_NO_SHADOW', why: shadow.why };
  }
  const space = ctx.facts.space;
  if (space !== undefined && space.neededBytes > space.freeBytes)
    return {
      ...base,
      classification: 'Rejected',
      reason: 'ALTER_NO_SPACE',
      why: `the rebuild needs about ${space.neededBytes} bytes and the target's file system has ${space.freeBytes} free`,
    };
  return { ...base, classification: 'Rebuildable', reason };
}
