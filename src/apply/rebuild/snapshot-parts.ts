import type { Db, SqlValue } from '../../sqlite/index.ts';
import { quoteIdent } from '../../sqlite/index.ts';
import type { CapturedTable } from '../../capture/index.ts';
import { sourceRows, type SnapshotRows } from '../../feed/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { BUILD_CHUNK } from './shadow-build.ts';
import { keyChunk } from './shadow-fill.ts';

/** Rows a custom handler's init takes between two reports of a snapshot's progress. */
const ROWS_PER_REPORT = 1000;

/**
 * The source rows of a snapshot taken in one transaction, told to
 * `report` as they are read, of the table's count in this read
 * transaction: a kind that builds in SQL takes them in key-ordered parts of
 * BUILD_CHUNK rows (the chunks a protected rebuild copies, so a part is a
 * slice of the same snapshot), one that reads them one by one (a custom
 * handler's init) is counted as it reads. Only when someone shows progress:
 * the count and the parts' bounds cost a pass over the table's keys.
 */
export function reportedSourceRows(
  db: Db,
  p: CompiledProjection,
  table: CapturedTable,
  report: (rows: number, total: number) => void,
): SnapshotRows {
  const whole = sourceRows(db, table);
  const total = Number(
    db
      .prepare(`SELECT count(*) FROM main.${quoteIdent(table.name)}`)
      .pluck()
      .get() as bigint,
  );
  return {
    from: whole.from,
    *parts() {
      report(0, total);
      let read = 0;
      let lo: SqlValue[] | undefined;
      for (;;) {
        const part = keyChunk(db, p, table, lo);
        yield { from: part.from };
        if (part.hi === undefined) break;
        read += BUILD_CHUNK;
        report(Math.min(read, total), total);
        lo = part.hi;
      }
      report(total, total);
    },
    *rows() {
      report(0, total);
      let read = 0;
      for (const row of whole.rows()) {
        yield row;
        if (++read % ROWS_PER_REPORT === 0) report(read, total);
      }
      report(read, total);
    },
  };
}
