import { mirrorAlter } from './alter.ts';
import { copiedColumn, type SourceColumn } from '../../compiled.ts';
import type { ProjectionKind } from '../../kind.ts';
import { keyColumnsOf, relationalTable } from '../relational/table.ts';

/** A mirror: the source table's rows as they are, under the source table's name by default. */
export const mirrorKind: ProjectionKind<'mirror'> = {
  kind: 'mirror',
  ...relationalTable,
  alter: mirrorAlter,
  // A mirror copies every column.
  columnsRead: () => undefined,
  // Every column is copied: no update is skipped.
  reads: () => undefined,
  layout(def, source) {
    const columns = source.columns.map((c: SourceColumn) => copiedColumn(c));
    return { targetTable: def.target ?? source.table, columns, key: keyColumnsOf(def.name, source, columns), filter: null, identity: true };
  },
};
