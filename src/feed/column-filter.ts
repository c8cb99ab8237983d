import type { Db } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { journalHasMask, type CapturedTable, anyChangedSql, maskFor, MASK_COLUMN, OP_UPDATE } from '../capture/index.ts';

/*
 * The column filter of `changes --columns` and updatesSince's `columns`:
 * only the updates that changed one of the named columns (by the event's
 * changed-column mask), plus every insert and delete, and every update that
 * changed the key (a reader keyed by it sees a row leave one key and arrive
 * at another). An update without a mask (journaled before capture format 3)
 * changed every column, so it passes.
 */

/**
 * SQL to AND to a WHERE over journal rows (columns tid, op, mask) that keeps
 * the events the filter lets through; '' for no filter. Every table read
 * must have every named column: a name one of them lacks is refused,
 * naming the table and its columns.
 */
export function columnFilterSql(db: Db, tables: readonly CapturedTable[], columns: readonly string[] | undefined): string {
  if (columns === undefined) return '';
  if (columns.length === 0)
    throw new InvalidInputError(
      'UNKNOWN_COLUMN',
      `The column filter names no column. Name the columns whose changes you want (e.g. --columns title,body), or leave the filter out.`,
    );
  const tests = tables.map((t) => {
    const read = maskFor(t.columns, [...columns, ...t.keyColumns], t.name);
    return `WHEN ${t.tid} THEN ${anyChangedSql(MASK_COLUMN, read)}`;
  });
  // A journal not upgraded yet has no masks: every update changed every column.
  if (!journalHasMask(db)) return '';
  return ` AND (op <> ${OP_UPDATE} OR CASE tid ${tests.join(' ')} ELSE 1 END)`;
}
