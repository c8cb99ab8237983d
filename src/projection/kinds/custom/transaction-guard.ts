import { FailClosedError } from '../../../errors.ts';

/*
 * A handler runs inside sluice's transaction for its batch: its rows and the
 * projection's cursor commit together, or neither does. A raw COMMIT (or
 * END), ROLLBACK, BEGIN, SAVEPOINT, RELEASE or ROLLBACK TO would end that
 * transaction, or undo or merge part of it, while sluice goes on as if it
 * held: the batch's first rows committed without their cursor, or a cursor
 * committed past rows rolled back. So each is refused before it runs, like
 * ctx.db.transaction(). better-sqlite3 prepares one statement per text, so
 * its first keyword (after comments) says whether it is one.
 */
const CONTROL = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE)\b/i;

/** Throws CUSTOM_TRANSACTION_CONTROL, before `sql` runs, when it is a transaction control statement of custom projection `projection`'s handler. */
export function refuseTransactionControl(sql: string, projection: string): void {
  const m = CONTROL.exec(sql);
  if (m === null) return;
  throw new FailClosedError(
    'CUSTOM_TRANSACTION_CONTROL',
    `The handler of custom projection ${projection} ran ${(m[1] as string).toUpperCase()}, a transaction control statement: a handler runs inside sluice's transaction for its batch, which commits its rows and its cursor together, so it may not begin, end, or roll back any part of it. The statement was not run, and nothing of this batch was kept. Write through ctx.db without transaction control; a throw rolls the whole batch back.`,
    { projection },
  );
}
