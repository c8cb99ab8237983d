import type { Db } from '../../sqlite/index.ts';
import { writeTransaction } from '../../sqlite/index.ts';
import { lockTarget } from '../target/index.ts';
import { dropRetired, nextRetired } from '../rebuild/index.ts';
import { crashPoint } from './crash-points.ts';

/*
 * The tables a protected rebuild's swap retired (apply/rebuild/retired-tables.ts),
 * dropped one per target transaction, after the swap or, when a run was
 * killed before it got to them, by the next run. The live projections are
 * whole whether or not they are gone: they only take space until then.
 */

/** Whether the target holds a retired table (a plain read, no lock: the drops take it). */
export function hasRetired(db: Db, schema: string): boolean {
  return nextRetired(db, schema) !== undefined;
}

/**
 * Drops the next retired table in a write transaction of its own (with the
 * target's write lock taken as a step takes it, writing the target's info
 * row, so that a watch of the target's log knows the commit for sluice's);
 * whether there was one.
 */
export async function dropOneRetired(db: Db, schema: string): Promise<boolean> {
  return writeTransaction(
    db,
    async () => {
      await lockTarget(db, schema);
      return dropRetired(db, schema);
    },
    {
      keep: (dropped) => dropped,
      beforeCommit: () => crashPoint('before-commit'),
      afterCommit: () => crashPoint('after-commit'),
    },
  );
}
