import type { Db } from '../../src/sqlite/connection.ts';
import { describeTable } from '../../src/sqlite/introspect.ts';
import { quoteIdent } from '../../src/sqlite/quote.ts';
import { buildTriggers } from '../../src/capture/triggers.ts';
import { guardInputs } from '../../src/capture/guard-inputs.ts';
import { triggerNames } from '../../src/capture/schema.ts';

/*
 * Bench only: a captured table's triggers as they were before the
 * changed-column mask (capture format 2, buildTriggers' `mask: false`),
 * installed in place of sluice's, in the same order, so the mask's cost is
 * the difference between the two in one run. Reading such a capture is not
 * supported: the catalog still records the triggers enable made.
 */
export function installTriggersWithoutMask(db: Db, table: string): void {
  const tid = Number(db.prepare('SELECT tid FROM _sluice_tables WHERE name = ?').pluck().get(table));
  const info = describeTable(db, table);
  if (info === undefined) throw new Error(`no table ${table}`);
  for (const n of Object.values(triggerNames(tid))) db.exec(`DROP TRIGGER IF EXISTS main.${quoteIdent(n)}`);
  for (const t of buildTriggers(tid, info, 'images', guardInputs(db, table), { mask: false }).all) db.exec(t.sql);
}
