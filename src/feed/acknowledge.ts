import type { Db, FileIdentity } from '../sqlite/index.ts';
import { withWriteTransaction } from '../sqlite/index.ts';
import { FailClosedError, InvalidInputError } from '../errors.ts';
import { CONSUMERS_TABLE, readState, readConsumers, upgradeConsumers, type ConsumerRow } from '../capture/index.ts';
import { decodeCursor } from './cursor.ts';

/** What a sync records beside a consumer's position: its projection's kind and the target file it acknowledges for. */
export interface AcknowledgedFor {
  readonly kind?: string;
  readonly targetFile?: FileIdentity;
}

/**
 * Records a consumer's position in the source, for `status` (lag per
 * consumer) and for sync, which tells from them the projections a target
 * held that it will not build. Informational only: it may lag the
 * consumer's own durable cursor, it never holds back pruning, and it is one
 * short write (the first one on a source an older sluice enabled also adds
 * the consumers table's newer columns, in place).
 *
 * @example
 * acknowledge(db, 'search-index', batch.to);
 */
export function acknowledge(db: Db, consumer: string, cursor: string, about: AcknowledgedFor = {}): void {
  if (consumer.trim() === '')
    throw new InvalidInputError('BAD_CONSUMER', 'A consumer name must not be empty. Example: acknowledge(db, "search-index", cursor).');
  const c = decodeCursor(cursor);
  withWriteTransaction(db, () => {
    const state = readState(db);
    if (state === undefined)
      throw new FailClosedError('CAPTURE_ABSENT', `Source ${db.name} has no sluice capture; there is nothing to acknowledge.`);
    if (state.sourceId !== c.sourceId)
      throw new FailClosedError(
        'SOURCE_CHANGED',
        `Consumer ${consumer}'s cursor belongs to source ${c.sourceId}, not ${state.sourceId}; rebuild the consumer before acknowledging.`,
      );
    upgradeConsumers(db);
    db.prepare(
      `INSERT INTO ${CONSUMERS_TABLE} (name, cursor, seq, updated_ms, kind, target_file) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, seq = excluded.seq, updated_ms = excluded.updated_ms,
         kind = coalesce(excluded.kind, kind), target_file = coalesce(excluded.target_file, target_file)`,
    ).run(
      consumer,
      cursor,
      c.seq,
      Date.now(),
      about.kind ?? null,
      about.targetFile === undefined ? null : JSON.stringify(about.targetFile),
    );
  });
}

/** Removes a consumer's acknowledgement row; true when there was one. */
export function forgetConsumer(db: Db, consumer: string): boolean {
  return withWriteTransaction(db, () => db.prepare(`DELETE FROM ${CONSUMERS_TABLE} WHERE name = ?`).run(consumer).changes > 0);
}

/**
 * `sluice forget SRC CONSUMER`: removes one acknowledgement row, in one
 * short write transaction (beside live writers), and returns it. A name the
 * source does not acknowledge is CONSUMER_NOT_FOUND, naming those it does;
 * nothing is written then.
 *
 * @example
 * forget(db, 'issues_search@/srv/cache.db'); // { name: 'issues_search@/srv/cache.db', seq: 812, projection: 'issues_search', ... }
 */
export function forget(db: Db, consumer: string): ConsumerRow {
  return withWriteTransaction(db, () => {
    if (readState(db) === undefined)
      throw new InvalidInputError(
        'CAPTURE_ABSENT',
        `Source ${db.name} has no sluice capture, so it acknowledges no consumer: there is nothing to forget.`,
      );
    const rows = readConsumers(db);
    const row = rows.find((c) => c.name === consumer);
    if (row === undefined)
      throw new InvalidInputError(
        'CONSUMER_NOT_FOUND',
        `Source ${db.name} acknowledges no consumer named ${consumer} (${rows.length === 0 ? 'it acknowledges none' : `it acknowledges: ${rows.map((c) => c.name).join(', ')}`}); nothing was changed. Pass one of those names exactly; sluice status ${db.name} lists them.`,
      );
    db.prepare(`DELETE FROM ${CONSUMERS_TABLE} WHERE name = ?`).run(consumer);
    return row;
  });
}
