import type { Db } from '../sqlite/index.ts';
import { withReadTransaction } from '../sqlite/index.ts';
import { validateCursor, type RebuildReason } from './cursor-check.ts';
import { capturedTable } from './source-view.ts';
import type { Reason } from '../reasons.ts';

export interface ChangedSince {
  /** True when any listed table may have changed after the cursor. */
  readonly changed: boolean;
  /**
   * Set when the cursor cannot be continued, or does not cover a listed
   * table (TABLE_NOT_IN_CURSOR): the consumer must rebuild, from a new
   * cursor that covers the table (and `changed` is true).
   */
  readonly rebuild?: RebuildReason | Reason<'CURSOR_MALFORMED' | 'TABLE_NOT_IN_CURSOR'>;
  /** The highest last_seq of the listed tables. */
  readonly lastSeq?: number;
}

/*
 * The poll runs thousands of times on one connection: its read transaction
 * (withReadTransaction) runs prepared statements, and the last seqs come
 * from the source view, which reads them in the same transaction.
 */

/**
 * The cheap poll: did any of `tables` change after `cursor`? O(1) in the
 * journal size: it compares each table's recorded last seq with the cursor
 * (contract 000). An untracked or unarmed table counts as always changed,
 * and so does one the cursor does not cover (TABLE_NOT_IN_CURSOR): its last
 * seq says nothing of the writes made before it was captured, or while it
 * was not, since the cursor.
 *
 * @example
 * if (changedSince(db, cursor, ['issues']).changed) rebuildIssueCache();
 */
export function changedSince(db: Db, cursor: string, tables?: readonly string[]): ChangedSince {
  return withReadTransaction(db, () => {
    // A schema window is reported after the listed tables' own state, which says more.
    const v = validateCursor(db, cursor, undefined, { allowSchemaWindow: true, acceptAlters: false });
    if (v.status !== 'ok') return { changed: true, rebuild: v.reason };
    const names = tables === undefined || tables.length === 0 ? v.cursor.tables : tables;
    let last = 0;
    for (const n of names) {
      // Matched as SQLite matches names (ASCII case folded), as the cursor's own tables were.
      const a = capturedTable(v.view, n);
      // Untracked or unarmed: writes may be unrecorded, so it is always changed.
      if (a === undefined || !a.armed) return { changed: true, rebuild: a === undefined ? 'TABLE_UNTRACKED' : 'TABLE_UNARMED' };
      // Not the cursor's (captured since, or again since): writes before that are in no last seq.
      if (!v.tables.some((t) => t.tid === a.table.tid)) return { changed: true, rebuild: 'TABLE_NOT_IN_CURSOR' };
      if (a.table.lastSeq > last) last = a.table.lastSeq;
    }
    if (v.window === true) return { changed: true, rebuild: 'SCHEMA_WINDOW' };
    return { changed: last > v.cursor.seq, lastSeq: last };
  });
}
