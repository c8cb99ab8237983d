import type { Db } from '../sqlite/connection.ts';
import { withReadTransaction } from '../sqlite/connection.ts';
import { TABLES_TABLE } from '../capture/schema.ts';
import { validateCursor, type RebuildReason } from './validate.ts';

export interface ChangedSince {
  /** True when any listed table may have changed after the cursor. */
  readonly changed: boolean;
  /** Set when the cursor cannot be continued: the consumer must rebuild (and `changed` is true). */
  readonly rebuild?: RebuildReason | 'CURSOR_MALFORMED';
  /** The highest last_seq of the listed tables. */
  readonly lastSeq?: number;
}

const stmts = new WeakMap<Db, { get: (names: string) => unknown }>();

/**
 * The cheap poll: did any of `tables` change after `cursor`? O(1) in the
 * journal size: it compares each table's recorded last seq with the cursor
 * (contract 000). An untracked or unarmed table counts as always changed.
 *
 * @example
 * if (changedSince(db, cursor, ['issues']).changed) rebuildIssueCache();
 */
export function changedSince(db: Db, cursor: string, tables?: readonly string[]): ChangedSince {
  return withReadTransaction(db, () => {
    const v = validateCursor(db, cursor);
    if (v.status !== 'ok') return { changed: true, rebuild: v.reason };
    const names = tables === undefined || tables.length === 0 ? v.cursor.tables : tables;
    for (const n of names) {
      const a = v.view.tables.get(n);
      // Untracked or unarmed: writes may be unrecorded, so it is always changed.
      if (a === undefined || !a.armed) return { changed: true, rebuild: a === undefined ? 'TABLE_UNTRACKED' : 'TABLE_UNARMED' };
    }
    let stmt = stmts.get(db);
    if (stmt === undefined) {
      const s = db.prepare(`SELECT max(last_seq) AS m FROM main.${TABLES_TABLE} WHERE name IN (SELECT value FROM json_each(?))`).pluck();
      stmt = { get: (j) => s.get(j) };
      stmts.set(db, stmt);
    }
    const last = Number((stmt.get(JSON.stringify(names)) as bigint | null) ?? 0n);
    return { changed: last > v.cursor.seq, lastSeq: last };
  });
}
