import { mapAlter } from './alter.ts';
import { columnDecl, copiedColumn, findColumn, type TargetColumn } from '../../compiled.ts';
import type { ProjectionKind } from '../../kind.ts';
import { columnsReadBySql } from '../../read-set.ts';
import { keyColumnsOf, relationalTable } from '../relational/table.ts';

/** A map: chosen, renamed or computed columns of the rows that pass a filter, keyed by the source key. */
export const mapKind: ProjectionKind<'map'> = {
  kind: 'map',
  ...relationalTable,
  alter: mapAlter,
  // Plain copies read the columns they name; an expression or a filter may read any (sluice cannot tell which).
  columnsRead(def) {
    if (def.filter !== undefined) return undefined;
    const specs = Object.values(def.columns);
    if (!specs.every((c) => typeof c === 'string' || 'from' in c)) return undefined;
    return specs.map((c) => (typeof c === 'string' ? c : c.from));
  },
  // What SQLite compiles the columns and the filter to read; a computed column with a subquery or a non-deterministic function: all.
  reads: (_def, layout, source) =>
    columnsReadBySql(
      source,
      layout.columns.map((c) => c.expr),
      layout.filter,
      [...layout.columns.filter((c) => c.from === undefined).map((c) => c.expr), ...(layout.filter === null ? [] : [layout.filter])],
    ),
  layout(def, source) {
    const columns = Object.entries(def.columns).map(([as, spec]): TargetColumn => {
      if (typeof spec === 'string') return copiedColumn(findColumn(source, spec, def.name), as);
      if ('from' in spec) return copiedColumn(findColumn(source, spec.from, def.name), as);
      const declared = { type: spec.type ?? '', collate: spec.collate ?? 'BINARY' };
      return { name: as, expr: `(${spec.expr})`, decl: columnDecl(declared), ...declared };
    });
    const key = keyColumnsOf(def.name, source, columns);
    return { targetTable: def.target ?? def.name, columns, key, filter: def.filter === undefined ? null : `(${def.filter})` };
  },
};
