import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { openSource, exportOnce, decodeCursor, status, LineSink } from '../index.ts';
import {
  cursorFileFor,
  positionOf,
  readResumePoint,
  saveResumePoint,
  saveSnapshotStart,
  truncateToResumePoint,
  checkHeldFile,
} from '../internal.ts';
import { collect, parseWholeNumber } from './enable.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';
import { waitForChange } from '../internal.ts';
import { stderr } from './closed-pipe.ts';
import { workBar } from './progress.ts';

export function registerExport(program: Command): void {
  program
    .command('export')
    .description('Write a snapshot and then every change as JSONL (at-least-once; resumes from FILE.cursor).')
    .argument('<db>', 'source SQLite database')
    .requiredOption('--out <file>', 'output file, or - for stdout (appended to; its position is kept in <file>.cursor)')
    .option('--since <cursor>', 'start after this cursor instead of with a snapshot')
    .option('--table <name>', 'only this table (repeatable)', collect, [] as string[])
    .option('--batch <n>', 'events per batch', parseWholeNumber, 1000)
    .option('--follow', 'keep exporting as changes commit, until SIGINT/SIGTERM')
    .option('--json', 'print one JSON summary object on exit')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice export app.db --out changes.jsonl\n  $ sluice export app.db --out changes.jsonl --follow   # resumes where it stopped',
    )
    .action(
      async (dbPath: string, opts: { out: string; since?: string; table: string[]; batch: number; follow?: boolean; json?: boolean }) => {
        const toStdout = opts.out === '-';
        const cursorFile = toStdout ? undefined : cursorFileFor(path.resolve(opts.out));
        const saved = cursorFile === undefined ? {} : readResumePoint(cursorFile);
        const since = opts.since ?? saved.cursor;
        // Open the source before the output: a missing or bad source must not leave an empty output file behind.
        const db = openSource(dbPath, { readonly: true });
        let fd: number;
        try {
          // What a killed run wrote after its last complete batch is cut, and written again (resume-point.ts).
          if (!toStdout) truncateToResumePoint(opts.out, opts.since === undefined ? saved : {});
          fd = toStdout ? 1 : fs.openSync(opts.out, 'a');
        } catch (err) {
          db.close();
          throw err;
        }
        const sink = new LineSink(fd);
        let cursor = since;
        let totals = { rows: 0, events: 0, batches: 0 };
        // On a terminal: the share of the range from the run's start to the source's seq at its start.
        const bar = workBar(opts, 'export', 'events');
        let range = { from: 0, to: 0 };
        const record = (c: string) => {
          cursor = c;
          if (cursorFile !== undefined) saveResumePoint(cursorFile, c, fs.fstatSync(fd).size);
          bar.update(decodeCursor(c).seq - range.from, range.to - range.from);
        };
        try {
          const options = { ...(opts.table.length > 0 ? { tables: opts.table } : {}), batchSize: Math.max(1, opts.batch) };
          const run = () => {
            checkHeldFile(db, 'source'); // a source replaced by another file stops export too (SOURCE_REPLACED), even with nothing new to read
            if (cursor === undefined && cursorFile !== undefined) saveSnapshotStart(cursorFile, fs.fstatSync(fd).size);
            range = { from: cursor === undefined ? 0 : decodeCursor(cursor).seq, to: status(db).seq };
            bar.update(0, range.to - range.from);
            let r: ReturnType<typeof exportOnce>;
            try {
              r = exportOnce(db, sink, { ...options, ...(cursor === undefined ? {} : { since: cursor }) }, record);
            } finally {
              bar.stop();
            }
            totals = { rows: totals.rows + r.rows, events: totals.events + r.events, batches: totals.batches + r.batches };
          };
          // With --follow, waitForChange runs the first run too, from a data_version read
          // before it (wait.ts), and stops on SIGINT/SIGTERM between runs.
          if (opts.follow === true) await waitForChange(db, dbPath, run, { onIdle: () => checkHeldFile(db, 'source') });
          else run();
        } finally {
          sink.flush(true);
          db.close();
          if (!toStdout) fs.closeSync(fd);
        }
        if (!toStdout || opts.json === true) {
          const summary = { out: opts.out, cursor: cursor === undefined ? null : positionOf(cursor), ...totals };
          const write = toStdout ? (s: string) => stderr().write(`${s}\n`) : undefined;
          if (write !== undefined) write(JSON.stringify(summary));
          else
            emit(
              opts,
              S.exportOutput,
              summary,
              () => `exported ${totals.rows} snapshot rows and ${totals.events} events in ${totals.batches} batches to ${opts.out}`,
            );
        }
      },
    );
}
