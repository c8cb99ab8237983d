import type { Command } from 'commander';
import { dropProjection } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerDrop(program: Command): void {
  program
    .command('drop')
    .description(
      'Remove a projection from a target: its tables (only those it owns) and its row, in one target transaction. Stop a sync --follow of it first.',
    )
    .argument('<target>', 'target SQLite database')
    .argument('<projection>', 'the projection name (sluice health lists them)')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice drop cache.db issues_fts --json')
    .action((target: string, projection: string, opts: { json?: boolean }) => {
      const r = dropProjection(target, projection);
      emit(
        opts,
        S.dropOutput,
        r,
        () =>
          `dropped projection ${r.projection}${r.dropped.length === 0 ? ' (it owned no table)' : ` and its tables ${r.dropped.join(', ')}`}`,
      );
    });
}
