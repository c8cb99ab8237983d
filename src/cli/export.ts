import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { openSource, exportOnce, exportSegment, decodeCursor, status, LineSink } from '../index.ts';
import {
  checkResumedTables,
  cursorFileFor,
  positionOf,
  readResumePoint,
  saveResumePoint,
  saveSnapshotStart,
  truncateToResumePoint,
  checkHeldFile,
  replaceFile,
  requireOutputPath,
  readSourceView,
  lockExport,
  refuseWithoutCursor,
  refuseFolderWithoutCursor,
  checkSegmentFolderResume,
  readQuietly,
  shellWord,
} from '../internal.ts';
import { outPath } from './out-path.ts';
import { FailClosedError, InvalidInputError } from '../index.ts';
import { collect, parseWholeNumber } from './enable.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';
import { waitForChange } from '../internal.ts';
import { stderr } from './closed-pipe.ts';
import { trapInterrupt } from './interrupt.ts';
import { workBar } from './progress.ts';

export function registerExport(program: Command): void {
  program
    .command('export')
    .description('Write a snapshot and then every change as JSONL, or as segments (at-least-once; resumes from FILE.cursor).')
    .argument('<db>', 'source SQLite database')
    .requiredOption(
      '--out <file>',
      'output file, or - for stdout (appended to; its position is kept in <file>.cursor); with --format segment, a folder (one segment per run)',
      outPath,
    )
    .option('--format <format>', 'jsonl (for any system) or segment (a SQLite batch segment, for another sluice: docs/segment.md)', 'jsonl')
    .option('--since <cursor>', 'start after this cursor instead of with a snapshot')
    .option('--table <name>', 'only this table (repeatable)', collect, [] as string[])
    .option('--batch <n>', 'events per batch (default 1000; 100000 with --format segment)', parseWholeNumber)
    .option('--follow', 'keep exporting as changes commit, until SIGINT/SIGTERM')
    .option('--json', 'print one JSON summary object on exit')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice export app.db --out changes.jsonl\n  $ sluice export app.db --out changes.jsonl --follow   # resumes where it stopped',
    )
    // The source held while read, --follow included (readQuietly): a reader of a WAL file would leave a -wal and -shm beside it.
    .action((dbPath: string, opts: ExportOptions) =>
      readQuietly([dbPath], () => (opts.format === 'segment' ? exportSegments(dbPath, opts) : exportLines(dbPath, opts))),
    );
}

type ExportOptions = { out: string; format: string; since?: string; table: string[]; batch?: number; follow?: boolean; json?: boolean };

