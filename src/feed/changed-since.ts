import type { Statement } from 'better-sqlite3';
import type { Db } from '../sqlite/connection.ts';
import { connectionState, slot } from '../sqlite/connection-state.ts';
import { validateCursor, type RebuildReason } from './cursor-check.ts';
import type { Reason } from '../reasons.ts';

export interface ChangedSince {
  /** True when any listed table may have changed after the cursor. */
  readonly changed: boolean;
  /** Set when the cursor cannot be continued: the consumer must rebuild (and `changed` is true). */
  readonly rebuild?: RebuildReason | Reason<'CURSOR_MALFORMED'>;
  /** The highest last_seq of the listed tables. */
  readonly lastSeq?: number;
}

/*
 * The poll runs thousands of times on one connection: its read transaction
 * uses prepared statements (withReadTransaction prepares its SQL per call),
 * and the last seqs come from the source view, which reads them in the same
 * transaction.
 */
interface TxnStatements {
  readonly begin: Statement;
  readonly start: Statement;
  readonly commit: Statement;
}
const txnStatements = slot('read-transaction-statements', (db): TxnStatements => ({
  begin: db.prepare('BEGIN DEFERRED'),
  start: db.prepare('SELECT 1 FROM main.sqlite_schema LIMIT 1'),
  commit: db.prepare('COMMIT'),
}));

/** withReadTransaction with cached statements: BEGIN DEFERRED, a first read that fixes the snapshot, COMMIT. */
function inReadTransaction<T>(db: Db, fn: () => T): T {
  if (db.inTransaction) return fn();
  const s = connectionState(db).get(txnStatements);
  s.begin.run();
  try {
    s.start.get();
    const out = fn();
    s.commit.run();
    return out;
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

/**
 * The cheap poll: did any of `tables` change after `cursor`? O(1) in the
 * journal size: it compares each table's recorded last seq with the cursor
 * (contract 000). An untracked or unarmed table counts as always changed.
 *
 * @example
 * if (changedSince(db, cursor, ['issues']).changed) rebuildIssueCache();
 */
export function changedSince(db: Db, cursor: string, tables?: readonly string[]): ChangedSince {
  return inReadTransaction(db, () => {
    // A schema window is reported after the listed tables' own state, which says more.
    const v = validateCursor(db, cursor, undefined, { allowSchemaWindow: true, acceptAlters: false });
    if (v.status !== 'ok') return { changed: true, rebuild: v.reason };
    const names = tables === undefined || tables.length === 0 ? v.cursor.tables : tables;
    let last = 0;
    for (const n of names) {
      const a = v.view.tables.get(n);
      // Untracked or unarmed: writes may be unrecorded, so it is always changed.
      if (a === undefined || !a.armed) return { changed: true, rebuild: a === undefined ? 'TABLE_UNTRACKED' : 'TABLE_UNARMED' };
      if (a.table.lastSeq > last) last = a.table.lastSeq;
    }
    if (v.window === true) return { changed: true, rebuild: 'SCHEMA_WINDOW' };
    return { changed: last > v.cursor.seq, lastSeq: last };
  });
}
