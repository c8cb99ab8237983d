import type { Db } from '../../sqlite/index.ts';
import { SluiceError } from '../../errors.ts';
import type { ReasonOf } from '../../reasons.ts';
import {
  compileAgainstSource,
  parseStoredDefinition,
  type CompiledProjection,
  type CustomHandler,
  type ProjectionDefinition,
} from '../../projection/index.ts';

/**
 * A projection stored in the target that this sync cannot compile: its
 * stored definition no longer validates, or it no longer fits today's
 * source (a column renamed or dropped, a table gone). It is suspended in its
 * own row (DEFINITION_INVALID, SOURCE_COLUMN_MISSING, SOURCE_TABLE_MISSING) while the others sync; each
 * sync tries it again, so fixing the source (or passing a corrected
 * definition with --projection) is enough.
 */
export interface BrokenDefinition {
  readonly name: string;
  readonly reason: BrokenDefinitionReason;
  readonly detail: Record<string, unknown>;
}

/** Suspensions of kind `suspend` in src/reasons.ts that clear once the definition compiles. */
export type BrokenDefinitionReason = Extract<ReasonOf<'suspend'>, 'DEFINITION_INVALID' | 'SOURCE_COLUMN_MISSING' | 'SOURCE_TABLE_MISSING'>;

/** The reasons of BrokenDefinitionReason, to tell a stored suspension by. */
export const BROKEN_DEFINITION_REASONS: ReadonlySet<string> = new Set<BrokenDefinitionReason>([
  'DEFINITION_INVALID',
  'SOURCE_COLUMN_MISSING',
  'SOURCE_TABLE_MISSING',
]);

/** Compile-time codes that mean the source no longer has what the definition names. */
const COLUMN_CODES = new Set(['UNKNOWN_COLUMN', 'MISSING_KEY']);

/**
 * The suspension for a stored definition that failed at `stage`, or
 * undefined when the failure is not the definition's (rethrow it).
 */
export function brokenDefinition(name: string, table: string, stage: 'parse' | 'compile', err: unknown): BrokenDefinition | undefined {
  if (!(err instanceof SluiceError) || err.exitCode !== 1) return undefined;
  const detail = { table, code: err.code, message: err.message };
  return { name, reason: brokenReason(stage, err.code, err.message), detail };
}

/** The suspension reason of a stored definition that failed at `stage` with error `code` (explain predicts it by this). */
export function brokenReason(stage: 'parse' | 'compile', code: string, message: string): BrokenDefinitionReason {
  if (stage === 'parse') return 'DEFINITION_INVALID';
  if (code === 'UNKNOWN_SOURCE_TABLE') return 'SOURCE_TABLE_MISSING';
  if (COLUMN_CODES.has(code) || (code === 'BAD_EXPRESSION' && /no such column/i.test(message))) return 'SOURCE_COLUMN_MISSING';
  return 'DEFINITION_INVALID';
}

/**
 * Definition `d` compiled against the source as it is now (main on `db`),
 * as sync compiles it (compileAgainstSource: SQLite judges the names its
 * computed columns and filter read), or, when it no longer fits, the
 * suspension sync gives a stored definition then (what explain forecasts
 * by brokenReason). An error that is not the definition's is thrown.
 */
export function compileOrBroken(db: Db, d: ProjectionDefinition): CompiledProjection | BrokenDefinition {
  try {
    return compileAgainstSource(db, d);
  } catch (err) {
    const b = brokenDefinition(d.name, d.source, 'compile', err);
    if (b === undefined) throw err;
    return b;
  }
}

/**
 * A stored projection (its definition as the target keeps it) compiled
 * against today's source as the next sync compiles it (compileOrBroken),
 * or the suspension that sync gives it: what health and verify say of a
 * projection whose source changed under it. A custom handler's code is not
 * loaded (the data of the definition is what can stop fitting the source):
 * one given in code, not in a file the target names, is the caller's to
 * pass to each sync.
 */
export function compileStoredToday(
  db: Db,
  rec: { readonly name: string; readonly sourceTable: string; readonly definition: string },
): CompiledProjection | BrokenDefinition {
  let d: ProjectionDefinition;
  try {
    d = parseStoredDefinition(rec.definition, `stored definition of ${rec.name}`, STAND_IN);
  } catch (err) {
    const b = brokenDefinition(rec.name, rec.sourceTable, 'parse', err);
    if (b === undefined) throw err;
    return b;
  }
  return compileOrBroken(db, d);
}

/** Stands in for a custom handler whose code is not loaded: compiling reads only the definition's data. */
const STAND_IN: CustomHandler = { apply: () => undefined };

/** Whether compileOrBroken's answer is a suspension. */
export function isBroken(x: CompiledProjection | BrokenDefinition): x is BrokenDefinition {
  return 'reason' in x;
}
