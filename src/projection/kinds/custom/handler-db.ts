import type { Statement } from 'better-sqlite3';
import type { CompiledQuery, DatabaseConnection, Driver, Kysely, KyselyPlugin, QueryId, QueryResult } from 'kysely';
import type { Db } from '../../../sqlite/index.ts';
import { connectionState, slot } from '../../../sqlite/index.ts';
import { refuseSourceWrite } from './source-guard.ts';
import { refuseTransactionControl } from './transaction-guard.ts';

/*
 * The Kysely instance a handler gets as ctx.db, over the connection that
 * holds the batch's transaction. Each call into the handler (one apply, one
 * init) gets an instance of its own, which is over once the call's promise
 * has settled. A query through it after that (the handler called ctx.db
 * without await, or kept ctx for later) is not run: it would run in
 * whatever transaction is open by then (the next event's, another
 * projection's, none), so a write would land in the wrong batch or in none.
 * It is recorded instead, and the page of events its call belonged to fails
 * (see handler.ts). Which call a query belongs to is known exactly: the
 * instance's plugin marks each query it compiles (a query compiled by
 * another instance, or run precompiled, belongs to the call open when it
 * runs, or else to the last one). Every statement is checked by
 * refuseSourceWrite before it runs (against the target of the call's page).
 */

/** A page of events (or an init call) of one projection: its calls, and the first query that came after its call had ended. */
export interface HandlerPage {
  readonly projection: string;
  /** The projection in its target file (lateKey). */
  readonly key: string;
  /** The schema the target is attached as (main in an import or a subscribe, where no source is on the connection): what the guard checks against (source-guard.ts). */
  readonly target: string;
  /** The tables its calls were handed (ctx.tables' names, folded: foldIdent), which it may write whatever their names. */
  readonly handed: ReadonlySet<string>;
  late: string | undefined;
  /** Over (its batch went on to commit, or failed): a late query then counts for the projection's next page. */
  ended: boolean;
  /** It ended by a throw, so its transaction was rolled back: a late query of it lands nowhere and counts for nothing. */
  failed: boolean;
}

interface Call {
  readonly page: HandlerPage;
  open: boolean;
}

interface HandlerDbState {
  base?: Kysely<any>;
  readonly bySchema: Map<string, Kysely<any>>;
  current: Call | undefined;
  last: Call | undefined;
  readonly statements: Map<string, Statement>;
  /** Each attached database's file, by schema name. */
  readonly files: Map<string, string>;
}

const state = slot('custom-handler-db', (): HandlerDbState => ({
  bySchema: new Map(),
  current: undefined,
  last: undefined,
  statements: new Map(),
  files: new Map(),
}));

/**
 * Projections (lateKey) that a query came late for after its page had
 * ended: the query it was. Kept for the process, not the connection: a
 * ctx kept from an earlier sync's call belongs to a connection closed since.
 */
const lateAfter = new Map<string, string>();

/** Statement texts a connection keeps prepared for handlers (apart from sluice's own, which a handler must not evict). */
const STATEMENTS = 64;

/** Which call compiled each query (a query id is an object per builder). */
const owners = new WeakMap<QueryId, Call>();

/** The query a handler ran after its page had ended, if one did (its next page fails). */
export function lateQueryAfter(key: string): string | undefined {
  return lateAfter.get(key);
}

/** What names projection `projection` in the target at `schema` of `db`, for lateQueryAfter: its file and its name. */
export function lateKey(db: Db, schema: string, projection: string): string {
  const files = connectionState(db).get(state).files;
  let file = files.get(schema);
  if (file === undefined) {
    const row = (db.pragma('database_list') as { name: string; file: string }[]).find((r) => r.name === schema);
    file = row?.file ?? schema;
    files.set(schema, file);
  }
  return `${file}\u0000${projection}`;
}

/** Makes `db` ready for handler calls (openCall): loads kysely on first use. */
export async function readyHandlerDb(db: Db): Promise<void> {
  const s = connectionState(db).get(state);
  s.base ??= await makeBase(db, s);
}

