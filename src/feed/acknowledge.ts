import type { Db } from '../sqlite/connection.ts';
import { withWriteTransaction } from '../sqlite/connection.ts';
import { FailClosedError, InvalidInputError } from '../errors.ts';
import { CONSUMERS_TABLE } from '../capture/schema.ts';
import { readState } from '../capture/catalog.ts';
import { decodeCursor } from './cursor.ts';

/**
 * Records a consumer's position in the source, for `status` (lag per
 * consumer). Informational only: it may lag the consumer's own durable
 * cursor, it never holds back pruning, and it is one short write.
 *
 * @example
 * acknowledge(db, 'search-index', batch.to);
 */
export function acknowledge(db: Db, consumer: string, cursor: string): void {
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
    db.prepare(
      `INSERT INTO ${CONSUMERS_TABLE} (name, cursor, seq, updated_ms) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, seq = excluded.seq, updated_ms = excluded.updated_ms`,
    ).run(consumer, cursor, c.seq, Date.now());
  });
}

/** Removes a consumer's acknowledgement row. */
export function forgetConsumer(db: Db, consumer: string): boolean {
  return withWriteTransaction(db, () => db.prepare(`DELETE FROM ${CONSUMERS_TABLE} WHERE name = ?`).run(consumer).changes > 0);
}
