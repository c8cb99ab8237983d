import pRetry from 'p-retry';
import { isSqliteBusy } from '../errors.ts';

/**
 * Retries `fn` on SQLITE_BUSY / SQLITE_LOCKED only. Safe for a whole batch:
 * applying is idempotent against the target's cursor. Anything else is
 * raised at once.
 */
export function retryBusy<T>(fn: () => Promise<T>, retries = 8): Promise<T> {
  return pRetry(fn, { retries, minTimeout: 10, maxTimeout: 400, factor: 2, randomize: true, shouldRetry: ({ error }) => isSqliteBusy(error) });
}
