import type { Db } from '../../sqlite/connection.ts';
import { FailClosedError } from '../../errors.ts';
import { cachedStatement } from '../../sqlite/statement-cache.ts';
import { TABLES_TABLE, type EventRelation } from '../../capture/schema.ts';
import type { CompiledProjection } from '../compile.ts';

/*
 * The set-based apply paths read a journal row's images by position, from
 * the columns the projection was compiled against. A projection compiled
 * before `sluice alter` changed its table in place (a `sync --follow`
 * started before it) would read the new layout with the old positions:
 * wrong values, or a spurious suspension. So before a batch of journal
 * rows, the columns the table is armed with must be the compiled ones.
 * One indexed read per batch.
 */
export function checkJournalLayout(db: Db, p: CompiledProjection, events: EventRelation): void {
  if (events.tid === undefined) return;
  const armed = cachedStatement(db, `SELECT columns FROM main.${TABLES_TABLE} WHERE tid = ?`, 'pluck').get(events.tid) as
    string | undefined;
  const compiled = JSON.stringify(p.source.columns.map((c) => c.name));
  if (armed === undefined || armed === compiled) return;
  throw new FailClosedError(
    'PROJECTION_OUTDATED',
    `Projection ${p.name} was compiled against the columns of ${p.source.table} as they were when this sync started (${p.source.columns.map((c) => c.name).join(', ')}), but its capture now journals ${(JSON.parse(armed) as string[]).join(', ')} (sluice alter or a re-arm changed the table since). Nothing of this batch was applied. Restart the sync (stop a sync --follow and start it again): it compiles the projection against the table as it is now and goes on from its cursor.`,
    { projection: p.name, table: p.source.table },
  );
}
