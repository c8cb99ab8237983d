import type { Db } from '../sqlite/index.ts';
import { isSqliteBusy } from '../errors.ts';
import { hasCapture } from './catalog.ts';
import { FORMAT_VERSION } from './schema.ts';
import { enable, type RearmedTable } from './enable.ts';
import { verifyCapture } from './arming.ts';
import { consumersNeedUpgrade, upgradeConsumers } from './consumers.ts';
import { withWriteTransaction, connectionState, slot, schemaVersion } from '../sqlite/index.ts';

/** What rearmCapture did: the tables it re-armed, why each was unarmed, and the generation it moved. */
export interface RearmReport {
  readonly tables: readonly RearmedTable[];
  /** The generation before the re-arm (cursors made at it must rebuild once). */
  readonly fromGeneration: number;
  readonly generation: number;
}

/**
 * What rearmCapture knows of a connection's source: whether its consumers
 * table was found (or made) current, and the schema_version at which every
 * captured table was last found armed. A follower re-arms before every pass
 * (one per source commit), and arming depends on the schema only (arming.ts
 * caches verifyCapture the same way): while schema_version is unchanged,
 * nothing was dropped, altered or made again, so there is nothing to re-arm
 * and the catalog is not read at all.
 */
const seen = slot('rearm-seen', (): { consumersCurrent: boolean; armedAt?: number } => ({ consumersCurrent: false }));

/**
 * Re-arms an enabled capture whose triggers were removed or altered, or
 * whose table changed (a new column): what `enable <db>` with no new table
 * would do, in one write transaction, advancing the generation; the
 * re-armed tables' readers rebuild once (TABLE_REARMED), the others go on.
 * Keeps the journal mode. Returns undefined when
 * every table was armed (nothing is written then), or when the repair
 * failed: readers detect unarmed tables on their own and fail closed. A
 * busy source (SQLITE_BUSY past the busy timeout) is thrown.
 */
export function rearmCapture(db: Db): RearmReport | undefined {
  return checkRearm(db).report;
}

/** What checkRearm found: the re-arm it made, if any, and the schema_version it skipped the catalog at, if it did. */
export interface RearmCheck {
  readonly report: RearmReport | undefined;
  /**
   * Set when every table was known armed at the schema_version read now
   * (the catalog was not read, nothing was written): that schema_version,
   * for a caller that would read it again at once (a follower's pass).
   */
  readonly unchangedAt?: number;
}

/** rearmCapture, also saying the schema_version it found unchanged (RearmCheck.unchangedAt). */
export function checkRearm(db: Db): RearmCheck {
  try {
    const known = connectionState(db).get(seen);
    // Read before the verification: DDL landing in between makes the next call verify again, never skip one.
    const sv = schemaVersion(db);
    if (known.armedAt === sv) return { report: undefined, unchangedAt: sv };
    if (!hasCapture(db)) return { report: undefined };
    // An older sluice's consumers table gains its newer columns here, before a
    // reader takes a cursor: done at the first acknowledgement instead, its
    // DDL would fall after the cursors of that run, and a `sluice alter` next
    // (whose span replaces this one as sluice's last own DDL) would leave
    // them a schema window to rebuild across.
    if (!known.consumersCurrent) {
      if (consumersNeedUpgrade(db)) withWriteTransaction(db, () => upgradeConsumers(db));
      known.consumersCurrent = true; // looked at once per connection
    }
    const v = verifyCapture(db);
    // A capture of an older format that readers still read (format 2) is upgraded here, in place.
    const outdated = v.state !== undefined && v.state.format !== FORMAT_VERSION;
    if (v.ok && v.problem === undefined && !outdated) known.armedAt = sv;
    if (v.problem !== undefined || (v.ok && !outdated) || v.state === undefined) return { report: undefined };
    const r = enable(db, [], { keepJournalMode: true });
    if (r.rearmedReasons.length === 0) return { report: undefined };
    return { report: { tables: r.rearmedReasons, fromGeneration: v.state.generation, generation: r.generation } };
  } catch (e) {
    // A writer holding the source's write lock is not a failed repair: the caller waits for it, or says so.
    if (isSqliteBusy(e)) throw e;
    if (process.env.SLUICE_DEBUG) console.error('rearm failed', e);
    return { report: undefined }; // best effort: see above
  }
}
