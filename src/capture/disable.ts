import type { Db } from '../sqlite/index.ts';
import { withWriteTransaction, quoteIdent, foldIdent, schemaVersion } from '../sqlite/index.ts';
import { FailClosedError, InvalidInputError } from '../errors.ts';
import type { Reason } from '../reasons.ts';
import { journalHasMask, readState, readTables } from './catalog.ts';
import { anchorBodySql, anchorDigest, TOMBSTONE_OP, TOMBSTONE_TID } from './anchor-digest.ts';
import { dropOwnObjects, recordOwnDdl } from './enable.ts';
import { enableHint } from './enable-hint.ts';
import {
  CONSUMERS_TABLE,
  JOURNAL_TABLE,
  journalColumn,
  LAST_TABLE,
  MASK_COLUMN,
  PENDING_TABLE,
  STATE_TABLE,
  TABLES_TABLE,
  triggerNames,
} from './schema.ts';
import { forgetArming } from './arming.ts';
import { RUN_ON_SOURCE, refuseTarget } from './target-guard.ts';

/** A table whose capture `disable` took off, and why its readers' cursors no longer continue. */
export interface DisabledTable {
  readonly table: string;
  readonly reason: Reason<'TABLE_DISABLED'>;
}

export interface DisableResult {
  /** The objects dropped: every `_sluice_` object, or the named tables' triggers. */
  readonly removed: readonly string[];
  /** With tables: the tables taken out of capture. */
  readonly tables?: readonly DisabledTable[];
  /** With tables: the generation after the disable (it moved by one). */
  readonly generation?: number;
  /** With tables: the journal rows of those tables emptied with them (made tombstones: see disableTables). */
  readonly purgedEvents?: number;
}

/**
 * Removes capture from a source: with no `tables`, every object sluice made
 * (triggers, journal and metadata) in one transaction, and readers then see
 * no capture and rebuild (a later enable creates a new sourceId). With
 * `tables`, only those tables' capture (disableTables).
 *
 * @example
 * disable(openDatabase('app.db')); // { removed: ['_sluice_t1_ins', ...] }
 * disable(openDatabase('app.db'), ['labels']); // { removed: ['_sluice_t3_ins', ...], tables: [{ table: 'labels', reason: 'TABLE_DISABLED' }], ... }
 */
export function disable(db: Db, tables: readonly string[] = []): DisableResult {
  if (tables.length > 0) return disableTables(db, tables);
  return { removed: withWriteTransaction(db, () => dropOwnObjects(db)) };
}

/**
 * Takes capture off some tables, in one BEGIN IMMEDIATE transaction (beside
 * live writers, waiting up to the busy timeout): their triggers, their rows
 * in `_sluice_tables` and `_sluice_last` and their notes in `_sluice_pending`
 * are deleted, their events made tombstones (below), and the generation moves
 * (`last_reason` TABLE_DISABLED). The other tables stay armed and their
 * readers go on (the DDL is recorded as sluice's own, so it is no schema
 * window). A reader of a disabled table finds it untracked (TABLE_UNTRACKED:
 * a projection is suspended until the table is captured again or the
 * projection dropped); enabling it again arms it at the new generation, so
 * a cursor made before never continues across the time it was not captured
 * (TABLE_REARMED). Every name must be a captured table; otherwise nothing
 * changes.
 *
 * The events go now, not at pruning: nobody can read them any more (their
 * table is not captured, so no cursor over it continues), and they would
 * sit in the journal, and in its counts, until the retention bound passed
 * them. Each becomes a tombstone (TOMBSTONE_OP, anchor-digest.ts): its seq
 * and clock, and in place of its table, operation and images the digest a
 * cursor anchored on it compares. Any event may be the anchor of a reader of
 * another table (the newest event at or below its cursor's seq: that
 * reader's last batch or snapshot ended when it was the journal's newest),
 * and a reader that records no position (changes, export) cannot be asked,
 * so every one is kept so: a reader of another table goes on from its
 * cursor, and a restored older copy, whose events there are other ones, is
 * still told (HISTORY_DIVERGED). The newest row stays too: the next seq is
 * counted from it. Tombstones are pruned as events are. (A table enabled
 * again may get the same table id; its readers start at its new arming,
 * after every event of the old one.)
 */
