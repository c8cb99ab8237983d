import type { Command } from 'commander';
import { openSource, prune } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerPrune(program: Command): void {
  program
    .command('prune')
    .description('Delete journal entries older than the retention now (writers also prune as they go).')
    .argument('<db>', 'source SQLite database')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice prune app.db --json')
    .action((dbPath: string, opts: { json?: boolean }) => {
      const db = openSource(dbPath);
      try {
        const r = prune(db);
        emit(opts, S.pruneOutput, r, () => `deleted ${r.deleted} journal entries; pruned through seq ${r.prunedThrough}`);
      } finally {
        db.close();
      }
    });
}
