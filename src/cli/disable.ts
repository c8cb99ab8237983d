import type { Command } from 'commander';
import { openSource, disable } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerDisable(program: Command): void {
  program
    .command('disable')
    .description(
      'Remove capture from a source: with tables, from those tables only (their triggers and journal rows; the generation moves, TABLE_DISABLED); without, every sluice trigger and table (readers then rebuild).',
    )
    .argument('<db>', 'source SQLite database')
    .argument('[tables...]', 'captured tables to take capture off (default: the whole source)')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExamples:\n  $ sluice disable app.db labels --json\n  $ sluice disable app.db')
    .action((dbPath: string, tables: string[], opts: { json?: boolean }) => {
      const db = openSource(dbPath, { readonly: false });
      try {
        const r = disable(db, tables);
        emit(opts, S.disableOutput, r, () => {
          if (r.tables !== undefined)
            return `took capture off ${r.tables.map((t) => t.table).join(', ')} (TABLE_DISABLED): removed ${r.removed.length} triggers and emptied ${r.purgedEvents ?? 0} journal rows to tombstones (what a cursor anchored on one compares); generation ${r.generation ?? '?'}. Projections of ${r.tables.length === 1 ? 'it' : 'them'} are suspended by the next sync (TABLE_UNTRACKED) and reported by sluice health until ${r.tables.length === 1 ? 'it is' : 'they are'} enabled again or the projection dropped.`;
          return r.removed.length === 0
            ? 'nothing to remove: capture was not enabled'
            : `removed ${r.removed.length} objects: ${r.removed.join(', ')}`;
        });
      } finally {
        db.close();
      }
    });
}