/** `export` as JSONL (the default): appended to the file --out, or to stdout. */
async function exportLines(dbPath: string, opts: ExportOptions): Promise<void> {
  if (opts.format !== 'jsonl')
    throw new InvalidInputError('BAD_FORMAT', `--format ${opts.format} is not an export format. Use --format jsonl or --format segment.`);
  const toStdout = opts.out === '-';
  if (!toStdout && isFolder(opts.out))
    throw new InvalidInputError(
      'BAD_FORMAT',
      `--out ${opts.out} is a folder; --format jsonl (the default) appends to a file. Pass a file, or --format segment to write segments into that folder.`,
    );
  if (!toStdout) requireOutputPath(opts.out, { given: '--out', command: 'export', example: 'changes.jsonl' });
  const cursorFile = toStdout ? undefined : cursorFileFor(path.resolve(opts.out));
  const resumeFrom = () => {
    const saved = cursorFile === undefined ? {} : readResumePoint(cursorFile);
    const since = opts.since ?? saved.cursor;
    // A --table set the resumed cursor does not carry: refused before the source or the output is opened.
    if (since !== undefined)
      checkResumedTables(since, opts.table, opts.since !== undefined ? 'the --since cursor' : `the cursor in ${cursorFile as string}`);
    return { saved, since };
  };
  resumeFrom();
  // Open the source before the output: a missing or bad source must not leave an empty output file (or its lock) behind.
  const db = openSource(dbPath, { readonly: true });
  let fd: number;
  let lock: ReturnType<typeof lockExport> | undefined;
  let since: string | undefined;
  try {
    readSourceView(db); // a source without capture (CAPTURE_ABSENT) before the output is made
    // One export at a time writes --out (export-lock.ts); its cursor file read again under the lock.
    if (!toStdout) lock = lockExport(opts.out, opts.follow === true ? 'export --follow' : 'export');
    const from = resumeFrom();
    since = from.since;
    if (!toStdout && opts.since === undefined) refuseWithoutCursor(opts.out, from.saved);
    // What a killed run wrote after its last complete batch is cut, and written again (resume-point.ts).
    if (!toStdout) truncateToResumePoint(opts.out, opts.since === undefined ? from.saved : {});
    fd = toStdout ? 1 : fs.openSync(opts.out, 'a');
  } catch (err) {
    lock?.release();
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
    const options = { ...(opts.table.length > 0 ? { tables: opts.table } : {}), batchSize: Math.max(1, opts.batch ?? 1000) };
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
    try {
      if (opts.follow === true) await followSource(db, dbPath, run);
      else run();
    } catch (err) {
      throw startAgain(err, { source: dbPath, out: opts.out, cursorFile, since: opts.since !== undefined, segments: false });
    }
  } finally {
    try {
      sink.flush(true);
    } finally {
      db.close();
      if (!toStdout) fs.closeSync(fd);
      lock?.release();
    }
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
}

/**
 * `export --follow`: waitForChange runs the first run too, from a data_version read
 * before it (wait.ts), and stops on SIGINT/SIGTERM between runs (one that came while
 * the CLI loaded: at once).
 */
async function followSource(db: Parameters<typeof waitForChange>[0], dbPath: string, run: () => void): Promise<void> {
  const interrupt = trapInterrupt();
  try {
    await waitForChange(db, dbPath, run, { signal: interrupt.signal, onIdle: () => checkHeldFile(db, 'source') });
  } finally {
    interrupt.release();
  }
}

/** `export --format segment`: one segment per run into the folder --out; the cursor to continue from in <out>.cursor. */
async function exportSegments(
  dbPath: string,
  opts: { out: string; since?: string; table: string[]; batch?: number; follow?: boolean; json?: boolean },
): Promise<void> {
  if (opts.out === '-')
    throw new InvalidInputError(
      'BAD_FORMAT',
      '--format segment writes a folder of segments, not stdout. Pass a folder as --out, e.g. --out segments.',
    );
  requireOutputPath(opts.out, { given: '--out', command: 'export', kind: 'folder' });
  if (fs.existsSync(opts.out) && !fs.statSync(opts.out).isDirectory())
    throw new InvalidInputError(
      'BAD_FORMAT',
      `--out ${opts.out} is a file; --format segment writes a folder of segments. Pass a new or existing folder.`,
    );
  const cursorFile = cursorFileFor(path.resolve(opts.out));
  const resumeFrom = () => {
    const saved = readResumePoint(cursorFile);
    const since = opts.since ?? saved.cursor;
    if (since !== undefined)
      checkResumedTables(since, opts.table, opts.since !== undefined ? 'the --since cursor' : `the cursor in ${cursorFile}`);
    return { saved, since };
  };
  resumeFrom();
  const db = openSource(dbPath, { readonly: true });
  let totals = { rows: 0, events: 0, batches: 0 };
  let lock: ReturnType<typeof lockExport> | undefined;
  let cursor: string | undefined;
  try {
    readSourceView(db); // a source without capture (CAPTURE_ABSENT) before the lock file is made
    // One export at a time writes the folder (export-lock.ts); its cursor file read again under the lock.
    lock = lockExport(opts.out, opts.follow === true ? 'export --follow' : 'export');
    const from = resumeFrom();
    cursor = from.since;
    if (opts.since === undefined) {
      // No position: refused if the folder holds an earlier export's segments; one: the folder must be its own.
      if (from.saved.cursor === undefined) {
        if (from.saved.offset === undefined) refuseFolderWithoutCursor(opts.out, cursorFile);
      } else checkSegmentFolderResume(opts.out, cursorFile, decodeCursor(from.saved.cursor).seq);
    }
    const options = {
      ...(opts.table.length > 0 ? { tables: opts.table } : {}),
      ...(opts.batch === undefined ? {} : { batchSize: Math.max(1, opts.batch) }),
    };
    const run = () => {
      checkHeldFile(db, 'source');
      const r = exportSegment(
        db,
        opts.out,
        { ...options, ...(cursor === undefined ? {} : { since: cursor }) },
        (c) => {
          cursor = c;
          replaceFile(cursorFile, positionOf(c));
        },
        () => saveSnapshotStart(cursorFile, 0),
      );
      totals = { rows: totals.rows + r.rows, events: totals.events + r.events, batches: totals.batches + r.batches };
    };
    try {
      if (opts.follow === true) await followSource(db, dbPath, run);
      else run();
    } catch (err) {
      throw startAgain(err, { source: dbPath, out: opts.out, cursorFile, since: opts.since !== undefined, segments: true });
    }
  } finally {
    db.close();
    lock?.release();
  }
  const summary = { out: opts.out, cursor: cursor === undefined ? null : positionOf(cursor), ...totals };
  emit(
    opts,
    S.exportOutput,
    summary,
    () => `exported ${totals.rows} snapshot rows and ${totals.events} events in ${totals.batches} batches as segments to ${opts.out}`,
  );
}

/**
 * An export whose cursor cannot go on (a table re-armed, the source bumped,
 * restored from an older copy: validateCursor's rebuild reasons) exits 3 as
 * every reader does, but cannot "rebuild from a snapshot" as the message
 * says to a sync: what it wrote is another file's history. So it says what
 * starts it again: a new file (which begins with a snapshot), or this one
 * removed with its cursor first; importing that rebuilds a target.
 */
function startAgain(
  err: unknown,
  at: {
    readonly source: string;
    readonly out: string;
    readonly cursorFile: string | undefined;
    readonly since: boolean;
    readonly segments: boolean;
  },
): unknown {
  if (!(err instanceof FailClosedError) || err.detail.rebuild === undefined) return err;
  const what = at.segments ? 'folder' : 'file';
  const fresh = `sluice export ${shellWord(at.source)} --out NEW_${what.toUpperCase()}${at.segments ? ' --format segment' : ''}`;
  const how = at.since
    ? `run the export again without --since (to a new --out: it starts with a snapshot)`
    : at.cursorFile === undefined
      ? `run the export again: it starts with a snapshot`
      : `export to a new ${what} (${fresh}: it starts with a snapshot), or remove ${at.out} and ${at.cursorFile} and export again`;
  const message = err.message.replace(/\s*Rebuild (it )?from a snapshot\.?$/, '');
  return new FailClosedError(
    err.code,
    `${message} An export cannot rebuild what it wrote from a snapshot: ${how}. Importing that ${what} into a target rebuilds its projections from the snapshot (${err.code}).`,
    err.detail,
    { cause: err },
  );
}

/** Whether `p` is a folder; false when nothing is there, or a file is above it (requireOutputPath says which). */
function isFolder(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
