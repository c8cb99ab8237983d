import { foldIdent } from '../sqlite/quote.ts';
import { definitionFingerprint, type CompiledProjection } from './compile.ts';
import type { CustomDefinition, Fts5Definition, ProjectionDefinition } from './definition.ts';
import { mentions, type AlterChange, type StatePart } from './alter-changes.ts';

/*
 * What classifying a change needs to know of each kind of projection, in
 * one place (so it can move into a ProjectionKind registry whole): which
 * source columns it reads, what its auxiliary state is, which definition
 * changes it can tell apart and what each touches, and whether sluice can
 * build a shadow of it for a protected rebuild.
 */

export type ProjectionKind = ProjectionDefinition['kind'];

export interface Proof {
  readonly holds: boolean;
  readonly why: string;
}

export interface KindAlterRules {
  /** What this kind keeps beside its rows (the auxiliary state of 003). */
  readonly auxiliary: string;
  /** Whether the projection's rows or auxiliary state depend on source column `column`. */
  uses(p: CompiledProjection, column: string): boolean;
  /** The kind's own definition changes between two compilations of one kind, source table and target table. */
  diff(old: CompiledProjection, next: CompiledProjection, oldFingerprint: string): AlterChange[];
  /** What a projection rename does to the auxiliary state. */
  readonly renameAuxiliary: Proof;
  /** What a change to a source column the projection reads does to the auxiliary state. */
  readonly usedColumnAuxiliary: Proof;
  /** Whether a shadow of it can be built and swapped in (a protected rebuild). */
  shadow(p: Pick<CompiledProjection, 'ownedTables'>): Proof;
}

const hold = (why: string): Proof => ({ holds: true, why });
const fail = (why: string): Proof => ({ holds: false, why });

const usesCopy = (p: CompiledProjection, column: string) =>
  p.source.keyColumns.some((k) => foldIdent(k) === foldIdent(column)) ||
  p.columns.some((c) => (c.from !== undefined ? foldIdent(c.from) === foldIdent(column) : mentions(c.expr, column)));

const json = (x: unknown) => JSON.stringify(x);

const ownTables: KindAlterRules['shadow'] = (p) =>
  hold(`sluice owns its tables (${p.ownedTables.join(', ')}): a shadow of each is built beside them and swapped in`);

export const KIND_ALTER_RULES = {
  mirror: {
    auxiliary: 'none: the target rows are the source rows',
    uses: () => true,
    diff: () => [],
    renameAuxiliary: hold('a mirror keeps no state but its rows'),
    usedColumnAuxiliary: hold('a mirror keeps no state but its rows'),
    shadow: ownTables,
  },
  map: {
    auxiliary: 'none: the target rows are computed from each source row alone',
    uses: (p, column) => usesCopy(p, column) || (p.filter !== null && mentions(p.filter, column)),
    diff(old, next) {
      const out: AlterChange[] = [];
      if (json(old.columns) !== json(next.columns))
        out.push({ kind: 'definition', code: 'ALTER_COLUMNS_CHANGED', field: 'columns', parts: ['rows'] });
      if (old.filter !== next.filter) out.push({ kind: 'filter', from: old.filter, to: next.filter });
      return out;
    },
    renameAuxiliary: hold('a map keeps no state but its rows'),
    usedColumnAuxiliary: hold('a map keeps no state but its rows'),
    shadow: ownTables,
  },
  fts5: {
    auxiliary: 'the FTS5 index contents (its tokens, built with its tokenizer) and its key table <target>_src',
    uses: usesCopy,
    diff(old, next) {
      const out: AlterChange[] = [];
      if (json(old.columns) !== json(next.columns))
        out.push({ kind: 'definition', code: 'ALTER_COLUMNS_CHANGED', field: 'columns', parts: ['rows', 'auxiliary'] });
      const o = old.definition as Fts5Definition;
      const n = next.definition as Fts5Definition;
      if (o.content !== n.content)
        out.push({ kind: 'definition', code: 'ALTER_FTS_OPTIONS_CHANGED', field: 'content', parts: ['rows', 'auxiliary'] });
      if (o.tokenize !== n.tokenize)
        out.push({ kind: 'definition', code: 'ALTER_FTS_OPTIONS_CHANGED', field: 'tokenize', parts: ['auxiliary'] });
      return out;
    },
    renameAuxiliary: hold('the FTS5 index is named by its target table, not by the projection'),
    usedColumnAuxiliary: fail('the FTS5 index holds tokens of the column as it was'),
    shadow: ownTables,
  },
  custom: {
    auxiliary: 'whatever its handler keeps in the target (sluice cannot see it)',
    // A handler gets every column of every event.
    uses: () => true,
    diff(old, next, oldFingerprint) {
      // The handler is code: only its declared version and module are known, through the fingerprint.
      const asOld = definitionFingerprint({ ...(next.definition as CustomDefinition), name: old.name }, old.source);
      return asOld === oldFingerprint
        ? []
        : [{ kind: 'definition', code: 'ALTER_HANDLER_CHANGED', field: 'handler', parts: ['auxiliary'] }];
    },
    renameAuxiliary: fail('a handler is given the projection name (ctx.projection), and may keep its state by it'),
    usedColumnAuxiliary: fail("a handler's state is built from whole rows: nothing proves it fits the new columns"),
    shadow: (p) =>
      p.ownedTables.length > 0
        ? ownTables(p)
        : fail('its handler declares no tables of its own, so sluice cannot build a shadow beside them and swap it in'),
  },
} as const satisfies Record<ProjectionKind, KindAlterRules>;

/** The rules of a kind, for a kind read back from a target (a string). */
export function kindRules(kind: string): KindAlterRules | undefined {
  return Object.hasOwn(KIND_ALTER_RULES, kind) ? KIND_ALTER_RULES[kind as ProjectionKind] : undefined;
}

/** The state parts a definition change of `code` touches when the kinds differ or the target moves. */
export const ALL_PARTS: readonly StatePart[] = ['rows', 'cursor', 'keys', 'auxiliary'];
