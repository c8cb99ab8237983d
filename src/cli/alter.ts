import type { Command } from 'commander';
import { alterWithForecast, type AlterResult, type AlterWithForecast } from '../index.ts';
import { alterRules } from '../internal.ts';
import { collect } from './enable.ts';
import { describeExplain } from './explain.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerAlter(program: Command): void {
  program
    .command('alter')
    .description(
      'Run DDL on a captured source in one write transaction, with capture moved out of the way and re-armed; say what each known consumer will do, and with --target what each projection of that target does at its next sync (as explain classifies it).',
    )
    .argument('<db>', 'source SQLite database')
    .argument('<ddl...>', 'the statements (one argument each, or several in one, separated by ;)')
    .option('--dry-run', 'run the DDL, report, and roll everything back')
    .option(
      '--target <db>',
      "a target synced from this source: forecast each of its projections through explain's classifier, over the source as the DDL leaves it (repeatable; with --dry-run too)",
      collect,
      [] as string[],
    )
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice alter app.db "ALTER TABLE issues DROP COLUMN legacy_flag" --dry-run --target cache.db\n  $ sluice alter app.db "ALTER TABLE issues ADD COLUMN due TEXT" --json',
    )
    .action(async (dbPath: string, ddl: string[], opts: { dryRun?: boolean; target: string[]; json?: boolean }) => {
      // Each argument ends its statement (a trailing -- comment cannot swallow the separator).
      const f = await alterWithForecast(dbPath, ddl.join('\n;\n'), { dryRun: opts.dryRun === true, targets: opts.target });
      const rules = alterRules(f.result);
      emit(
        opts,
        S.alterOutput,
        {
          ...f.result,
          consumers: f.consumers,
          ...(rules === undefined ? {} : { rules }),
          ...(f.targets === undefined ? {} : { targets: f.targets }),
        },
        () => human(f, rules),
      );
    });
}

function human(f: AlterWithForecast, rules: string | undefined): string {
  const r: AlterResult = f.result;
  const lines = [`${r.dryRun ? 'dry run (rolled back): ' : ''}${r.statements} statement(s) at seq ${r.seq}, generation ${r.generation}`];
  if (r.tables.length === 0) lines.push('no captured table changed');
  for (const t of r.tables) {
    // A rebuilt table is a new identity: every column of it is new, which says nothing more.
    const cols =
      t.change === 'rebuilt'
        ? 'made again under its name: a new table'
        : [...t.renamed.map((x) => `${x.from}->${x.to}`), ...t.added.map((c) => `+${c}`), ...t.removed.map((c) => `-${c}`)].join(' ');
    lines.push(`${t.table}: ${t.change}${cols === '' ? '' : ` (${cols})`}`);
  }
  if (f.consumers.length === 0) lines.push('no consumer has acknowledged a position in this source, so none can be told about');
  for (const c of f.consumers) {
    if (c.effects.length === 0) lines.push(`${c.consumer} (seq ${c.seq}): reads none of the changed tables, goes on`);
    for (const e of c.effects) lines.push(`${c.consumer} (seq ${c.seq}), ${e.table}: ${e.outcome}: ${e.detail}`);
  }
  if (rules !== undefined && f.consumers.some((c) => c.effects.some((e) => e.outcome === 'depends'))) lines.push(`rules: ${rules}`);
  for (const t of f.targets ?? [])
    lines.push(`forecast for ${t.target}${r.dryRun ? ' (had the alter committed)' : ''}:`, describeExplain(t));
  return lines.join('\n');
}
