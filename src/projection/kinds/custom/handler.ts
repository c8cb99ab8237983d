import type { Kysely } from 'kysely';
import type { Db } from '../../../sqlite/connection.ts';
import type { ChangeEvent, Row } from '../../../feed/events.ts';
import type { CompiledCustom } from '../../compiled.ts';
import type { CustomContext } from '../../definition.ts';

/*
 * Custom projections get each event and a Kysely instance bound to the
 * connection that holds the target transaction, with tables resolved in the
 * target database. Whatever they write commits or rolls back with the batch
 * and its cursor.
 */

const kyselies = new WeakMap<Db, Kysely<any>>();

export async function customContext(db: Db, schema: string, p: CompiledCustom): Promise<CustomContext> {
  let k = kyselies.get(db);
  if (k === undefined) {
    // Loaded on first use: kysely is only needed by custom projections, and the CLI should start fast.
    const { Kysely: K, SqliteDialect } = await import('kysely');
    k = new K<any>({ dialect: new SqliteDialect({ database: db }) });
    kyselies.set(db, k);
  }
  return { db: schema === 'main' ? k : k.withSchema(schema), projection: p.name };
}

function handlerOf(p: CompiledCustom) {
  if (p.handler === undefined) throw new Error(`custom projection ${p.name} has no handler loaded`);
  return p.handler;
}

export async function initCustom(db: Db, schema: string, p: CompiledCustom, rows: Iterable<Row>): Promise<number> {
  const h = handlerOf(p);
  let count = 0;
  function* counted(): Generator<Row> {
    for (const r of rows) {
      count++;
      yield r;
    }
  }
  if (h.init !== undefined) await h.init(counted(), await customContext(db, schema, p));
  else for (const _row of counted()) continue; // nothing to build: just count the rows
  return count;
}

export async function applyCustomEvents(db: Db, schema: string, p: CompiledCustom, events: readonly ChangeEvent[]): Promise<number> {
  const h = handlerOf(p);
  const ctx = await customContext(db, schema, p);
  for (const e of events) await h.apply(e, ctx);
  return events.length;
}
