import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../../sqlite/index.ts';
import { fileStamp, realFilePath, WalFiles } from '../../sqlite/index.ts';

export interface WaitOptions {
  /** Fallback poll interval in ms. Default 250 with a file watch (QUIET_POLL_MS once `quiet` says so), 20 without. */
  readonly pollMs?: number;
  /**
   * Whether the source has been quiet for a while (followSyncer: no pass for
   * QUIET_MS). With a file watch and no `pollMs`, the fallback poll then
   * runs every QUIET_POLL_MS instead of every 250 ms: a commit still wakes
   * the watch at once; only what the poll looks for while idle (onIdle) is
   * seen later. Absent: never quiet.
   */
  readonly quiet?: () => boolean;
  /**
   * Called each time the fallback poll finds no change (between calls of
   * onChange, never during one); returning true calls onChange now, as a
   * commit would (something else than the source changed). Also when wakes
   * that bring no commit keep coming (a program that opens and closes the
   * source writes its -wal each time): once a poll interval has passed with
   * neither a pass nor a call.
   */
  readonly onIdle?: () => boolean | void | Promise<boolean | void>;
  /**
   * Stops the wait (after the pass in flight) when aborted. Without one,
   * SIGINT and SIGTERM stop it; with one, the caller decides (a worker
   * thread of `sluice run` receives no signals: its supervisor aborts it).
   */
  readonly signal?: AbortSignal;
  /**
   * Called each time a watch wake finds nothing new and the wait looks again
   * after its short sleeps (SPIN_US). For tests: a burst's backlog of file
   * events must cost one look per turn of the event loop, not one per event.
   */
  readonly onSpin?: () => void;
}

/*
 * A commit in WAL mode appends its frames to the -wal file (each write
 * wakes the watch) and only then publishes them in the shared-memory index,
 * which is when data_version moves. A wake often lands in between: the
 * writer publishes some tens of microseconds after its first frame, and the
 * watch wakes us on that frame. So a watch wake that finds no change looks
 * again: first after a few short sleeps (SPIN_US, in microseconds, on
 * Atomics.wait, which blocks this thread without using the CPU: a timer
 * cannot wait less than 1 ms), which catch the usual case (bench/follow.ts
 * measured about half of the wakes landing there, each then costing the
 * 1 ms timer), then a few times on the timer (RECHECK_MS), for a writer
 * descheduled mid-commit. Only when a commit is under way, though: many
 * wakes are for no commit (a commit's later frames, whose events arrive
 * after the pass that applied it; a checkpoint's writes to the database),
 * and the sleeps on each of those cost about 0.6 ms of a blocked thread per
 * commit, in which the next commit waited for the sleep to end. The log
 * says which (WalFiles.pending: frames written past its last commit).
 */
const SPIN_US = [20, 40, 80, 160, 320] as const;
const RECHECK_MS = [1, 4, 10] as const;

/** The fallback poll's interval with a file watch; also how often a follower looks for hand edits while its source is idle (idle-edit-check.ts). */
export const WATCHED_POLL_MS = 250;

/**
 * The fallback poll's interval with a file watch once the caller says the
 * source is quiet (WaitOptions.quiet). A follower of an idle source woke
 * eight times a second (this poll, and its look for hand edits); sluice
 * run's idle CPU is mostly such wakes, four target threads' worth.
 */
export const QUIET_POLL_MS = 1000;

/** What Atomics.wait sleeps on (nothing ever notifies it). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Sleeps `us` microseconds, blocking the thread (no event runs meanwhile). */
function sleepUs(us: number): void {
  Atomics.wait(sleeper, 0, 0, us / 1000);
}

/**
 * The environment variable that turns the file watch off: a follower then
 * wakes on its poll alone (docs/cli.md). Backquoted: it is no reason code
 * (the catalog's test takes every quoted NAME_LIKE_THIS for one).
 */
const NO_WATCH_ENV = `SLUICE_NO_WATCH`;

/**
 * Runs `onChange` (a pass) at once, and again whenever another connection
 * commits to the source, until SIGINT/SIGTERM. Wakes on writes to the
 * database and WAL files (fs.watch), with a cheap PRAGMA data_version poll
 * as the fallback (the only way with SLUICE_NO_WATCH=1).
 *
 * Each pass starts from a data_version read on `db` (the connection the
 * pass reads the source through) before it, and the wait after it compares
 * with that value: a commit made before the read is in the pass, one made
 * after it moves data_version and brings another pass. The first pass is
 * run here for that reason: a caller's own pass before the call would leave
 * a gap (its read of the journal, then the starting point) in which a
 * commit counts as seen and the follower sleeps on it until an unrelated
 * commit wakes it. A caller that ran one anyway gets one more pass at once,
 * which closes the gap.
 */
