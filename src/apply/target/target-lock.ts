import type { Db } from '../../sqlite/index.ts';
import { cachedStatement, quoteIdent, takeWriteLock } from '../../sqlite/index.ts';
import { TARGET_INFO_TABLE } from './target-meta.ts';
import { markBusy } from './retry.ts';

/**
 * Takes the target's write lock in the caller's transaction (polling, as
 * takeWriteLock does, so a writer waiting elsewhere gets its turn), by
 * writing the target's info row: a watch of the target's log then knows the
 * commit for sluice's own. A SQLITE_BUSY past the wait is marked as the
 * target's (markBusy), for the message that names it. Before a step reads
 * the target, so it reads it at its latest state.
 */
export async function lockTarget(db: Db, schema: string): Promise<void> {
  try {
    await takeWriteLock(db, () => {
      cachedStatement(db, `UPDATE ${quoteIdent(schema)}.${TARGET_INFO_TABLE} SET id = id`).run();
    });
  } catch (err) {
    markBusy(err, 'target');
    throw err;
  }
}
