import type { Db } from '../../sqlite/index.ts';

/*
 * The function the guards of a protected target (apply/edits/protect.ts)
 * call: a connection that defines it to return 1 writes the projection
 * tables; any other program's write is refused.
 */

export const PROTECT_FUNCTION = 'sluice_protect';

/** Lets this connection write protected projection tables (every sluice connection that applies to a target calls it). */
export function allowProjectionWrites(db: Db): void {
  db.function(PROTECT_FUNCTION, { deterministic: true }, () => 1);
}

/**
 * Lets a connection that must not write protected projection tables
 * (sluice query's) compile a write to one: the guard's function returns 0,
 * so the guard refuses the write with its own message (the table, its
 * projection, the fix) instead of SQLite's "no such function".
 */
export function refuseProjectionWrites(db: Db): void {
  db.function(PROTECT_FUNCTION, { deterministic: true }, () => 0);
}
