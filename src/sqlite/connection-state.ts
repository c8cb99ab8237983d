import type { Db } from './db.ts';

/*
 * What sluice keeps per connection: prepared statements, the work tables it
 * made, the text encoding, the last capture verification, a Kysely instance.
 * Each is valid for one connection only (a statement belongs to the
 * connection that prepared it), so it lives in that connection's
 * ConnectionState, and goes with it: when the connection is closed
 * (closeDatabase, or found closed on the next use) every slot is dropped.
 *
 * A module declares its slot once, at top level, with what makes its value
 * for a connection; this layer knows neither the modules nor their types.
 * Connections come from openDatabase and from library users alike (every
 * reader takes a better-sqlite3 Database), so a state is made on first use,
 * and this file's map is the one place that ties state to a connection.
 */

/** A typed per-connection value: `init` makes it on first use for a connection. */
interface Slot<T> {
  readonly name: string;
  readonly init: (db: Db) => T;
}

const names = new Set<string>();

/** Declares a slot (once per module, at top level). Two slots with one name are a programming error. */
export function slot<T>(name: string, init: (db: Db) => T): Slot<T> {
  if (names.has(name)) throw new Error(`connection state slot ${name} is declared twice`);
  names.add(name);
  return { name, init };
}

class ConnectionState {
  readonly #values = new Map<Slot<unknown>, unknown>();

  constructor(readonly db: Db) {}

  /** The slot's value for this connection, made by its `init` on first use. */
  get<T>(s: Slot<T>): T {
    if (this.#values.has(s)) return this.#values.get(s) as T;
    const v = s.init(this.db);
    this.#values.set(s, v);
    return v;
  }

  /** The slot's value if it was made, without making it. */
  peek<T>(s: Slot<T>): T | undefined {
    return this.#values.get(s) as T | undefined;
  }

  /** Forgets one slot's value: the next `get` makes it again. */
  delete(s: Slot<unknown>): void {
    this.#values.delete(s);
  }

  /** Forgets every slot's value (the connection was closed). */
  clear(): void {
    this.#values.clear();
  }
}

const states = new WeakMap<Db, ConnectionState>();

/** The state of `db`; a closed connection's state is dropped, so nothing of it is reused. */
export function connectionState(db: Db): ConnectionState {
  let s = states.get(db);
  if (s !== undefined && !db.open) {
    s.clear();
    states.delete(db);
    s = undefined;
  }
  if (s === undefined) {
    s = new ConnectionState(db);
    if (db.open) states.set(db, s);
  }
  return s;
}

/** Closes `db` and drops its state (its prepared statements first). A no-op on a closed connection but for the state. */
export function closeDatabase(db: Db): void {
  states.get(db)?.clear();
  states.delete(db);
  if (db.open) db.close();
}
