import type { Kysely } from 'kysely';
import type { Db } from '../../../sqlite/connection.ts';
import { connectionState, slot } from '../../../sqlite/connection-state.ts';
import type { ChangeEvent, Row } from '../../../feed/events.ts';
import type { CompiledCustom } from '../../compiled.ts';
import { FailClosedError } from '../../../errors.ts';
import { cachedStatement } from '../../../sqlite/statement-cache.ts';
import type { CustomContext } from '../../definition.ts';
import { customTables } from './tables.ts';

/*
 * Custom projections get each event and a Kysely instance bound to the
 * connection that holds the target transaction, with tables resolved in the
 * target database. Whatever they write commits or rolls back with the batch
 * and its cursor.
 */

const kysely = slot('kysely', (): { instance?: Kysely<any> } => ({}));

export async function customContext(db: Db, schema: string, p: CompiledCustom): Promise<CustomContext> {
  const held = connectionState(db).get(kysely);
  if (held.instance === undefined) {
    // Loaded on first use: kysely is only needed by custom projections, and the CLI should start fast.
    const { Kysely: K, SqliteDialect } = await import('kysely');
    held.instance ??= new K<any>({ dialect: new SqliteDialect({ database: db }) });
  }
  const k = held.instance;
  return { db: schema === 'main' ? k : k.withSchema(schema), projection: p.name, tables: customTables(p.definition, p.targetTable) };
}

function handlerOf(p: CompiledCustom) {
  if (p.handler === undefined) throw new Error(`custom projection ${p.name} has no handler loaded`);
  return p.handler;
}

/**
 * Runs `fn`, a call into the handler, and fails it when the handler changed
 * the source database's schema: in a sync the source is the connection's
 * main database (the target attached as `schema`), so a raw SQL statement with an unqualified table name (CREATE
 * TABLE counts ...) lands there, not in the target. The caller's
 * transaction rolls that back with the batch.
 */
async function guardingSource<T>(db: Db, schema: string, p: CompiledCustom, fn: () => Promise<T>): Promise<T> {
  // With the target as main (an import), main is where the handler writes.
  if (schema === 'main') return fn();
  // (Once per page of events: prepared once per connection.)
  const version = () => Number(cachedStatement(db, 'SELECT schema_version FROM main.pragma_schema_version()', 'pluck').get());
  const before = version();
  const out = await fn();
  if (version() !== before)
    throw new FailClosedError(
      'CUSTOM_WROTE_SOURCE',
      `The handler of custom projection ${p.name} changed the schema of the source database: a raw SQL statement named a table without the target's schema, so it ran on the source. Nothing of this batch was kept, the source's change included. Write through ctx.db's query and schema builders (they resolve names in the target), with the names in ctx.tables.`,
      { projection: p.name },
    );
  return out;
}

/** Runs the handler's init on `rows`, with its declared tables at `at` (its target, or a shadow). */
export async function initCustom(db: Db, schema: string, p: CompiledCustom, at: string, rows: Iterable<Row>): Promise<number> {
  const h = handlerOf(p);
  let count = 0;
  function* counted(): Generator<Row> {
    for (const r of rows) {
      count++;
      yield r;
    }
  }
  const init = h.init?.bind(h);
  if (init !== undefined) {
    const ctx = await customContext(db, schema, { ...p, targetTable: at });
    await guardingSource(db, schema, p, async () => init(counted(), ctx));
  } else for (const _row of counted()) continue; // nothing to build: just count the rows
  return count;
}

export async function applyCustomEvents(db: Db, schema: string, p: CompiledCustom, events: readonly ChangeEvent[]): Promise<number> {
  const h = handlerOf(p);
  const ctx = await customContext(db, schema, p);
  await guardingSource(db, schema, p, async () => {
    for (const e of events) await h.apply(e, ctx);
  });
  return events.length;
}
