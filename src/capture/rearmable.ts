import type { Db, TableInfo } from '../sqlite/index.ts';
import { checkForeignKeys, checkTable } from './gates.ts';
import { armedTriggers, keptExclusion } from './excluded.ts';
import { verifyCapture, type TableArming } from './arming.ts';

/**
 * What enable's re-arm of an unarmed table (which sync runs on opening its
 * source: rearmCapture) arms `a` with: the table as it is now and the
 * columns it keeps out of capture. Undefined when the re-arm leaves it
 * unarmed: it was dropped, enable refuses it as it is now (a shape such as
 * UNIQUE_FROM_ROWID), or an excluded column may have been renamed (enable
 * must be told the set). Reads only.
 */
export function rearmableAs(db: Db, a: TableArming): { readonly info: TableInfo; readonly kept: readonly string[] } | undefined {
  let info: TableInfo;
  try {
    info = checkTable(db, a.table.name);
    checkForeignKeys(db, [info.name]);
  } catch {
    return undefined;
  }
  const kept = keptExclusion(a.table, info, armedTriggers(db, a.table));
  return kept === undefined ? undefined : { info, kept };
}

/**
 * How the next sluice sync finds captured table `table` of source `db`:
 * `armed` (it is now), `rearmed` (it is not, and the re-arm sync runs on
 * opening the source arms it as it is: CAPTURE_REARMED, its projections
 * rebuild) or `unarmed` (the re-arm leaves it so: the source must be fixed
 * first). Reads only.
 */
export function nextSyncArming(db: Db, table: string): 'armed' | 'rearmed' | 'unarmed' {
  const a = armingOf(db, table);
  if (a === undefined) return 'unarmed';
  if (a.armed) return 'armed';
  return rearmableAs(db, a) === undefined ? 'unarmed' : 'rearmed';
}

/** Why captured table `table` of source `db` is not armed now, in words (its arming detail, which names the change it needs); undefined when it is armed or not captured. Reads only. */
export function unarmedDetail(db: Db, table: string): string | undefined {
  const a = armingOf(db, table);
  return a === undefined || a.armed ? undefined : a.detail;
}

/** The columns enable must be told to leave out to arm captured table `table` of source `db` again (its arming's `exclude`: a column left out may have moved); undefined when none need be. Reads only. */
export function unarmedExclusion(db: Db, table: string): readonly string[] | undefined {
  const a = armingOf(db, table);
  return a === undefined || a.armed ? undefined : a.exclude;
}

function armingOf(db: Db, table: string): TableArming | undefined {
  const v = verifyCapture(db);
  return v.problem === undefined ? v.tables.find((t) => t.table.name === table) : undefined;
}