function disableTables(db: Db, tables: readonly string[]): DisableResult {
  return withWriteTransaction(db, () => {
    const schemaBefore = schemaVersion(db);
    if (readState(db) === undefined) {
      refuseTarget(db, db.name, RUN_ON_SOURCE);
      throw new FailClosedError('CAPTURE_ABSENT', `Source ${db.name} has no sluice capture: there is no table to disable.`);
    }
    const captured = readTables(db);
    const byName = new Map(captured.map((t) => [foldIdent(t.name), t]));
    const chosen = [...new Map(tables.map((name) => [foldIdent(name), name])).values()].map((name) => {
      const t = byName.get(foldIdent(name));
      if (t === undefined)
        throw new InvalidInputError(
          'TABLE_UNTRACKED',
          `Table ${name} is not captured by ${db.name} (it captures: ${
            captured
              .map((c) => c.name)
              .sort()
              .join(', ') || 'no table'
          }), so there is no capture to take off it; nothing was changed. Pass captured tables (sluice status ${db.name} lists them), or ${enableHint(db)} to capture one.`,
        );
      return t;
    });
    const removed: string[] = [];
    let purged = 0;
    const masked = journalHasMask(db);
    const width = (readState(db) as { journalWidth: number }).journalWidth;
    for (const t of chosen) {
      for (const name of Object.values(triggerNames(t.tid))) {
        const exists = db.prepare("SELECT 1 FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?").get(name) !== undefined;
        if (!exists) continue;
        db.exec(`DROP TRIGGER main.${quoteIdent(name)}`);
        removed.push(name);
      }
      purged += masked ? tombstoneEvents(db, t.tid, width) : deleteEvents(db, t.tid);
      db.prepare(`DELETE FROM main.${PENDING_TABLE} WHERE tid = ?`).run(t.tid);
      db.prepare(`DELETE FROM main.${LAST_TABLE} WHERE tid = ?`).run(t.tid);
      db.prepare(`DELETE FROM main.${TABLES_TABLE} WHERE tid = ?`).run(t.tid);
    }
    const names = chosen.map((t) => t.name);
    db.prepare(`UPDATE ${STATE_TABLE} SET generation = generation + 1, updated_ms = ?, last_reason = ? WHERE id = 1`).run(
      Date.now(),
      `TABLE_DISABLED: capture taken off ${names.join(', ')}`,
    );
    recordOwnDdl(db, schemaBefore);
    forgetArming(db);
    return {
      removed,
      tables: names.map((table) => ({ table, reason: 'TABLE_DISABLED' as const })),
      generation: (readState(db) as { generation: number }).generation,
      purgedEvents: purged,
    };
  });
}

/** The SQL function that digests an event for its tombstone (anchor-digest.ts), on the disabling connection. */
const DIGEST_FUNCTION = 'sluice_anchor_digest';

/** Makes the events of table `tid` tombstones (see disableTables), in one statement; returns how many. */
function tombstoneEvents(db: Db, tid: number, width: number): number {
  db.function(DIGEST_FUNCTION, { deterministic: true, safeIntegers: true }, (seq: unknown, body: unknown) =>
    anchorDigest(seq as bigint, body as string),
  );
  const images = Array.from({ length: width }, (_, i) => `, ${journalColumn(i)} = NULL`).join('');
  // SET reads the row as it was (SQLite evaluates every expression before it writes), so the body is the event's.
  return db
    .prepare(
      `UPDATE main.${JOURNAL_TABLE} SET ${MASK_COLUMN} = ${DIGEST_FUNCTION}(seq, ${anchorBodySql(width)}), tid = ${TOMBSTONE_TID}, op = ${TOMBSTONE_OP}${images} WHERE tid = ?`,
    )
    .run(tid).changes;
}

/**
 * A journal without a mask column (format 2, not upgraded yet) has nowhere to
 * keep a tombstone's digest: its events are deleted, but for the journal's
 * newest row and the anchor of each acknowledged consumer's cursor (the
 * newest event at or below its seq). A reader that records no position and
 * anchors on one of them rebuilds (HISTORY_DIVERGED); `enable` or `sync`
 * upgrades the journal.
 */
function deleteEvents(db: Db, tid: number): number {
  return db
    .prepare(
      `DELETE FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq < (SELECT max(seq) FROM main.${JOURNAL_TABLE})
         AND seq NOT IN (SELECT anchor FROM (SELECT (SELECT max(j.seq) FROM main.${JOURNAL_TABLE} j WHERE j.seq <= c.seq) AS anchor
           FROM main.${CONSUMERS_TABLE} c) WHERE anchor IS NOT NULL)`,
    )
    .run(tid).changes;
}
