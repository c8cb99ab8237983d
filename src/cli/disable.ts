import type { Command } from 'commander';
import { openSource, disable } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerDisable(program: Command): void {
  program
    .command('disable')
    .description('Remove every sluice trigger and table from a source (readers then rebuild).')
    .argument('<db>', 'source SQLite database')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice disable app.db')
    .action((dbPath: string, opts: { json?: boolean }) => {
      const db = openSource(dbPath, { readonly: false });
      try {
        const r = disable(db);
        emit(opts, S.disableOutput, r, () =>
          r.removed.length === 0
            ? 'nothing to remove: capture was not enabled'
            : `removed ${r.removed.length} objects: ${r.removed.join(', ')}`,
        );
      } finally {
        db.close();
      }
    });
}
