import { foldIdent } from '../sqlite/quote.ts';
import type { Reason } from '../reasons.ts';
import type { SourceColumn, SourceShape } from './compiled.ts';

/*
 * The changes explain (and later sync) tells apart between a projection as
 * stored in its target and as it would run now: the definition given (or
 * stored) compiled against today's source table. Each is classified on its
 * own (classify.ts); the projection's outcome is the worst of them.
 */

/** The four parts of a projection's state that a change may leave valid or not (003's state components). */
export const STATE_PARTS = ['rows', 'cursor', 'keys', 'auxiliary'] as const;
export type StatePart = (typeof STATE_PARTS)[number];

/** Definition changes whose effect is fixed by the kind (alter-kinds.ts says which state parts each touches). */
export type DefinitionChangeCode = Reason<
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
  | { readonly kind: 'invalid'; readonly code: InvalidCode; readonly errorCode: string; readonly message: string };

const same = (a: string, b: string) => foldIdent(a) === foldIdent(b);

/**
 * The column changes from the stored source shape to today's, by name
 * (ASCII case folded, as SQLite compares names). A column dropped and one
 * added at the same position with the same declaration, the count staying
 * the same, is a rename (ALTER TABLE RENAME COLUMN keeps the position; a
 * drop and an add put the new one last).
 */
export function diffShapes(
  old: SourceShape,
  now: SourceShape,
  uses: (column: string) => boolean,
): Extract<AlterChange, { kind: 'source-column' | 'source-key' | 'source-table' }>[] {
  const out: Extract<AlterChange, { kind: 'source-column' | 'source-key' | 'source-table' }>[] = [];
  const find = (cols: readonly SourceColumn[], name: string) => cols.find((c) => same(c.name, name));
  const dropped = old.columns.filter((c) => find(now.columns, c.name) === undefined);
  const added = now.columns.filter((c) => find(old.columns, c.name) === undefined);
  const renamed = new Map<string, string>();
  if (old.columns.length === now.columns.length) {
    for (const d of dropped) {
      const i = old.columns.indexOf(d);
      const a = now.columns[i];
      if (a !== undefined && added.includes(a) && a.type === d.type && a.collate === d.collate) renamed.set(d.name, a.name);
    }
  }
  for (const d of dropped) {
    const to = renamed.get(d.name);
    out.push(
      to === undefined
        ? { kind: 'source-column', change: 'dropped', column: d.name, used: uses(d.name) }
        : { kind: 'source-column', change: 'renamed', column: d.name, to, used: uses(d.name) },
    );
  }
  for (const a of added) {
    if ([...renamed.values()].includes(a.name)) continue;
    out.push({ kind: 'source-column', change: 'added', column: a.name, used: uses(a.name) });
  }
  for (const c of old.columns) {
    const n = find(now.columns, c.name);
    if (n !== undefined && (n.type !== c.type || n.collate !== c.collate))
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
