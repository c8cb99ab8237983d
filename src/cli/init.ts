import type { Command } from 'commander';
import { writeInitFile } from '../internal.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';
import { outPath } from './out-path.ts';

export function registerInit(program: Command): void {
  program
    .command('init')
    .description(
      'Write a commented sluice.yml for a database: its tables captured, a mirror of each, an example full-text index. Writes nothing to the database.',
    )
    .argument('<db>', 'SQLite database (read only)')
    .option('--out <file>', 'where to write the pipeline file (must not exist)', outPath)
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExample:\n  $ sluice init app.db          # writes sluice.yml beside app.db\n  $ sluice run --config sluice.yml',
    )
    .action((dbPath: string, opts: { out?: string; json?: boolean }) => {
      const r = writeInitFile(dbPath, opts.out);
      emit(
        opts,
        S.initOutput,
        {
          out: r.out,
          source: r.source,
          target: r.target,
          tables: r.tables,
          skipped: r.skipped.map((s) => ({ table: s.table, code: s.code })),
          search: r.search,
        },
        () =>
          [
            `wrote ${r.out}: captures ${r.tables.length === 0 ? 'no table yet' : r.tables.join(', ')} of ${r.source} and ${r.declaresTarget ? `mirrors ${r.tables.length === 1 ? 'it' : 'them'} into ${r.target}` : `declares no target: each is in keys or counter mode, which feed no mirror (the file says how to add ${r.target})`}`,
            ...r.skipped.map((s) => `left out ${s.table}: ${s.code} (listed in the file, commented out, with why)`),
            r.search === null ? '' : `an fts5 index of ${r.search.table} (${r.search.columns.join(', ')}) is in the file, commented out`,
            `next: read it, then sluice run --config ${r.out}`,
          ]
            .filter((l) => l !== '')
            .join('\n'),
      );
    });
}