export async function waitForChange(
  db: Db,
  sourcePath: string,
  onChange: () => void | Promise<void>,
  options: number | WaitOptions = {},
): Promise<void> {
  const { pollMs, onIdle, signal, onSpin, quiet } =
    typeof options === 'number' ? { pollMs: options, onIdle: undefined, signal: undefined, onSpin: undefined, quiet: undefined } : options;
  // The file itself, past any symlink: SQLite writes it and its -wal where the links lead, and a watch of
  // the link's folder would never wake (every commit then waited for the poll, a second once quiet).
  const source = realFilePath(sourcePath);
  const base = path.basename(source);
  let stopping = false;
  let wake: (() => void) | undefined;
  let watchWoke = false;
  let wakeQueued = false; // a watch wake waits for the rest of its turn's events (see the watch below)
  const nudge = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onSignal = () => {
    stopping = true;
    nudge();
  };
  if (signal === undefined) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  } else if (signal.aborted) stopping = true;
  else signal.addEventListener('abort', onSignal, { once: true });
  let watcher: fs.FSWatcher | undefined;
  try {
    if (watchOff()) throw new Error(`${NO_WATCH_ENV} is set`);
    watcher = fs.watch(path.dirname(source), (_event, file) => {
      if (file !== null && (file === base || file === `${base}-wal`)) {
        // One commit writes several frames, and a follower busy in a pass gets every event queued
        // meanwhile in one turn of the event loop (thousands after a burst): each would otherwise
        // resume the loop below, find the commits already applied and spin, about 0.6 ms apiece,
        // for seconds after the burst. Waking once the turn's events are all delivered
        // (setImmediate runs after them) makes a backlog cost one look.
        watchWoke = true;
        if (!wakeQueued) {
          wakeQueued = true;
          setImmediate(() => {
            wakeQueued = false;
            nudge();
          });
        }
      }
    });
  } catch {
    watcher = undefined;
  }
  const interval = (): number => pollMs ?? (watcher === undefined ? 20 : quiet?.() === true ? QUIET_POLL_MS : WATCHED_POLL_MS);
  // The source's log, read for whether a commit is under way when a watch wake finds none published.
  const log = watcher === undefined ? undefined : new WalFiles(source);
  const dataVersion = db.prepare('PRAGMA main.data_version').pluck();
  let seen: number | undefined; // the data_version the last pass started from; none yet: the first iteration runs one
  let rechecks: number = RECHECK_MS.length; // the next entry of RECHECK_MS; its length: none pending
  let polled = false; // the last wait was the fallback poll, and it ran out
  // When the last pass or onIdle call ended: wakes without a commit (a reader's open and close of the
  // source touch its -wal) kept the poll from ever running out, and onIdle from ever being called.
  let activeMs = Date.now();
  let stamped: string | undefined; // the source file's stamp before the last pass (fileStamp)
  try {
    while (!stopping) {
      const now = fileStamp(source); // before data_version: a rewrite after it brings another pass (empty: the pass says SOURCE_REPLACED)
      const v = Number(dataVersion.get() as bigint);
      const rewritten = v === seen && now !== stamped;
      if (rewritten) {
        // The file was written under the connection with no commit published (a checkpoint, or a copy of an older
        // file over it: cp bak.db app.db), which moves no data_version, and in WAL mode SQLite keeps the pages it
        // cached: they are dropped, and a pass reads the file as it is (an older copy: SEQ_REGRESSED, a rebuild).
        db.exec('PRAGMA shrink_memory');
      }
      stamped = now;
      if (v !== seen || rewritten) {
        seen = v;
        watchWoke = false; // wakes from now on may be for commits this pass does not see (read before it, on its connection)
        rechecks = RECHECK_MS.length;
        polled = false;
        await onChange();
        activeMs = Date.now();
        continue; // more may have committed while we worked
      }
      if (watchWoke) {
        watchWoke = false;
        if (log?.pending() === false) {
          // No commit under way: the wake was for writes of commits already seen (a pass takes
          // about as long as a commit's frames, whose later writes wake us after it), or a
          // checkpoint's. A commit published between the two looks is taken now; one late look
          // (the last of RECHECK_MS) bounds what a log the hint misread could delay.
          if (Number(dataVersion.get() as bigint) !== seen) continue;
          rechecks = RECHECK_MS.length - 1;
        } else {
          // A watch wake with nothing new yet: the commit is likely being published now (above).
          onSpin?.();
          if (spinFor(dataVersion, seen)) continue;
          rechecks = 0; // and look again shortly
        }
      }
      if (polled || Date.now() - activeMs >= interval()) {
        polled = false;
        const change = (await onIdle?.()) === true;
        activeMs = Date.now();
        if (change) {
          await onChange();
          activeMs = Date.now();
          continue;
        }
      }
      const recheck = rechecks < RECHECK_MS.length;
      const delay = recheck ? (RECHECK_MS[rechecks++] as number) : interval();
      polled = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          wake = undefined;
          resolve(!recheck);
        }, delay);
        wake = () => {
          clearTimeout(timer);
          resolve(false);
        };
      });
    }
  } finally {
    watcher?.close();
    log?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    signal?.removeEventListener('abort', onSignal);
  }
}

/** Whether data_version moved from `seen` within the short sleeps of SPIN_US (false: it did not). */
function spinFor(dataVersion: { get(): unknown }, seen: number | undefined): boolean {
  for (const us of SPIN_US) {
    sleepUs(us);
    if (Number(dataVersion.get() as bigint) !== seen) return true;
  }
  return false;
}

function watchOff(): boolean {
  const v = process.env[NO_WATCH_ENV];
  return v !== undefined && v !== '' && v !== '0';
}
