import type { Command } from 'commander';
import { openSource, bump } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerBump(program: Command): void {
  program
    .command('bump')
    .description('Advance the generation after a rewrite triggers could not see; every reader rebuilds once.')
    .argument('<db>', 'source SQLite database')
    .requiredOption('--reason <text>', 'why (recorded, shown by status)')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice bump app.db --reason "bulk reload of issues"')
    .action((dbPath: string, opts: { reason: string; json?: boolean }) => {
      const db = openSource(dbPath);
      try {
        const r = bump(db, opts.reason);
        emit(opts, S.bumpOutput, r, () => `generation ${r.generation}`);
      } finally {
        db.close();
      }
    });
}
