import { InvalidInputError } from '../errors.ts';
import { foldIdent, collationOf, columnCollations, columnDecl, declaredType, isAnyType, quoteIdent } from '../sqlite/index.ts';
import type { TableInfo } from '../sqlite/index.ts';
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
  /** Declared ANY in an ordinary table: NUMERIC affinity (sqlite/column-decl.ts). Absent otherwise. */
  readonly anyNumeric?: true;
}

/** What a projection needs to know of its source table; stored with the projection. */
export interface SourceShape {
  readonly table: string;
  readonly columns: readonly SourceColumn[];
  readonly keyColumns: readonly string[];
  readonly withoutRowid: boolean;
  readonly rowidAlias: boolean;
  /** Columns the source leaves out of capture (absent when none): in no column of `columns`, and refused by name when a definition reads one. */
  readonly excluded?: readonly string[];
}

export interface TargetColumn {
  readonly name: string;
  /** SQL over the source columns (quoted names) producing this column. */
  readonly expr: string;
  /** Column declaration after the name: type and collation (`type` and `collate` as SQL). */
  readonly decl: string;
  /** The source column when this is a plain copy. */
  readonly from?: string;
  /**
   * Its declared type ('' when none: values stored as they come): a plain
   * copy's is its source column's (declaredType), a computed column's the
   * definition's. Its affinity decides what a value written to it becomes.
   */
  readonly type: string;
  /** Its collation (BINARY when none). */
  readonly collate: string;
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
  /**
   * The source columns whose change can change its rows, the key included
   * (undefined: any column): an update that changes none of them leaves its
   * rows as they are, and the applier skips it (see the kind's `reads`).
   */
  readonly reads: readonly string[] | undefined;
  readonly fingerprint: string;
  /** Tables this projection owns in the target (for collision checks). */
  readonly ownedTables: readonly string[];
  /** Code a definition carries (a custom projection's handler): not part of the definition as data. */
  readonly handler?: CustomHandler;
}

/** A definition compiled against its source's shape, discriminated on `kind` (one member per kind of the registry). */
export type CompiledProjection = { [K in ProjectionDefinition['kind']]: CompiledBase<K> }[ProjectionDefinition['kind']];
/** The compiled projection of kind K. */
export type CompiledOf<K extends ProjectionDefinition['kind']> = Extract<CompiledProjection, { kind: K }>;
export type CompiledMirror = CompiledOf<'mirror'>;
export type CompiledMap = CompiledOf<'map'>;
export type CompiledFts5 = CompiledOf<'fts5'>;
export type CompiledCustom = CompiledOf<'custom'>;

/** The shape of a source table (`info` as describeTable reads it) less the columns it leaves out of capture. */
export function sourceShape(info: TableInfo, excluded: readonly string[] = []): SourceShape {
  const coll = columnCollations(info.sql ?? '');
  const out = new Set(excluded.map(foldIdent));
  return {
    table: info.name,
    columns: info.columns
      .filter((c) => !out.has(foldIdent(c.name)))
      .map((c) => ({
        name: c.name,
        type: c.type,
        collate: collationOf(coll, c.name),
        ...(!info.strict && isAnyType(c.type) ? { anyNumeric: true as const } : {}),
      })),
    keyColumns: info.keyColumns,
    withoutRowid: info.withoutRowid,
    rowidAlias: info.rowidAlias,
    ...(excluded.length === 0 ? {} : { excluded: [...excluded] }),
  };
}

/** The error for a definition that reads `column`, which `shape`'s table leaves out of capture (undefined: it is not left out). */
export function excludedColumnRead(
  shape: SourceShape,
  column: string,
  projection: string,
  what = `column ${column}`,
): InvalidInputError | undefined {
  const name = shape.excluded?.find((x) => foldIdent(x) === foldIdent(column));
  if (name === undefined) return undefined;
  return new InvalidInputError(
    'EXCLUDED_COLUMN_READ',
    `Projection ${projection}: ${what} reads column ${name} of ${shape.table}, which is left out of capture (enable --exclude), so no snapshot, event or target has it. Take ${name} out of the definition, or capture it again (sluice enable SRC ${shape.table} --exclude with the columns still to leave out).`,
  );
}

/**
 * Whether tables built over the source shape stored as `storedShape` (a
 * projection's or a build's JSON) may hold a column that `now` has not: a
 * column it had is left out of capture since (or dropped, or renamed, at
 * the source). Such tables are dropped scrubbed (sqlite/scrub.ts), not
 * plainly. The one rule for every path that rebuilds a target (sync,
 * import of JSONL or segments, subscribe): it reads the columns only, as
 * `now.excluded` is known to a sync alone (an export's table shape and a
 * segment's carry the captured columns, not the excluded ones).
 */
export function losesColumn(storedShape: string, now: SourceShape): boolean {
  let columns: unknown;
  try {
    columns = (JSON.parse(storedShape) as { columns?: unknown }).columns;
  } catch {
    return true; // (Not known: dropped as if it did.)
  }
  if (!Array.isArray(columns)) return true;
  const kept = new Set(now.columns.map((c) => foldIdent(c.name)));
  return columns.some((c) => !kept.has(foldIdent(String((c as { name?: unknown } | null)?.name))));
}

export { columnDecl } from '../sqlite/index.ts';

/** A target column that is a plain copy of source column `c`, named `name`: declared as `c` is (columnDecl). */
export function copiedColumn(c: SourceColumn, name: string = c.name): TargetColumn {
  return { name, expr: quoteIdent(c.name), decl: columnDecl(c), from: c.name, type: declaredType(c), collate: c.collate };
}

export function findColumn(shape: SourceShape, column: string, projection: string): SourceColumn {
  const c = shape.columns.find((x) => x.name === column) ?? shape.columns.find((x) => foldIdent(x.name) === foldIdent(column));
  if (c === undefined) {
    const excluded = excludedColumnRead(shape, column, projection);
    if (excluded !== undefined) throw excluded;
    throw new InvalidInputError(
      'UNKNOWN_COLUMN',
      `Projection ${projection}: source table ${shape.table} has no column ${column} (it has ${shape.columns.map((x) => x.name).join(', ')}). Fix the column name in the definition.`,
    );
  }
  return c;
}

/** `p` as a projection of kind `kind` (an error if it is another kind). */
export function compiledAs<K extends ProjectionDefinition['kind']>(p: CompiledProjection, kind: K): CompiledOf<K> {
  if (p.kind !== kind) throw new Error(`projection ${p.name} is of kind ${p.kind}, not ${kind}`);
  return p as CompiledOf<K>;
}
