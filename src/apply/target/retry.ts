import pRetry from 'p-retry';
import { FileBusyError, isSqliteBusy } from '../../errors.ts';

/** Default bound in ms on waiting for another process's write lock (sync --busy-timeout). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/**
 * SQLITE_BUSY errors raised by the source's or the target's lock (markBusy);
 * unmarked ones are the target's. Keyed by the error, which it annotates for
 * as long as the error lives: not per-connection state (connection-state.ts).
 */
const busyFile = new WeakMap<object, 'source' | 'target'>();

/** Records which file a SQLITE_BUSY error is about, for the message that names it (retryBusy). */
export function markBusy(err: unknown, role: 'source' | 'target'): void {
  if (isSqliteBusy(err) && typeof err === 'object' && err !== null && !busyFile.has(err)) busyFile.set(err, role);
}

/** The file a SQLITE_BUSY error was marked as (markBusy), or undefined: for a message that names the file the error does not. */
export function busyRoleOf(err: unknown): 'source' | 'target' | undefined {
  return typeof err === 'object' && err !== null ? busyFile.get(err) : undefined;
}

/** The wait before the second attempt (randomized up to twice as long), as pRetry's first backoff below. */
const FIRST_RETRY_MS = 10;

/**
 * Retries `fn` on SQLITE_BUSY / SQLITE_LOCKED only, for at most `timeoutMs`
 * (the connection's busy_timeout waits inside each attempt; a retry covers a
 * busy SQLite returns at once, e.g. a stale snapshot). Safe for a whole
 * batch: applying is idempotent against the target's cursor. Past the bound
 * it throws FileBusyError naming the file (`files`); anything else is raised
 * at once.
 */
export async function retryBusy<T>(
  fn: () => Promise<T>,
  timeoutMs: number,
  files: { readonly source: string; readonly target: string },
): Promise<T> {
  const started = Date.now();
  try {
    // The first attempt directly: a follower makes two of these calls per
    // source commit, and the retry machinery is only for a busy file.
    try {
      return await fn();
    } catch (err) {
      if (!isSqliteBusy(err)) throw err;
      const left = timeoutMs - (Date.now() - started);
      if (left <= 0) throw err;
      await new Promise((resolve) => setTimeout(resolve, FIRST_RETRY_MS * (1 + Math.random())));
    }
    return await pRetry(fn, {
      retries: 1000,
      maxRetryTime: Math.max(0, timeoutMs - (Date.now() - started)),
      minTimeout: FIRST_RETRY_MS,
      maxTimeout: 400,
      factor: 2,
      randomize: true,
      shouldRetry: ({ error }) => isSqliteBusy(error),
    });
  } catch (err) {
    if (!isSqliteBusy(err) || err instanceof FileBusyError) throw err;
    const role = busyFile.get(err as object) ?? 'target';
    throw new FileBusyError(role, files[role], timeoutMs, { cause: err });
  }
}
