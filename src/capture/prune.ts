import type { Db } from '../sqlite/index.ts';
import { shellWord, withWriteTransaction } from '../sqlite/index.ts';
import { readState } from './catalog.ts';
import { enableHint } from './enable-hint.ts';
import { refuseTarget } from './target-guard.ts';
import { JOURNAL_TABLE, STATE_TABLE } from './schema.ts';
import { SluiceError } from '../errors.ts';

export interface PruneResult {
  readonly deleted: number;
  readonly prunedThrough: number;
}

/**
 * Deletes journal entries at or below `max(seq) - retention` and raises
 * `pruned_through`. The newest entry is never deleted (retention >= 1024),
 * so seq never goes back. Must run inside a write transaction.
 */
export function pruneJournal(db: Db): PruneResult {
  const state = readState(db);
  if (state === undefined) return { deleted: 0, prunedThrough: 0 };
  const max = db.prepare(`SELECT max(seq) AS m FROM ${JOURNAL_TABLE}`).get() as { m: bigint | null };
  const bound = (max.m === null ? 0 : Number(max.m)) - state.retention;
  if (bound <= state.prunedThrough) return { deleted: 0, prunedThrough: state.prunedThrough };
  const info = db.prepare(`DELETE FROM ${JOURNAL_TABLE} WHERE seq <= ?`).run(bound);
  db.prepare(`UPDATE ${STATE_TABLE} SET pruned_through = max(pruned_through, ?) WHERE id = 1`).run(bound);
  return { deleted: info.changes, prunedThrough: bound };
}

/**
 * On-demand pruning, on top of the amortized pruning inside writers'
 * transactions. A consumer cursor below `prunedThrough` must rebuild.
 *
 * @example
 * prune(openDatabase('app.db')); // { deleted: 1200, prunedThrough: 4096 }
 */
export function prune(db: Db): PruneResult {
  if (readState(db) === undefined) {
    refuseTarget(db, db.name, { does: 'Prune the journal of', command: (source) => `sluice prune ${shellWord(source)}` });
    throw new SluiceError(
      'CAPTURE_ABSENT',
      `This database has no sluice capture, so there is nothing to prune. Run ${enableHint(db)} first.`,
      { exitCode: 3 },
    );
  }
  return withWriteTransaction(db, () => pruneJournal(db));
}
