import { createHash } from 'node:crypto';
import { InvalidInputError } from '../errors.ts';
import { foldIdent, quoteIdent } from '../sqlite/quote.ts';
import { collationOf, columnCollations } from '../sqlite/collations.ts';
import type { TableInfo } from '../sqlite/introspect.ts';
import type { ProjectionDefinition, CustomHandler } from './definition.ts';

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

export interface CompiledProjection {
  readonly definition: ProjectionDefinition;
  readonly name: string;
  readonly kind: ProjectionDefinition['kind'];
  readonly source: SourceShape;
  readonly targetTable: string;
  readonly columns: readonly TargetColumn[];
  /** Target key columns (plain copies of the source key). */
  readonly key: readonly string[];
  readonly filter: string | null;
  /** True for a mirror: target rows are the source images unchanged. */
  readonly identity: boolean;
  readonly fingerprint: string;
  readonly handler?: CustomHandler;
  /** Tables this projection owns in the target (for collision checks). */
  readonly ownedTables: readonly string[];
}

/** Target tables a projection of this kind owns (so a rebuild may drop them): fts5 adds its `_src` key table. */
export function ownedTables(kind: string, targetTable: string): string[] {
  if (kind === 'fts5') return [targetTable, `${targetTable}_src`];
  if (kind === 'custom') return [];
  return [targetTable];
}

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

function find(shape: SourceShape, column: string, projection: string): SourceColumn {
  const c = shape.columns.find((x) => x.name === column) ?? shape.columns.find((x) => foldIdent(x.name) === foldIdent(column));
  if (c === undefined) {
    throw new InvalidInputError(
      'UNKNOWN_COLUMN',
      `Projection ${projection}: source table ${shape.table} has no column ${column} (it has ${shape.columns.map((x) => x.name).join(', ')}). Fix the column name in the definition.`,
    );
  }
  return c;
}

/** Turns a definition into the columns, key and SQL a projection runs, against its source's shape. */
export function compileProjection(def: ProjectionDefinition, shape: SourceShape): CompiledProjection {
  const copy = (c: SourceColumn, as: string = c.name): TargetColumn => ({
    name: as,
    expr: quoteIdent(c.name),
    decl: columnDecl(c),
    from: c.name,
  });
  let columns: TargetColumn[];
  let filter: string | null = null;
  let targetTable = def.target ?? (def.kind === 'mirror' ? shape.table : def.name);
  switch (def.kind) {
    case 'mirror':
      columns = shape.columns.map((c) => copy(c));
      targetTable = def.target ?? shape.table;
      break;
    case 'map':
      columns = Object.entries(def.columns).map(([as, spec]) => {
        if (typeof spec === 'string') return copy(find(shape, spec, def.name), as);
        if ('from' in spec) return copy(find(shape, spec.from, def.name), as);
        return {
          name: as,
          expr: `(${spec.expr})`,
          decl: columnDecl({ type: spec.type ?? '', collate: spec.collate ?? 'BINARY' }),
          type: spec.type ?? '',
        };
      });
      filter = def.filter === undefined ? null : `(${def.filter})`;
      break;
    case 'fts5':
      columns = def.columns.map((c) => copy(find(shape, c, def.name)));
      checkFtsColumns(def.name, columns, def.target ?? def.name, def.content === 'external');
      break;
    case 'custom':
      columns = [];
      break;
  }
  const lower = new Set<string>();
  for (const c of columns) {
    if (lower.has(foldIdent(c.name)))
      throw new InvalidInputError(
        'DUPLICATE_COLUMN',
        `Projection ${def.name}: target column ${c.name} appears twice. Give each target column a distinct name.`,
      );
    lower.add(foldIdent(c.name));
  }
  // The target key is the source key, carried by plain copies (so it is exact and non-NULL).
  let key: string[] = [];
  if (def.kind === 'mirror' || def.kind === 'map') {
    key = shape.keyColumns.map((k) => {
      const col = columns.find((c) => c.from !== undefined && foldIdent(c.from) === foldIdent(k));
      if (col === undefined) {
        throw new InvalidInputError(
          'MISSING_KEY',
          `Projection ${def.name}: the map must include the source key column ${k} of ${shape.table} as a plain column (e.g. "${k}": "${k}"), so target rows keep the source identity.`,
        );
      }
      return col.name;
    });
  } else if (def.kind === 'fts5') {
    key = [...shape.keyColumns];
  }
  const fingerprint = definitionFingerprint(def, shape);
  return {
    definition: def,
    name: def.name,
    kind: def.kind,
    source: shape,
    targetTable,
    columns,
    key,
    filter,
    identity: def.kind === 'mirror',
    fingerprint,
    ...(def.kind === 'custom' && def.handler !== undefined ? { handler: def.handler } : {}),
    ownedTables: ownedTables(def.kind, targetTable),
  };
}

/**
 * Names an FTS5 index cannot have as columns: FTS5 reserves rowid and rank,
 * and a column named like the index itself is its command column; with
 * external content, the key table beside it (`<target>_src`) holds the
 * values next to the key, stored as _k0, _k1, ...
 */
function checkFtsColumns(projection: string, columns: readonly TargetColumn[], target: string, external: boolean): void {
  for (const c of columns) {
    const lower = foldIdent(c.name);
    if (lower === 'rowid' || lower === 'rank' || lower === foldIdent(target) || (external && /^_k[0-9]+$/.test(lower))) {
      throw new InvalidInputError(
        'RESERVED_COLUMN',
        `Projection ${projection}: an fts5 index cannot have a column named ${c.name} (FTS5 reserves rowid and rank, a column named like the index ${target} is its command column, and with external content _k0, _k1, ... hold the key). Leave ${c.name} out, give the index another "target", or index a copy of the column under another name.`,
      );
    }
  }
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
