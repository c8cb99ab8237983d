import fs from 'node:fs';
import { openDatabase, closeDatabase, writeTransactionSync, quoteIdent, shellCommand, scrubbing } from '../../sqlite/index.ts';
import { InvalidInputError, SluiceError } from '../../errors.ts';
import { PROJECTIONS_TABLE, readProjections, buildTables, readBuild, recordDrop, clearUnguarded } from '../target/index.ts';
import { ownedBy } from './applier.ts';
import { excludeFromMirrorAll, readProjectionSet, removeMirrorAll } from './projection-set.ts';

const EXISTS = "SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE";

export interface DropResult {
  readonly projection: string;
  /** The target tables dropped with it (the ones it owns). */
  readonly dropped: readonly string[];
}

/**
 * Removes a projection from a target: its row in `_sluice_projections` and
 * the tables it owns (never another table), with those of a protected
 * rebuild in progress (its shadow and staged copy), in one target transaction,
 * with the freed pages zeroed and the target checkpointed after (the tables
 * may hold a column left out of capture since: sqlite/scrub.ts). An
 * unknown name is refused, naming the projections there are. Stop a
 * `sync --follow` of the projection first: one still running with its
 * definition would build it again. A mirror that "*" made (projection-set.ts)
 * is left out of "*" from then on (`sync --projection '*'` takes it back).
 * The drop is recorded in the target (dropped.ts): drop opens the target
 * only, and the next sync of it forgets the projection's acknowledgement on
 * the source instead of reporting it lost (CONSUMER_NOT_BUILT).
 *
 * @example
 * dropProjection('cache.db', 'issues_fts'); // { projection: 'issues_fts', dropped: ['issues_fts', 'issues_fts_src'] }
 */
export function dropProjection(targetPath: string, name: string): DropResult {
  if (!fs.existsSync(targetPath))
    throw new InvalidInputError('DB_NOT_FOUND', `Target ${targetPath} does not exist. Pass a target written by \`sluice sync\`.`);
  const db = openDatabase(targetPath, { role: 'target' });
  try {
    return writeTransactionSync(
      db,
      () => {
        const records = readProjections(db, 'main');
        const rec = records.find((r) => r.name === name);
        if (rec === undefined) {
          const known = records.map((r) => r.name);
          throw new SluiceError(
            'PROJECTION_NOT_FOUND',
            `Target ${targetPath} has no projection named ${name} (${known.length === 0 ? 'it has none' : `it has: ${known.join(', ')}`}). Pass one of those names; ${shellCommand('health', { target: targetPath })} lists them.`,
          );
        }
        // Defensive: a table another projection also names stays (TARGET_COLLISION keeps that from happening).
        const others = new Set(records.filter((r) => r !== rec).flatMap((r) => ownedBy(r).map((t) => t.toLowerCase())));
        const dropped = ownedBy(rec).filter((t) => !others.has(t.toLowerCase()) && db.prepare(EXISTS).get(t) !== undefined);
        // A protected rebuild in progress: its shadow and staged copy are the projection's too.
        const build = readBuild(rec);
        if (build !== undefined) dropped.push(...buildTables(build).filter((t) => db.prepare(EXISTS).get(t) !== undefined));
        // Scrubbed (sqlite/scrub.ts): drop opens the target only, so it cannot tell whether the tables hold a column the
        // source has left out of capture since (a map or fts5 index that read it is suspended with its rows as they were).
        scrubbing(db, 'main', () => {
          for (const t of dropped) db.exec(`DROP TABLE main.${quoteIdent(t)}`);
        });
        db.prepare(`DELETE FROM main.${PROJECTIONS_TABLE} WHERE name = ?`).run(name);
        // Its tables marked unguarded (protect-guards.ts) are gone with it: a projection made again under the name starts clean.
        clearUnguarded(db, 'main', name);
        // A mirror "*" made: "*" leaves its table out from now on, or the next sync would make it again.
        excludeFromMirrorAll(db, 'main', records, rec);
        // The source still acknowledges it: the next sync of this target forgets that, instead of reporting it lost.
        recordDrop(db, 'main', rec);
        return { projection: name, dropped };
      },
      { mode: 'immediate' },
    );
  } finally {
    closeDatabase(db);
  }
}

/** Takes "*" out of `targetPath`'s projection set (removeMirrorAll), in a transaction of its own: true when it held it. */
export function dropMirrorAll(targetPath: string): boolean {
  const db = openDatabase(targetPath, { role: 'target' });
  try {
    // Read first: a set without "*" (the usual case) is left without taking the write lock.
    if (readProjectionSet(db, 'main', readProjections(db, 'main')).mirrorAll === undefined) return false;
    return writeTransactionSync(db, () => removeMirrorAll(db, 'main', readProjections(db, 'main')), { mode: 'immediate' });
  } finally {
    closeDatabase(db);
  }
}
