import { Command } from 'commander';
import { openSource, readBatch, journalStartCursor } from '../index.ts';
import { eventToLine, readQuietly } from '../internal.ts';
import { collect, parseCount } from './enable.ts';
import { jsonReplacer } from './output.ts';
import { stdout } from './closed-pipe.ts';

export function registerChanges(program: Command): void {
  program
    .command('changes')
    .description('Print captured events as JSONL (one event per line), then {"cursor": ...} to continue from.')
    .argument('<db>', 'source SQLite database')
    .option(
      '--since <cursor>',
      'continue after this cursor (default: the start of the retained journal written since the tables were last armed)',
    )
    .option('--limit <n>', 'most events to print (at least 1)', parseCount, 1000)
    .option('--table <name>', 'only this table (repeatable)', collect, [] as string[])
    .option(
      '--columns <names>',
      'only updates that changed one of these columns (comma-separated, repeatable), plus every insert, delete and key change',
      (v: string, prev: string[]) => prev.concat(v.split(',').map((s) => s.trim())),
      [] as string[],
    )
    .option('--json', 'accepted for symmetry: the output is always JSONL')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice changes app.db --limit 100 > page1.jsonl\n  $ sluice changes app.db --since "$(tail -n1 page1.jsonl | jq -r .cursor)"\n  $ sluice changes app.db --table issues --columns title,body',
    )
    // The source held while read (readQuietly): a reader of a WAL file would leave a -wal and -shm beside it.
    .action((dbPath: string, opts: { since?: string; limit: number; table: string[]; columns: string[] }) =>
      readQuietly([dbPath], () => {
        const db = openSource(dbPath, { readonly: true });
        try {
          const tables = opts.table.length > 0 ? opts.table : undefined;
          const start = opts.since ?? journalStartCursor(db, tables);
          const batch = readBatch(db, start, {
            limit: opts.limit,
            ...(tables === undefined ? {} : { tables }),
            ...(opts.columns.length === 0 ? {} : { columns: opts.columns.filter((c) => c !== '') }),
          });
          const out: string[] = batch.events.map((e) => JSON.stringify(eventToLine(batch.sourceId, e), jsonReplacer));
          out.push(JSON.stringify({ cursor: batch.to }));
          stdout().write(`${out.join('\n')}\n`);
        } finally {
          db.close();
        }
      }),
    );
}
