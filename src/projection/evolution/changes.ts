import { foldIdent } from '../../sqlite/index.ts';
import type { Reason } from '../../reasons.ts';
import type { SourceColumn, SourceShape } from '../compiled.ts';
import type { ColumnOrigin } from '../../feed/index.ts';

/*
 * The changes explain (and later sync) tells apart between a projection as
 * stored in its target and as it would run now: the definition given (or
 * stored) compiled against today's source table. Each is classified on its
 * own (classify.ts); the projection's outcome is the worst of them.
 */

/** The four parts of a projection's state that a change may leave valid or not (003's state components). */
export const STATE_PARTS = ['rows', 'cursor', 'keys', 'auxiliary'] as const;
export type StatePart = (typeof STATE_PARTS)[number];

/** Definition changes whose effect is fixed by the kind (kinds.ts says which state parts each touches). */
type DefinitionChangeCode = Reason<
  | 'ALTER_COLUMNS_CHANGED'
  | 'ALTER_TARGET_CHANGED'
  | 'ALTER_SOURCE_CHANGED'
  | 'ALTER_KIND_CHANGED'
  | 'ALTER_FTS_OPTIONS_CHANGED'
  | 'ALTER_HANDLER_CHANGED'
>;

/** Compile failures of the new definition that no source change explains (Rejected). */
export type InvalidCode = Reason<
  'ALTER_UNKNOWN_COLUMN' | 'ALTER_KEY_MISSING' | 'ALTER_KEY_NOT_UNIQUE' | 'ALTER_SOURCE_TABLE_MISSING' | 'ALTER_DEFINITION_INVALID'
>;

export type AlterChange =
  /** Nothing the applier reads changed (the definition may be written differently and compile the same). */
  | { readonly kind: 'unchanged'; readonly restated: boolean }
  /** Not in the target yet: a first build. */
  | { readonly kind: 'added' }
  | { readonly kind: 'renamed'; readonly from: string; readonly to: string }
  | { readonly kind: 'definition'; readonly code: DefinitionChangeCode; readonly field: string; readonly parts: readonly StatePart[] }
  | { readonly kind: 'filter'; readonly from: string | null; readonly to: string | null }
  | {
      readonly kind: 'source-column';
      readonly change: 'added' | 'dropped' | 'renamed' | 'retyped';
      readonly column: string;
      /** The new name (renamed) or declaration (retyped). */
      readonly to?: string;
      /** Whether the projection reads the column (its rows or its auxiliary state depend on it). */
      readonly used: boolean;
    }
  | { readonly kind: 'source-key'; readonly from: readonly string[]; readonly to: readonly string[] }
  | { readonly kind: 'source-table'; readonly field: 'withoutRowid' | 'rowidAlias' }
  /** The stored cursor does not continue on the source (validateCursor's reason). */
  | { readonly kind: 'cursor'; readonly reason: string; readonly message: string; readonly rebuildable: boolean }
  /** An index a user added to a table of the projection (sluice makes none with CREATE INDEX). */
  | { readonly kind: 'target-index'; readonly name: string; readonly table: string; readonly unique: boolean }
  /** A table the projection would build that exists in the target and is not its own (sluice did not make it for the projection). */
  | { readonly kind: 'target-table'; readonly table: string; readonly message: string }
  | { readonly kind: 'invalid'; readonly code: InvalidCode; readonly errorCode: string; readonly message: string };

const same = (a: string, b: string) => foldIdent(a) === foldIdent(b);

/**
 * The column changes from the stored source shape to today's. Which column
 * a column of today's is comes from `origins` (what the alters sluice
 * recorded since the projection's cursor say: feed/column-lineage.ts); a
 * name is matched to the stored one of its name (ASCII case folded, as
 * SQLite compares names) only when no alter was recorded since. A rename is
 * never guessed from a column's position or declaration: one that was not
 * recorded is a dropped column and an added one, and so is a name dropped
 * and added again, or renamed onto.
 */
export function diffShapes(
  old: SourceShape,
  now: SourceShape,
  uses: (column: string) => boolean,
  origins?: readonly ColumnOrigin[],
): Extract<AlterChange, { kind: 'source-column' | 'source-key' | 'source-table' }>[] {
  const out: Extract<AlterChange, { kind: 'source-column' | 'source-key' | 'source-table' }>[] = [];
  const find = (cols: readonly SourceColumn[], name: string) => cols.find((c) => same(c.name, name));
  // The stored column each of today's is, if any (a column the stored shape has not heard of is new to it).
  const originOf = (name: string): string | null =>
    origins === undefined ? name : (origins.find((o) => same(o.name, name))?.from ?? null);
  const kept = new Map<SourceColumn, SourceColumn>();
  for (const n of now.columns) {
    const from = originOf(n.name);
    const o = from === null ? undefined : find(old.columns, from);
    if (o !== undefined && !kept.has(o)) kept.set(o, n);
  }
  const keptNow = new Set(kept.values());
  for (const c of old.columns) {
    const n = kept.get(c);
    if (n === undefined) out.push({ kind: 'source-column', change: 'dropped', column: c.name, used: uses(c.name) });
    else if (!same(n.name, c.name)) out.push({ kind: 'source-column', change: 'renamed', column: c.name, to: n.name, used: uses(c.name) });
  }
  for (const n of now.columns)
    if (!keptNow.has(n)) out.push({ kind: 'source-column', change: 'added', column: n.name, used: uses(n.name) });
  for (const [c, n] of kept) {
    // (anyNumeric: a shape stored before it was recorded, of an ordinary table's ANY column, reads as retyped once.)
    if (n.type !== c.type || n.collate !== c.collate || n.anyNumeric !== c.anyNumeric)
      out.push({
        kind: 'source-column',
        change: 'retyped',
        column: c.name,
        to: `${n.type} COLLATE ${n.collate}`.trim(),
        used: uses(c.name),
      });
  }
  const keys = (s: SourceShape) => s.keyColumns.map(foldIdent).join('\u0000');
  if (keys(old) !== keys(now)) out.push({ kind: 'source-key', from: old.keyColumns, to: now.keyColumns });
  if (old.withoutRowid !== now.withoutRowid) out.push({ kind: 'source-table', field: 'withoutRowid' });
  else if (old.rowidAlias !== now.rowidAlias) out.push({ kind: 'source-table', field: 'rowidAlias' });
  return out;
}

/** Whether SQL text names `column` as an identifier (bare or quoted): an over-approximation, which only makes fewer changes Compatible. */
export function mentions(sql: string, column: string): boolean {
  const esc = column.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_$])${esc}($|[^A-Za-z0-9_$])`, 'i').test(sql);
}
