import type { Command } from 'commander';
import { openDatabase, strip } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';
import { readQuietly } from '../internal.ts';
import { outPath } from './out-path.ts';

export function registerStrip(program: Command): void {
  program
    .command('strip')
    .description('Write a copy of a database with every _sluice_ object removed (the original is only read).')
    .argument('<db>', 'SQLite database')
    .requiredOption('--out <copy>', 'path of the copy (must not exist)', outPath)
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice strip app.db --out app-for-sharing.db')
    // The original held while read (readQuietly): a reader of a WAL file would leave a -wal and -shm beside it.
    .action((dbPath: string, opts: { out: string; json?: boolean }) =>
      readQuietly([dbPath], () => {
        const db = openDatabase(dbPath, { readonly: true, role: 'database' });
        try {
          const r = strip(db, opts.out);
          emit(opts, S.stripOutput, { out: opts.out, ...r }, () => `wrote ${opts.out} without ${r.removed.length} sluice objects`);
        } finally {
          db.close();
        }
      }),
    );
}
