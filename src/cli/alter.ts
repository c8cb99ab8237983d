import type { Command } from 'commander';
import { openSource, alter, forecastAlter, type AlterResult, type ConsumerForecast } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerAlter(program: Command): void {
  program
    .command('alter')
    .description(
      'Run DDL on a captured source in one write transaction, with capture moved out of the way and re-armed; say what each known consumer will do.',
    )
    .argument('<db>', 'source SQLite database')
    .argument('<ddl...>', 'the statements (one argument each, or several in one, separated by ;)')
    .option('--dry-run', 'run the DDL, report, and roll everything back')
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice alter app.db "ALTER TABLE issues DROP COLUMN legacy_flag" --dry-run\n  $ sluice alter app.db "ALTER TABLE issues ADD COLUMN due TEXT" --json',
    )
    .action((dbPath: string, ddl: string[], opts: { dryRun?: boolean; json?: boolean }) => {
      const db = openSource(dbPath);
      try {
        // Each argument ends its statement (a trailing -- comment cannot swallow the separator).
        const r = alter(db, ddl.join('\n;\n'), { dryRun: opts.dryRun === true });
        const consumers = forecastAlter(db, r);
        emit(opts, S.alterOutput, { ...r, consumers }, () => human(r, consumers));
      } finally {
        db.close();
      }
    });
}

function human(r: AlterResult, consumers: readonly ConsumerForecast[]): string {
  const lines = [`${r.dryRun ? 'dry run (rolled back): ' : ''}${r.statements} statement(s) at seq ${r.seq}, generation ${r.generation}`];
  if (r.tables.length === 0) lines.push('no captured table changed');
  for (const t of r.tables) {
    const cols = [...t.added.map((c) => `+${c}`), ...t.removed.map((c) => `-${c}`)].join(' ');
    lines.push(`${t.table}: ${t.change}${cols === '' ? '' : ` (${cols})`}`);
  }
  if (consumers.length === 0) lines.push('no consumer has acknowledged a position in this source, so none can be told about');
  for (const c of consumers) {
    if (c.effects.length === 0) lines.push(`${c.consumer} (seq ${c.seq}): reads none of the changed tables, goes on`);
    for (const e of c.effects) lines.push(`${c.consumer} (seq ${c.seq}), ${e.table}: ${e.outcome}: ${e.detail}`);
  }
  return lines.join('\n');
}
