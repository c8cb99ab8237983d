import type { Command } from 'commander';
import { openSource, status, type ConsumerStatus } from '../index.ts';
import { enableHint, readQuietly, rearmFix, refuseTarget, shellWord } from '../internal.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'Read-only report: source id, generation, high-water seq, retention, tables and consumers. Exits 3 when a table is unarmed.',
    )
    .argument('<db>', 'source SQLite database')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice status app.db --json')
    // The source held while read (readQuietly; status holds each target it reads): a reader of a WAL file would leave a -wal and -shm.
    .action((dbPath: string, opts: { json?: boolean }) => readQuietly([dbPath], () => report(dbPath, opts)));
}

/** status of the source at `dbPath`, its file held. */
function report(dbPath: string, opts: { json?: boolean }): void {
  const db = openSource(dbPath, { readonly: true });
  try {
    const s = status(db);
    // A target passed for its source (the two files mixed up): enable, which the hint would name, refuses it.
    if (!s.enabled) refuseTarget(db, dbPath, 'status');
    const consumers = s.consumers.map((c) => {
      const fix = consumerFix(dbPath, c);
      return fix === undefined ? c : { ...c, fix };
    });
    emit(opts, S.statusOutput, { ...s, consumers }, () => {
      if (!s.enabled) return `capture is not enabled${s.problem !== undefined ? ` (${s.problem})` : ''}; run: ${enableHint(db, dbPath)}`;
      const lines = [
        `source ${s.sourceId}  generation ${s.generation}  seq ${s.seq}  pruned through ${s.prunedThrough}  retention ${s.retention}`,
        ...(s.lastReason === null ? [] : [`  last change: ${s.lastReason}`]),
        ...s.tables.map(
          (t) =>
            `  ${t.armed ? 'armed  ' : 'UNARMED'} ${t.name} [${t.mode}] key (${t.keyColumns.join(', ')})${t.excluded.length > 0 ? ` excluded (${t.excluded.join(', ')})` : ''} last seq ${t.lastSeq}${t.reason !== undefined ? `  ${t.reason}: ${t.detail ?? ''}; fix: ${rearmFix(dbPath, t.name, t.reason, t.exclude)}` : ''}`,
        ),
        ...consumers.map(
          (c) =>
            `  consumer ${c.name} at seq ${c.seq} (lag ${c.lag})${'fix' in c ? `  ${describeState(c.targetState)}; ${c.fix}` : c.targetState === 'dropped' ? '  dropped from its target: the next sync of the target forgets it' : ''}`,
        ),
      ];
      return lines.join('\n');
    });
    if (!s.enabled || s.tables.some((t) => !t.armed)) throw new ExitSignal(3);
  } finally {
    db.close();
  }
}

/** What clears a consumer whose projection is gone from its target, with the commands: forget it, or (lost) build it again. */
function consumerFix(dbPath: string, c: ConsumerStatus): string | undefined {
  if (c.projection === null || c.target === null) return undefined;
  const forget = `sluice forget ${shellWord(dbPath)} ${shellWord(c.name)}`;
  if (c.targetState === 'gone') return `forget it: ${forget}`;
  if (c.targetState === 'lost')
    return `build it again (sluice sync ${shellWord(dbPath)} ${shellWord(c.target)} --projection FILE, FILE being its definition), or forget it: ${forget}`;
  return undefined;
}

function describeState(state: ConsumerStatus['targetState']): string {
  return state === 'gone'
    ? 'its target is gone (no file at that path)'
    : 'its target no longer holds it (deleted and made again without it, or removed without sluice drop)';
}
