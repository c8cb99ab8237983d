import type { Command } from 'commander';
import { checkPipelineSources, loadPipeline, planPipeline, type PipelinePlan } from '../index.ts';
import { readPipelineQuietly } from '../internal.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerPlan(program: Command): void {
  program
    .command('plan')
    .description(
      'Print what sluice run would do to reach the pipeline file: per source the tables to enable and the undeclared capture, per target each projection built, continued, rebuilt (with why) or refused (with the fix), what is undeclared (dropped and forgotten with prune: true). Changed definitions are classified as sluice explain classifies them. Writes nothing: no database is changed and no file is created, but for one: a WAL database left with a -wal and no -shm (an application that crashed) gets the -shm SQLite makes for any reader of it.',
    )
    .option('--config <file>', 'the pipeline file', 'sluice.yml')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExamples:\n  $ sluice plan\n  $ sluice plan --config /etc/sluice/sluice.yml --json')
    .action(async (opts: { config: string; json?: boolean }) => {
      const pipeline = await loadPipeline(opts.config);
      // The sources are checked inside the hold too: their reader would leave a -wal and -shm otherwise.
      const plan = await readPipelineQuietly(pipeline, async () => {
        checkPipelineSources(pipeline);
        return planPipeline(pipeline);
      });
      emit(opts, S.planOutput, plan, () => planText(plan));
    });
}

function planText(plan: PipelinePlan): string {
  const lines: string[] = [];
  for (const s of plan.sources) {
    lines.push(`source ${s.path}`);
    for (const e of s.enable)
      lines.push(
        `  enable ${e.table} (${e.mode}${e.from === null ? '' : `, now captured in ${e.from} mode`}${e.exclude === undefined ? '' : `, excluding ${e.exclude.length === 0 ? 'no column' : e.exclude.join(', ')}`}${e.include === undefined ? '' : `, including ${e.include.join(', ')}, new since armed: re-arms it`})`,
      );
    for (const h of s.held) lines.push(`  not armed ${h.table} (${h.code}): enables nothing; ${h.fix}`);
    for (const r of s.enableRefused) lines.push(`  enable of ${r.tables.join(', ')} (${r.mode}) refused (${r.code}): ${r.fix}`);
    for (const u of s.undeclaredCapture) lines.push(`  undeclared capture ${u.table}: ${u.fix}`);
    for (const a of s.acknowledgements)
      lines.push(`  ${a.does === 'forget' ? 'forget' : 'undeclared'} acknowledgement ${a.consumer}: ${a.fix}`);
  }
  for (const t of plan.targets) {
    lines.push(`target ${t.path}${t.exists ? '' : t.refused === null ? ' (does not exist: built)' : ' (does not exist)'}`);
    if (t.refused !== null)
      lines.push(
        `  refused as a whole (${t.refused.code}${t.refused.projection === null ? '' : `, projection ${t.refused.projection}`}): nothing of it runs; ${t.refused.fix}`,
      );
    for (const p of t.projections) {
      const why = p.reason === null ? '' : ` (${p.reason})`;
      lines.push(`  ${p.does} ${p.name}${p.kind === 'unknown' ? '' : ` [${p.kind}]`}${why}${p.fix === undefined ? '' : `: ${p.fix}`}`);
    }
  }
  lines.push(plan.converged ? 'nothing to do: everything declared is there and continues' : '');
  return lines.join('\n').trimEnd();
}
