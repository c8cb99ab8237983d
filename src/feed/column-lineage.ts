import type { Db } from '../sqlite/index.ts';
import { foldIdent } from '../sqlite/index.ts';
import { readDdlLog, type DdlRecord } from '../capture/index.ts';
import type { Cursor } from './cursor.ts';

/*
 * Which column each column of a table is now, as of a cursor: the one rule
 * by which sluice tells that a name still means the column it meant. Only
 * the alters `sluice alter` recorded since the cursor say it (each records
 * which column before each column after is, following the RENAME COLUMN
 * statements it ran). A name is never taken for a column, and a rename is
 * never guessed: a name dropped and added again, renamed onto, or swapped
 * is another column; so is every column of a row an older sluice recorded
 * without lineage, and of a table made again. Callers: the cursor check
 * (cursor-check.ts, for every reader) and the classification of a change
 * (explain and sync, through AlterFacts.columns).
 */

/** A column of the table now and the column it was at the cursor (null: a column new since). */
export interface ColumnOrigin {
  readonly name: string;
  readonly from: string | null;
}

interface TableLineage {
  /** The table's columns when the cursor was made (before the first alter since). */
  readonly atCursor: readonly string[];
  /** Its columns after the last alter since, each with the column at the cursor it is. */
  readonly now: readonly ColumnOrigin[];
  /** The seq of each alter since that changed the table. */
  readonly alters: readonly number[];
  /** Whether one of them was recorded without lineage (by an older sluice). */
  readonly unrecorded: boolean;
}

/** The alters recorded after cursor `c` was made: at or after its seq, and (when it carries one) from its schema version on. */
export function altersSince(db: Db, c: Pick<Cursor, 'seq' | 'ext'>, log: readonly DdlRecord[] = readDdlLog(db, c.seq)): DdlRecord[] {
  const sv = c.ext?.sv;
  return log.filter((r) => r.seq >= c.seq && (typeof sv !== 'number' || r.svBefore >= sv));
}

/** What `alters` (oldest first) did to the columns of table `tid`; undefined when none changed it. */
export function lineageSince(alters: readonly DdlRecord[], tid: number): TableLineage | undefined {
  const same = (a: string, b: string) => foldIdent(a) === foldIdent(b);
  let atCursor: readonly string[] | undefined;
  let now: ColumnOrigin[] = [];
  const seqs: number[] = [];
  let unrecorded = false;
  for (const r of alters) {
    const t = r.tables.find((x) => x.tid === tid);
    if (t === undefined) continue;
    seqs.push(r.seq);
    if (atCursor === undefined) {
      atCursor = t.columnsBefore;
      now = t.columnsBefore.map((name) => ({ name, from: name }));
    }
    // Columns before that are not the ones the last alter left: DDL between two alters, which no row explains.
    const continues =
      now.length === t.columnsBefore.length && now.every((c, i) => same(c.name, t.columnsBefore[i] as string)) && t.change !== 'rebuilt';
    if (t.columnsFrom === undefined) unrecorded = true;
    const prior = continues ? now : [];
    now = t.columnsAfter.map((name, i) => {
      const f = t.columnsFrom?.[i];
      const was = f == null ? undefined : prior.find((c) => same(c.name, f));
      return { name, from: was?.from ?? null };
    });
  }
  return atCursor === undefined ? undefined : { atCursor, now, alters: seqs, unrecorded };
}

/** The names at the cursor that no longer name the column they named (dropped, renamed away, or given to another column). */
export function lostColumns(l: TableLineage): string[] {
  const same = (a: string, b: string) => foldIdent(a) === foldIdent(b);
  return l.atCursor.filter((n) => !l.now.some((c) => same(c.name, n) && c.from !== null && same(c.from, n)));
}
