import type { Db } from './db.ts';
import { quoteIdent } from './quote.ts';

/** What a statement's program writes in `main`, read from EXPLAIN. */
export interface StatementWrites {
  /** The tables (a table's own name for its indexes too) whose b-tree it opens for writing, empties or destroys. */
  readonly tables: readonly string[];
  /** The virtual table objects it updates (VUpdate's p4, as EXPLAIN prints it). */
  readonly vtabs: readonly unknown[];
}

interface Op {
  readonly addr: number | bigint;
  readonly opcode: string;
  readonly p1: number | bigint;
  readonly p2: number | bigint;
  readonly p3: number | bigint;
  readonly p4: unknown;
}

/**
 * The writes of statement `sql` in `main`, from its program (EXPLAIN): each
 * b-tree it opens for writing (OpenWrite), empties whole (Clear: a DELETE
 * with no WHERE) or destroys (Destroy: a DROP), named by its table, and each
 * virtual table it updates. EXPLAIN lists the programs of the triggers the
 * statement fires after its own, each from addr 0: `triggers: false` reads
 * the statement's own program only. Undefined when it does not compile (its
 * own run says why).
 */
export function statementWrites(db: Db, sql: string, options: { readonly triggers: boolean }): StatementWrites | undefined {
  let program: Op[];
  try {
    program = db.prepare(`EXPLAIN ${sql}`).all() as Op[];
  } catch {
    return undefined;
  }
  if (!options.triggers) {
    const end = program.findIndex((op, i) => i > 0 && Number(op.addr) === 0);
    if (end > 0) program = program.slice(0, end);
  }
  const byRoot = new Map(
    (
      db.prepare("SELECT rootpage, tbl_name FROM main.sqlite_schema WHERE type IN ('table', 'index') AND rootpage > 0").raw().all() as [
        number | bigint,
        string,
      ][]
    ).map(([root, table]) => [Number(root), table]),
  );
  const tables = new Set<string>();
  const vtabs: unknown[] = [];
  for (const op of program) {
    const root =
      op.opcode === 'OpenWrite' && Number(op.p3) === 0 ? op.p2 : op.opcode === 'Clear' || op.opcode === 'Destroy' ? op.p1 : undefined;
    const table = root === undefined ? undefined : byRoot.get(Number(root));
    if (table !== undefined) tables.add(table);
    if (op.opcode === 'VUpdate') vtabs.push(op.p4);
  }
  return { tables: [...tables], vtabs };
}

/**
 * The virtual table object this connection holds for `table` (a schema-qualified
 * name as SQL takes it), as EXPLAIN prints it in a VOpen or a VUpdate: how a
 * statement's program names the virtual table it updates (StatementWrites.vtabs).
 * Undefined when `table` is no virtual table, or cannot be read.
 */
export function virtualTableObject(db: Db, table: string): string | undefined {
  try {
    const op = (db.prepare(`EXPLAIN SELECT 1 FROM ${table}`).all() as { opcode: string; p4: unknown }[]).find((o) => o.opcode === 'VOpen');
    return typeof op?.p4 === 'string' ? op.p4 : undefined;
  } catch {
    return undefined;
  }
}

/** What the program of one trigger a statement fires writes (triggerWrites). */
export interface TriggerWrites {
  /** The trigger's name, as its program's first op names it (`-- TRIGGER name`). */
  readonly trigger: string;
  /** The tables of `schema` (a table's own name for its indexes too) whose b-tree it opens for writing, empties or destroys. */
  readonly tables: readonly string[];
  /** The virtual table objects it updates (VUpdate's p4). */
  readonly vtabs: readonly unknown[];
}

/**
 * The writes in `schema` of each trigger program statement `sql` fires
 * (EXPLAIN lists them after the statement's own program, each from addr 0
 * and named by its first op, a trigger fired by another trigger's write
 * included), the statement's own writes left out. A trigger in more than
 * one program (fired ON CONFLICT otherwise) has its writes together.
 * Undefined when `sql` does not compile (its own run says why).
 */
export function triggerWrites(db: Db, sql: string, schema: string): TriggerWrites[] | undefined {
  let program: Op[];
  try {
    program = db.prepare(`EXPLAIN ${sql}`).all() as Op[];
  } catch {
    return undefined;
  }
  const seq = (db.pragma('database_list') as { seq: number | bigint; name: string }[]).find(
    (d) => d.name.toLowerCase() === schema.toLowerCase(),
  )?.seq;
  if (seq === undefined) return undefined;
  const byRoot = new Map(
    (
      db
        .prepare(`SELECT rootpage, tbl_name FROM ${quoteIdent(schema)}.sqlite_schema WHERE type IN ('table', 'index') AND rootpage > 0`)
        .raw()
        .all() as [number | bigint, string][]
    ).map(([root, table]) => [Number(root), table]),
  );
  const out = new Map<string, { tables: Set<string>; vtabs: unknown[] }>();
  let current: { tables: Set<string>; vtabs: unknown[] } | undefined;
  for (const [i, op] of program.entries()) {
    if (i > 0 && Number(op.addr) === 0) {
      const name = typeof op.p4 === 'string' && op.p4.startsWith('-- TRIGGER ') ? op.p4.slice('-- TRIGGER '.length) : '';
      current = out.get(name) ?? { tables: new Set(), vtabs: [] };
      out.set(name, current);
    }
    if (current === undefined) continue; // the statement's own program
    // OpenWrite's p3, Clear's p2 and Destroy's p3: the database the b-tree is in.
    const root =
      op.opcode === 'OpenWrite' && Number(op.p3) === Number(seq)
        ? op.p2
        : op.opcode === 'Clear' && Number(op.p2) === Number(seq)
          ? op.p1
          : op.opcode === 'Destroy' && Number(op.p3) === Number(seq)
            ? op.p1
            : undefined;
    const table = root === undefined ? undefined : byRoot.get(Number(root));
    if (table !== undefined) current.tables.add(table);
    if (op.opcode === 'VUpdate') current.vtabs.push(op.p4);
  }
  return [...out].map(([trigger, w]) => ({ trigger, tables: [...w.tables], vtabs: w.vtabs }));
}
