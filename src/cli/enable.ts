import { Command, Option, InvalidArgumentError } from 'commander';
import { openSource, enable, CAPTURE_MODES, type RearmedTable, type CaptureMode } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

/** Commander accumulator for repeatable options (--table a --table b). */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `a,b , c` -> ['a', 'b', 'c']; '' -> [] (every column captured again). */
export function parseColumnList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** A whole number of at least 1 (a count of things to print or take: 0 would be taken as 1 or as no limit). */
export function parseCount(value: string): number {
  const n = parseWholeNumber(value);
  if (n < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got "${value}"`);
  return n;
}

export function parseWholeNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return n;
}

/** "issues (TRIGGER_MISSING: trigger _sluice_t1_upd is missing), ..." */
export function describeRearmed(tables: readonly RearmedTable[]): string {
  return tables.map((t) => `${t.table} (${t.reason}${t.detail === undefined ? '' : `: ${t.detail}`})`).join(', ');
}

export function registerEnable(program: Command): void {
  program
    .command('enable')
    .description(
      'Capture inserts, updates and deletes of tables (idempotent; re-arms what is missing). Switches the database to WAL once it succeeds.',
    )
    .argument('<db>', 'source SQLite database')
    .argument('<table...>', 'tables to capture')
    .addOption(new Option('--mode <mode>', 'what each event records').choices([...CAPTURE_MODES]).default('images'))
    .option('--retention <n>', 'seqs kept in the journal (min 1024)', parseWholeNumber)
    .option(
      '--exclude <columns>',
      'comma-separated columns of the named tables to leave out of capture (never journaled); "" captures every column again; absent: each table keeps its set',
      parseColumnList,
    )
    .option(
      '--include <columns>',
      'comma-separated columns new since a table was armed to capture: while a table leaves out a column it had then, a new column may be that one renamed, so enable refuses until each is named in --exclude or here',
      parseColumnList,
    )
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice enable app.db issues comments --mode images --retention 1000000\n  $ sluice enable app.db users --exclude password_hash,totp_secret',
    )
    .action(
      (
        dbPath: string,
        tables: string[],
        opts: { mode: CaptureMode; retention?: number; exclude?: string[]; include?: string[]; json?: boolean },
      ) => {
        const db = openSource(dbPath);
        try {
          const r = enable(db, tables, {
            mode: opts.mode,
            ...(opts.retention === undefined ? {} : { retention: opts.retention }),
            ...(opts.exclude === undefined ? {} : { exclude: opts.exclude }),
            ...(opts.include === undefined ? {} : { include: opts.include }),
          });
          emit(opts, S.enableOutput, r, () =>
            [
              `${r.created ? 'created capture' : 'capture'} ${r.sourceId} generation ${r.generation}`,
              r.added.length > 0 ? `added: ${r.added.join(', ')} (${opts.mode})` : 'added: none',
              r.rearmed.length > 0 ? `re-armed: ${describeRearmed(r.rearmedReasons)}` : '',
              r.purgedRows === undefined ? '' : `purged the newly excluded columns from ${r.purgedRows} retained journal row(s)`,
              r.remade === undefined
                ? ''
                : `made again: ${r.remade.join(', ')} (dropped outside sluice; it holds nothing between statements, so no reader rebuilds)`,
              r.switchedToWal
                ? `switched ${dbPath} to WAL journal mode (it stays so: readers and a writer run side by side)`
                : `journal mode: ${r.journalMode}${r.journalMode === 'wal' ? '' : ' (another connection kept it from switching to WAL; run enable again when it is closed)'}`,
            ]
              .filter((l) => l !== '')
              .join('\n'),
          );
        } finally {
          db.close();
        }
      },
    );
}
