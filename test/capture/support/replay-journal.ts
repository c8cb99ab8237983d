/*
 * The journal replayed into a model keyed by the key's exact bytes (what a
 * consumer of the changes stream holds), next to the source's rows. Tables
 * must be captured (images mode) while empty.
 */
import type { Db } from '../../../src/sqlite/index.ts';
import { journalEvents, tableCells, type Cell } from '../../support/journal.ts';

/** Rows as JSON arrays of cells, sorted. */
export type RowSet = string[];

/** Replays the journal of `table` (images mode) into a model keyed by the key's bytes; returns both row sets and the events that did not fit the model. */
export function replayAndSource(db: Db, table: string): { model: RowSet; source: RowSet; problems: string[] } {
  const t = db.prepare('SELECT columns, key_columns FROM main._sluice_tables WHERE name = ?').get(table) as {
    columns: string;
    key_columns: string;
  };
  const cols = JSON.parse(t.columns) as string[];
  const keys = (JSON.parse(t.key_columns) as string[]).map((k) => cols.indexOf(k));
  const keyOf = (img: readonly Cell[]) => keys.map((i) => img[i]).join('|');
  const model = new Map<string, Cell[]>();
  const problems: string[] = [];
  for (const e of journalEvents(db)) {
    if (e.table !== table) continue;
    if (e.op === 'insert') {
      const k = keyOf(e.after!);
      if (model.has(k)) problems.push(`seq ${e.seq}: insert of present key ${k}`);
      model.set(k, [...e.after!]);
    } else if (e.op === 'delete') {
      const k = keyOf(e.before!);
      if (!model.has(k)) problems.push(`seq ${e.seq}: delete of absent key ${k}`);
      model.delete(k);
    } else {
      const ko = keyOf(e.before!);
      if (!model.has(ko)) problems.push(`seq ${e.seq}: update of absent key ${ko}`);
      model.delete(ko);
      const kn = keyOf(e.after!);
      if (model.has(kn)) problems.push(`seq ${e.seq}: update onto present key ${kn}`);
      model.set(kn, [...e.after!]);
    }
  }
  const sort = (rows: Cell[][]): RowSet => rows.map((r) => JSON.stringify(r)).sort();
  return { model: sort([...model.values()]), source: sort(tableCells(db, table, '1', [], cols)), problems };
}
