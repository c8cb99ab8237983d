import type { Command } from 'commander';
import { collect } from './enable.ts';
import { importFile } from '../index.ts';
import { loadInputs } from './sync.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';
import { workBar } from './progress.ts';
import { stderr } from './closed-pipe.ts';

export function registerImport(program: Command): void {
  program
    .command('import')
    .description('Apply a file written by `sluice export` to a target, with the same cursor rules as sync (importing twice applies once).')
    .argument('<target>', 'target SQLite database (created if missing)')
    .argument('<file>', 'JSONL file from sluice export')
    .option(
      '--projection <file>',
      "projection definition file, .json or .ts, or '*' for a mirror of every table in the file, and of one a later file's snapshot holds (repeatable; default: the target's set, and on a new target '*', stored as sync stores it)",
      collect,
      [] as string[],
    )
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice import cache.db changes.jsonl --projection projections/issues-search.json')
    .action(async (target: string, file: string, opts: { projection: string[]; json?: boolean }) => {
      const defs = await loadInputs(opts.projection);
      const bar = workBar(opts, 'import', 'bytes');
      const onProgress = (p: { bytes: number; size: number; batchesApplied: number; batchesSkipped: number }) =>
        bar.update(p.bytes, p.size, `${p.batchesApplied} batches applied, ${p.batchesSkipped} skipped`);
      let r: Awaited<ReturnType<typeof importFile>>;
      try {
        r = await importFile(target, file, { ...(defs === undefined ? {} : { projections: defs }), onProgress });
      } finally {
        bar.stop();
      }
      emit(opts, S.importOutput, r, () =>
        [
          `read ${r.lines} lines: applied ${r.batchesApplied} batches, skipped ${r.batchesSkipped} already applied${r.incompleteTail > 0 ? `, ignored ${r.incompleteTail} lines after the last complete batch` : ''}`,
          ...r.projections.map(projectionLine),
        ].join('\n'),
      );
      exitFor(r.projections, 'import the file again');
    });
}

type Fed = Awaited<ReturnType<typeof importFile>>['projections'][number];

/** A projection's line in import's and subscribe's report. */
export function projectionLine(p: Fed): string {
  const at = `${p.state}${p.reason !== undefined ? ` ${p.reason}` : ''} at seq ${p.seq}${p.rebuilt !== undefined ? `, rebuilt from the file's snapshot (${p.rebuilt})` : ''}`;
  if (p.action !== undefined) return `  ${p.name}: ${at}\n     -> ${p.action}`;
  if (p.error !== undefined)
    return `  ${p.name}: FAILED ${p.error.code}: ${p.error.message} (${at}; nothing of it was committed; the other projections went on)`;
  return `  ${p.name}: ${at}`;
}

/**
 * Each failed projection on stderr (a custom handler's failure, recorded as
 * sync records one; `again`: what runs it again), then the exit code, as
 * sync's: 1 when one failed, else 3 when one is not active.
 */
export function exitFor(projections: readonly Fed[], again: string): void {
  for (const p of projections)
    if (p.error !== undefined)
      stderr().write(
        `sluice: ${p.error.code}: projection ${p.name}: ${p.error.message} (fix the cause and ${again}: it goes on with ${p.name} from where it failed)\n`,
      );
  if (projections.some((p) => p.error !== undefined)) throw new ExitSignal(1);
  if (projections.some((p) => p.state !== 'active')) throw new ExitSignal(3);
}
