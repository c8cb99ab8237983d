import type { SyncReport } from '../index.ts';

/** Exit status of a run stopped by a signal, as a shell reports one: 128 + its number (130 for Ctrl-C). */
export const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 };

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
