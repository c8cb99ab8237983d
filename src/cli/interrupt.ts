import type { SyncReport } from '../index.ts';

/** Exit status of a run stopped by a signal, as a shell reports one: 128 + its number (130 for Ctrl-C). */
export const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 };

/** What bin/sluice.js leaves at this key when it trapped signals before the CLI was imported. */
const EARLY = Symbol.for('sluice.earlySignals');

/**
 * The signals that arrived before the command installed its own handlers:
 * bin/sluice.js traps SIGINT, SIGTERM and (for `run`, not on Windows) SIGHUP
 * from its first line, for `run` and the `--follow` commands, whose default
 * action would end the process while the CLI loads. Removes that trap: call
 * it once the caller's handlers are installed, so that a signal always finds one.
 * Empty when there was no trap (another command, the CLI run in-process).
 */
export function takeEarlySignals(): string[] {
  const g = globalThis as { [EARLY]?: { readonly received: readonly string[]; release(): void } };
  const early = g[EARLY];
  if (early === undefined) return [];
  delete g[EARLY];
  early.release();
  return [...early.received];
}

/**
 * Traps SIGINT/SIGTERM for a one-shot run: the first aborts `signal` (the
 * batch in flight commits, no other starts); `received` names it.
 */
export function trapInterrupt(): { readonly signal: AbortSignal; received(): string | undefined; release(): void } {
  const stop = new AbortController();
  let got: string | undefined;
  const on = (name: string) => () => {
    got ??= name;
    stop.abort();
  };
  const onInt = on('SIGINT');
  const onTerm = on('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  // One that came while the CLI loaded (a follower's, trapped by bin/sluice.js) stops it as if it came now.
  for (const name of takeEarlySignals()) if (name === 'SIGINT' || name === 'SIGTERM') on(name)();
  return {
    signal: stop.signal,
    received: () => got,
    release: () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    },
  };
}

/** What an interrupted sync committed, per projection, and where the next one resumes. */
export function describeInterrupted(r: SyncReport, signal: string): string {
  const at = r.projections.filter((p) => p.state === 'active' && p.error === undefined).map((p) => `${p.name} at seq ${p.seq}`);
  return `interrupted by ${signal}: the batch in flight was committed and no other started; committed ${at.length > 0 ? at.join(', ') : 'nothing'} (source at seq ${r.sourceSeq}); the next sync resumes there`;
}
