import { SluiceError } from '../../errors.ts';
import type { ReasonOf } from '../../reasons.ts';

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
