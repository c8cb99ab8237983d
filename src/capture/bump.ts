import type { Db } from '../sqlite/index.ts';
import { shellWord, withWriteTransaction } from '../sqlite/index.ts';
import { InvalidInputError, SluiceError } from '../errors.ts';
import { readState } from './catalog.ts';
import { enableHint } from './enable-hint.ts';
import { refuseTarget } from './target-guard.ts';
import { STATE_TABLE } from './schema.ts';

/**
 * Advances the generation after a rewrite the triggers could not observe
 * (for example a bulk load with triggers dropped), forcing every reader to
 * rebuild once.
 *
 * @example
 * bump(db, 'reloaded issues from backup'); // { generation: 4 }
 */
export function bump(db: Db, reason: string): { readonly generation: number } {
  if (reason.trim() === '')
    throw new InvalidInputError(
      'BAD_REASON',
      'bump needs a non-empty reason (it is recorded and shown by status). Example: --reason "restored issues table".',
    );
  return withWriteTransaction(db, () => {
    if (readState(db) === undefined) {
      refuseTarget(db, db.name, {
        does: 'Bump the capture generation of',
        command: (source) => `sluice bump ${shellWord(source)} --reason ${shellWord(reason)}`,
      });
      throw new SluiceError('CAPTURE_ABSENT', `This database has no sluice capture to bump. Run ${enableHint(db)} first.`, {
        exitCode: 3,
      });
    }
    db.prepare(
      `UPDATE ${STATE_TABLE} SET generation = generation + 1, bumped_generation = generation + 1, updated_ms = ?, last_reason = ? WHERE id = 1`,
    ).run(Date.now(), `bump: ${reason}`);
    return { generation: (readState(db) as { generation: number }).generation };
  });
}