/**
 * Opens a call into the handler for `page` (on a connection readyHandlerDb
 * made ready): its ctx.db (names resolve in `schema`), and `close`, to be
 * called when the call's promise settles.
 */
export function openCall(db: Db, schema: string, page: HandlerPage): { readonly db: Kysely<any>; readonly close: () => void } {
  const s = connectionState(db).get(state);
  if (s.base === undefined) throw new Error('openCall before readyHandlerDb');
  let k = s.bySchema.get(schema);
  if (k === undefined) {
    k = schema === 'main' ? s.base : s.base.withSchema(schema);
    s.bySchema.set(schema, k);
  }
  const call: Call = { page, open: true };
  s.current = call;
  s.last = call;
  const plugin: KyselyPlugin = {
    transformQuery({ node, queryId }) {
      owners.set(queryId, call);
      return node;
    },
    transformResult: async ({ result }) => result,
  };
  return {
    db: k.withPlugin(plugin),
    close() {
      call.open = false;
      if (s.current === call) s.current = undefined;
    },
  };
}

async function makeBase(db: Db, s: HandlerDbState): Promise<Kysely<any>> {
  // Loaded on first use: kysely is only needed by custom projections, and the CLI should start fast.
  const { Kysely: K, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } = await import('kysely');
  const connection = handlerConnection(db, s);
  const refuse = async () => {
    throw new Error(
      "A custom handler runs inside sluice's transaction for its batch and cannot start one of its own (ctx.db.transaction()): write through ctx.db directly; a throw rolls the whole batch back.",
    );
  };
  const driver: Driver = {
    init: async () => {},
    acquireConnection: async () => connection,
    beginTransaction: refuse,
    commitTransaction: refuse,
    rollbackTransaction: refuse,
    releaseConnection: async () => {},
    destroy: async () => {},
  };
  return new K<any>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new SqliteIntrospector(k),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
}

function handlerConnection(db: Db, s: HandlerDbState): DatabaseConnection {
  /** The call `q` belongs to when it may run now; undefined (recorded) when its call is over. */
  const admit = (q: CompiledQuery): Call | undefined => {
    const call = owners.get(q.queryId) ?? s.current ?? s.last;
    if (call?.open === true) {
      refuseTransactionControl(q.sql, call.page.projection);
      refuseSourceWrite(db, q.sql, q.parameters, call.page.projection, call.page.handed, call.page.target);
      return call;
    }
    const page = call?.page;
    if (page === undefined || page.failed) return undefined;
    if (!page.ended) page.late ??= q.sql;
    else if (!lateAfter.has(page.key)) lateAfter.set(page.key, q.sql);
    return undefined;
  };
  return {
    // A refused query resolves with no rows rather than rejecting: the handler did not await it, so a rejection would be unhandled and end the process.
    async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
      if (admit(q) === undefined) return { rows: [] };
      const stmt = statement(db, s, q.sql);
      if (stmt.reader) return { rows: stmt.all(q.parameters) as R[] };
      const { changes, lastInsertRowid } = stmt.run(q.parameters);
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
    },
    async *streamQuery<R>(q: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
      if (admit(q) === undefined) return;
      const stmt = db.prepare(q.sql);
      if (!stmt.reader) throw new Error('ctx.db streams only queries that return rows');
      for (const row of stmt.iterate(q.parameters)) yield { rows: [row as R] };
    },
  };
}

/** A prepared statement for `sql`, reused while it is not busy (a handler's texts repeat per event). */
function statement(db: Db, s: HandlerDbState, sql: string): Statement {
  const hit = s.statements.get(sql);
  if (hit !== undefined && !hit.busy) return hit;
  const stmt = db.prepare(sql);
  if (hit === undefined) {
    if (s.statements.size >= STATEMENTS) s.statements.delete(s.statements.keys().next().value as string);
    s.statements.set(sql, stmt);
  }
  return stmt;
}
