import type { Db } from '../sqlite/connection.ts';
import { withWriteTransaction } from '../sqlite/connection.ts';
import { dropOwnObjects } from './enable.ts';

/**
 * Removes every object sluice made in the source (triggers, journal and
 * metadata) in one transaction. Readers then see no capture and rebuild; a
 * later enable creates a new sourceId.
 *
 * @example
 * disable(openDatabase('app.db')); // { removed: ['_sluice_t1_ins', ...] }
 */
export function disable(db: Db): { readonly removed: readonly string[] } {
  return { removed: withWriteTransaction(db, () => dropOwnObjects(db)) };
}
