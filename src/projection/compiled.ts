import { createHash } from 'node:crypto';
import { InvalidInputError } from '../errors.ts';
import { foldIdent } from '../sqlite/quote.ts';
import { collationOf, columnCollations } from '../sqlite/collations.ts';
import type { TableInfo } from '../sqlite/introspect.ts';
import type { ProjectionDefinition, CustomHandler } from './definition.ts';

/*
 * What a compiled projection is: its target columns, key and table, the
 * source shape it was compiled against, and its fingerprint. compile.ts
 * makes one through the kind registry; the kinds read these types.
 */

/** A source column as projections see it: name, declared type (affinity) and collation. */
export interface SourceColumn {
  readonly name: string;
  readonly type: string;
  readonly collate: string;
}

/** What a projection needs to know of its source table; stored with the projection. */
export interface SourceShape {
  readonly table: string;
  readonly columns: readonly SourceColumn[];
  readonly keyColumns: readonly string[];
  readonly withoutRowid: boolean;
  readonly rowidAlias: boolean;
}

export interface TargetColumn {
  readonly name: string;
  /** SQL over the source columns (quoted names) producing this column. */
  readonly expr: string;
  /** Column declaration after the name: type and collation. */
  readonly decl: string;
  /** The source column when this is a plain copy. */
  readonly from?: string;
  /** The declared type of a computed column ('' when none: values stored as they come). */
  readonly type?: string;
}

interface CompiledBase<K extends ProjectionDefinition['kind']> {
  readonly definition: Extract<ProjectionDefinition, { kind: K }>;
  readonly name: string;
  readonly kind: K;
  readonly source: SourceShape;
  readonly targetTable: string;
  readonly columns: readonly TargetColumn[];
  /** Target key columns (plain copies of the source key). */
  readonly key: readonly string[];
  readonly filter: string | null;
  /** True for a mirror: target rows are the source images unchanged. */
  readonly identity: boolean;
  readonly fingerprint: string;
  /** Tables this projection owns in the target (for collision checks). */
  readonly ownedTables: readonly string[];
}

export type CompiledMirror = CompiledBase<'mirror'>;
export type CompiledMap = CompiledBase<'map'>;
export type CompiledFts5 = CompiledBase<'fts5'>;
export interface CompiledCustom extends CompiledBase<'custom'> {
  readonly handler?: CustomHandler;
}

/** A definition compiled against its source's shape, discriminated on `kind`. */
export type CompiledProjection = CompiledMirror | CompiledMap | CompiledFts5 | CompiledCustom;
/** The compiled projection of kind K. */
export type CompiledOf<K extends ProjectionDefinition['kind']> = Extract<CompiledProjection, { kind: K }>;

export function sourceShape(info: TableInfo): SourceShape {
  const coll = columnCollations(info.sql ?? '');
  return {
    table: info.name,
    columns: info.columns.map((c) => ({ name: c.name, type: c.type, collate: collationOf(coll, c.name) })),
    keyColumns: info.keyColumns,
    withoutRowid: info.withoutRowid,
    rowidAlias: info.rowidAlias,
  };
}

export function columnDecl(c: { readonly type: string; readonly collate: string }): string {
  return `${c.type === '' ? '' : c.type}${c.collate === 'BINARY' ? '' : ` COLLATE ${c.collate}`}`.trim();
}

export function findColumn(shape: SourceShape, column: string, projection: string): SourceColumn {
  const c = shape.columns.find((x) => x.name === column) ?? shape.columns.find((x) => foldIdent(x.name) === foldIdent(column));
  if (c === undefined) {
    throw new InvalidInputError(
      'UNKNOWN_COLUMN',
      `Projection ${projection}: source table ${shape.table} has no column ${column} (it has ${shape.columns.map((x) => x.name).join(', ')}). Fix the column name in the definition.`,
    );
  }
  return c;
}

/**
 * The fingerprint stored with the cursor: the definition as data (not code,
 * except a custom handler's declared version) plus the part of the source
 * shape the projection reads. A map of plain columns (no computed column,
 * no filter) and an fts5 index read only the columns they name and the
 * key, so a column added, dropped or renamed beside them (sluice alter)
 * leaves the fingerprint as it was and the projection goes on; a mirror or
 * a custom projection reads every column, and sluice cannot tell which
 * columns an SQL expression reads, so theirs covers the whole shape.
 */
export function definitionFingerprint(def: ProjectionDefinition, shape: SourceShape): string {
  const { handler, ...data } = def as ProjectionDefinition & { handler?: CustomHandler };
  const canonical = JSON.stringify({ def: data, handlerVersion: handler?.version ?? null, source: shapeRead(def, shape) });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** The part of `shape` a definition's rows depend on (see definitionFingerprint). */
function shapeRead(def: ProjectionDefinition, shape: SourceShape): SourceShape {
  let named: readonly string[] | undefined;
  if (def.kind === 'fts5') named = def.columns;
  if (def.kind === 'map' && def.filter === undefined) {
    const specs = Object.values(def.columns);
    if (specs.every((c) => typeof c === 'string' || 'from' in c)) named = specs.map((c) => (typeof c === 'string' ? c : c.from));
  }
  if (named === undefined) return shape;
  const read = new Set([...named, ...shape.keyColumns].map(foldIdent));
  return { ...shape, columns: shape.columns.filter((c) => read.has(foldIdent(c.name))) };
}

/** `p` as a projection of kind `kind` (an error if it is another kind). */
export function compiledAs<K extends ProjectionDefinition['kind']>(p: CompiledProjection, kind: K): CompiledOf<K> {
  if (p.kind !== kind) throw new Error(`projection ${p.name} is of kind ${p.kind}, not ${kind}`);
  return p as CompiledOf<K>;
}
