import { InvalidInputError } from '../errors.ts';
import { foldIdent } from '../sqlite/index.ts';
import { parseDefinition, type ProjectionDefinition } from './definition.ts';
import { definitionFingerprint } from './definition-fingerprint.ts';
import type { CompiledProjection, SourceShape } from './compiled.ts';
import { KINDS, kindNamed } from './kinds/registry.ts';

export { definitionFingerprint } from './definition-fingerprint.ts';

export {
  columnDecl,
  compiledAs,
  sourceShape,
  type CompiledCustom,
  type CompiledFts5,
  type CompiledMap,
  type CompiledMirror,
  type CompiledOf,
  type CompiledProjection,
  type SourceColumn,
  type SourceShape,
  type TargetColumn,
} from './compiled.ts';

/**
 * Every table a build of `p` makes when its main table is `at` (default its
 * own): those it owns, and those SQLite makes beside them (an FTS5 table's).
 * A table of any of these names that is not the projection's refuses the build.
 */
export function madeTablesAt(p: CompiledProjection, at: string = p.targetTable): string[] {
  return [...ownedTablesAt(p, at), ...(KINDS[p.kind].sqliteTables?.(at) ?? [])];
}

/** madeTablesAt for a stored projection (its definition as JSON), at its own main table. */
export function madeTables(r: { readonly kind: string; readonly targetTable: string; readonly definition: string }): string[] {
  return [...ownedTables(r), ...(kindNamed(r.kind)?.sqliteTables?.(r.targetTable) ?? [])];
}

/**
 * Target tables a stored projection owns (so a rebuild may drop them), when
 * its main table is `at` (default: its own): from its kind, target table
 * and definition (JSON, as stored).
 */
export function ownedTables(
  r: { readonly kind: string; readonly targetTable: string; readonly definition: string },
  at?: string,
): string[] {
  const kind = kindNamed(r.kind);
  if (kind === undefined) return [];
  let def: unknown;
  try {
    def = JSON.parse(r.definition);
  } catch {
    def = {};
  }
  return (kind.ownedTables as (t: string, d: unknown) => string[])(at ?? r.targetTable, def ?? {});
}

/**
 * The fingerprint `p` has over its source shape as an export file, a
 * segment or a stream states it: the captured columns, without the names of
 * those left out of capture, which a table line never carries (export.ts).
 * A target built by import or subscribe stores this one; its rows are the
 * same as under `p.fingerprint`, which sync stores.
 */
export function statedFingerprint(p: CompiledProjection): string {
  if (p.source.excluded === undefined) return p.fingerprint;
  const { excluded: _excluded, ...shape } = p.source;
  return definitionFingerprint(
    p.definition,
    shape,
    (KINDS[p.kind].columnsRead as (d: ProjectionDefinition) => readonly string[] | undefined)(p.definition),
  );
}

/** The tables a compiled projection owns when its main table is `at` (a shadow's name while it is built). */
export function ownedTablesAt(p: CompiledProjection, at: string): string[] {
  return (KINDS[p.kind].ownedTables as (t: string, d: ProjectionDefinition) => string[])(at, p.definition);
}

/**
 * A mirror of `p`'s source table (every column, keyed by the source key)
 * with its table at `at`: the staged copy of the source rows that a replay
 * rebuild (apply/rebuild/shadow-build.ts) fills its shadow from.
 */
export function stagedCopyOf(p: CompiledProjection, at: string): CompiledProjection {
  // Parsed, so that it is stored (and fingerprinted) as a stored definition reads back.
  const def = parseDefinition({ name: p.name, source: p.source.table, kind: 'mirror' }, `the staged copy of ${p.name}`);
  return { ...compileProjection(def, p.source), targetTable: at };
}

/** Turns a definition into the columns, key and SQL a projection runs, against its source's shape. */
export function compileProjection(given: ProjectionDefinition, shape: SourceShape): CompiledProjection {
  // SQLite names are case-blind: a "source" spelt in another case is the table, compiled and stored as the source spells it.
  const def =
    given.source !== shape.table && foldIdent(given.source) === foldIdent(shape.table) ? { ...given, source: shape.table } : given;
  // One kind's layout, for the definition of that kind.
  const layout = (KINDS[def.kind].layout as (d: ProjectionDefinition, s: SourceShape) => ReturnType<(typeof KINDS)['mirror']['layout']>)(
    def,
    shape,
  );
  const lower = new Set<string>();
  for (const c of layout.columns) {
    if (lower.has(foldIdent(c.name)))
      throw new InvalidInputError(
        'DUPLICATE_COLUMN',
        `Projection ${def.name}: target column ${c.name} appears twice. Give each target column a distinct name.`,
      );
    lower.add(foldIdent(c.name));
  }
  return {
    definition: def,
    name: def.name,
    kind: def.kind,
    source: shape,
    targetTable: layout.targetTable,
    columns: layout.columns,
    key: layout.key,
    filter: layout.filter,
    identity: layout.identity === true,
    reads: (KINDS[def.kind].reads as (d: ProjectionDefinition, l: typeof layout, s: SourceShape) => readonly string[] | undefined)(
      def,
      layout,
      shape,
    ),
    fingerprint: definitionFingerprint(
      def,
      shape,
      (KINDS[def.kind].columnsRead as (d: ProjectionDefinition) => readonly string[] | undefined)(def),
    ),
    ...('handler' in def && def.handler !== undefined ? { handler: def.handler } : {}),
    ownedTables: (KINDS[def.kind].ownedTables as (t: string, d: ProjectionDefinition) => string[])(layout.targetTable, def),
  } as CompiledProjection;
}
