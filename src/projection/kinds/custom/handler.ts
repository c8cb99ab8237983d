import { foldIdent, type Db } from '../../../sqlite/index.ts';
import type { ChangeEvent, Row } from '../../../feed/index.ts';
import type { CompiledCustom } from '../../compiled.ts';
import { FailClosedError } from '../../../errors.ts';
import type { CustomContext } from '../../definition.ts';
import { handlerTables } from './tables.ts';
import { lateKey, lateQueryAfter, openCall, readyHandlerDb, type HandlerPage } from './handler-db.ts';
import { guardPage } from './source-guard.ts';

/*
 * Custom projections get each event and a Kysely instance bound to the
 * connection that holds the target transaction, with tables resolved in the
 * target database. Whatever they write commits or rolls back with the batch
 * and its cursor. Two things a handler could do on that connection are
 * refused (handler-db.ts): a statement that would write the source, sluice's
 * own tables, another projection's table or the connection's databases
 * (CUSTOM_WROTE_..., source-guard.ts: in a sync, an import and a subscribe
 * alike), and a query through a call's ctx after the call has returned
 * (CUSTOM_HANDLER_LATE_WRITE).
 */

/** What came out of a handler's calls (onPage), by the thrown object. */
const failures = new WeakSet<object>();

/**
 * Whether `err` came out of a custom handler's calls: its own throw, a
 * statement sluice refused it (CUSTOM_WROTE_..., a late query, an
 * undeclared table), or SQLite's error for one of its statements. It is
 * that projection's failure, not the run's: import and subscribe record it
 * as sync does and go on with the others (apply/sync/projection-failure.ts).
 */
export function isHandlerFailure(err: unknown): boolean {
  return typeof err === 'object' && err !== null && failures.has(err);
}

/** `err`, marked as a handler's failure (a thrown value that is no object becomes an Error with its text). */
function handlerFailure(err: unknown): unknown {
  const e = typeof err === 'object' && err !== null ? err : new Error(String(err));
  failures.add(e);
  return e;
}

function handlerOf(p: CompiledCustom) {
  if (p.handler === undefined) throw new Error(`custom projection ${p.name} has no handler loaded`);
  return p.handler;
}

/**
 * Runs `calls`, one page of calls into the handler (each made with a ctx of
 * its own from `call`), and fails it when a query through any of their
 * ctx came after that call had returned. Before it returns it lets the
 * queries still under way reach the connection (they are promise callbacks
 * only: one turn of the event loop), so that one left behind by the last
 * call is seen now, and not run after the caller commits.
 */
async function onPage<T>(
  db: Db,
  schema: string,
  p: CompiledCustom,
  at: string,
  calls: (call: (fn: (ctx: CustomContext) => unknown) => Promise<void>) => Promise<T>,
): Promise<T> {
  const key = lateKey(db, schema, p.name);
  const earlier = lateQueryAfter(key);
  if (earlier !== undefined) throw handlerFailure(lateWrite(p, earlier, true));
  const { tables, failure } = handlerTables(p.definition, at);
  const handed = new Set(Object.values(tables).map(foldIdent));
  const page: HandlerPage = {
    projection: p.name,
    key,
    target: schema,
    handed,
    late: undefined,
    ended: false,
    failed: false,
  };
  await readyHandlerDb(db);
  guardPage(db, schema);
  try {
    const out = await calls(async (fn) => {
      const c = openCall(db, schema, page);
      try {
        await fn({ db: c.db, projection: p.name, tables });
      } catch (err) {
        throw failure(err); // a name ctx.tables does not hold, read before the failure, is named (CUSTOM_TABLE_UNDECLARED)
      } finally {
        c.close();
      }
    });
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (page.late !== undefined) throw lateWrite(p, page.late, false);
    // (A ctx of an earlier page, kept and used during this one.)
    const kept = lateQueryAfter(key);
    if (kept !== undefined) throw lateWrite(p, kept, true);
    return out;
  } catch (err) {
    page.failed = true;
    throw handlerFailure(err);
  } finally {
    page.ended = true;
  }
}

function lateWrite(p: CompiledCustom, sql: string, earlierPage: boolean): FailClosedError {
  const statement = sql.replace(/\s+/g, ' ').trim().slice(0, 200);
  return new FailClosedError(
    'CUSTOM_HANDLER_LATE_WRITE',
    earlierPage
      ? `The handler of custom projection ${p.name} ran a query through the ctx of an earlier batch, after that batch had ended (${statement}): ctx.db was called without await, or a ctx was kept for later. The query was not run, so that batch, if it committed, lacks its write. Make apply and init await every query through ctx.db, and use each call's own ctx; then stop this process and rebuild the projection (sluice reinit with its source, its target and ${p.name}).`
      : `The handler of custom projection ${p.name} ran a query through its ctx after its apply or init had returned (${statement}): ctx.db was called without await, or a ctx was kept for later. The query was not run (it would have landed in another transaction), and nothing of this batch was kept. Make apply and init await every query through ctx.db, and use each call's own ctx.`,
    { projection: p.name, statement },
  );
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
  if (init !== undefined) await onPage(db, schema, p, at, (call) => call((ctx) => init(counted(), ctx)));
  else for (const _row of counted()) continue; // nothing to build: just count the rows
  return count;
}

export async function applyCustomEvents(db: Db, schema: string, p: CompiledCustom, events: readonly ChangeEvent[]): Promise<number> {
  const h = handlerOf(p);
  await onPage(db, schema, p, p.targetTable, async (call) => {
    for (const e of events) await call((ctx) => h.apply(e, ctx));
  });
  return events.length;
}
