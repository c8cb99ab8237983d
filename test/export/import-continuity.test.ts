// import and subscribe check that a file or stream continues the target's cursor, as sync checks the source
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import {
  makeDir,
  removeDir,
  runCliAsync,
  parseJson,
  dumpTables,
  scalar,
  waitFor,
  projectionSeq,
  sourceSeq,
  syncByLibrary,
  type CliResult,
} from '../cli/support/cli.ts';
import { enable, openSource } from '../../src/capture/index.ts';
import { natsForFile, sourceIdOf } from '../broker/support/broker.ts';
import { subscribe } from '../../src/broker/index.ts';

/*
 * Review round 4, export bugs 1, 2, 4, 7 and 9. `sluice import` (and
 * `sluice subscribe`, through the same importer) trusted a file when it had
 * the target's source id and a seq that looked new enough, and ignored the
 * rest of the cursor sync checks: the generation, the table's armed
 * generation, the source file's identity and the event at the target's seq.
 * So, each with exit 0 and a wrong target:
 * - a source restored from an older backup and written up to the target's
 *   seq again: the new export's snapshot was skipped as already held;
 * - a table re-armed, or the source bumped, after a write the triggers did
 *   not see: the new export's snapshot, at the target's seq, was skipped;
 * - a copy of the source (same source id) written on its own: its file
 *   skipped its snapshot as older, skipped the event at the target's seq as
 *   applied and applied the next one on top of the original's rows;
 * - subscribe after a re-arm: the publisher published a new snapshot, and the
 *   subscriber read it and applied nothing;
 * - a snapshot of another source: "applied 0 batches", nothing refused.
 * sync rebuilds in these cases (HISTORY_DIVERGED, TABLE_REARMED,
 * GENERATION_CHANGED, FILE_CHANGED); now import and subscribe rebuild from
 * the file's or stream's snapshot with that reason, refuse a file without a
 * snapshot with it (nothing applied, exit 3), and refuse another source's
 * snapshot with SOURCE_CHANGED at its first line.
 */

const nats = natsForFile();

const FORMATS = ['jsonl', 'segment'] as const;
type Format = (typeof FORMATS)[number];

/** Runs SQL with the sqlite3 shell, a writer that is not sluice. */
function sh(file: string, sql: string): string {
  const r = spawnSync('sqlite3', [file, sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sqlite3 ${file}: ${r.stderr}`);
  return r.stdout;
}

async function cli(args: readonly string[]): Promise<CliResult> {
  return runCliAsync(args);
}

async function ok(args: readonly string[]): Promise<CliResult> {
  const r = await cli(args);
  expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r;
}

/** `sluice export SRC --out OUT`, in `format` (a segment export's OUT is a folder). */
function exportArgs(src: string, out: string, format: Format): string[] {
  return ['export', src, '--out', out, ...(format === 'segment' ? ['--format', 'segment'] : [])];
}

function out(dir: string, name: string, format: Format): string {
  return path.join(dir, format === 'segment' ? name : `${name}.jsonl`);
}

/** A source `file` with capture enabled on `tables` through the library `sluice enable` runs (setup, not under test: a CLI run is half a second of start-up). */
function enabled(file: string, tables: readonly string[]): string {
  const db = openSource(file);
  try {
    enable(db, tables);
  } finally {
    db.close();
  }
  return file;
}

/** A source with table t(id, v) holding `rows`, captured. */
function source(file: string, rows: string): string {
  sh(file, `CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES ${rows};`);
  return enabled(file, ['t']);
}

/** Writes with the sqlite3 shell's triggers off (`.dbconfig enable_trigger off`): a bulk load capture does not see, which `sluice bump` is for. */
function unseenWrite(file: string, sql: string): void {
  const r = spawnSync('sqlite3', [file], { encoding: 'utf8', input: `.dbconfig enable_trigger off\n${sql};\n` });
  if (r.status !== 0 || r.stderr !== '') throw new Error(`sqlite3 ${file}: ${r.stderr}`);
}

async function importJson(tgt: string, file: string): Promise<ReturnType<typeof S.importOutput.parse>> {
  const r = await cli(['import', tgt, file, '--json']);
  expect(r.status, r.stderr).toBe(0);
  return parseJson(r, S.importOutput);
}

describe('import rebuilds from the file snapshot when the file does not continue the target cursor', () => {
  for (const format of FORMATS) {
    test(`${format}: a source restored from a backup and written to the target's seq again: HISTORY_DIVERGED`, async () => {
      const dir = makeDir();
      try {
        const src = source(path.join(dir, 'src.db'), "(1, 'a'), (2, 'b')");
        sh(src, 'PRAGMA wal_checkpoint(TRUNCATE)');
        const backup = path.join(dir, 'backup.db');
        fs.copyFileSync(src, backup);
        sh(src, "INSERT INTO t VALUES (3, 'c'); UPDATE t SET v = 'A' WHERE id = 1;");
        const tgt = path.join(dir, 'imp.db');
        await ok(exportArgs(src, out(dir, 'one', format), format));
        await ok(['import', tgt, out(dir, 'one', format)]);

        // Restored in place (the same file), and written to seq 2 again with other events.
        fs.copyFileSync(backup, src);
        for (const x of ['-wal', '-shm']) fs.rmSync(`${src}${x}`, { force: true });
        sh(src, "INSERT INTO t VALUES (4, 'd'); UPDATE t SET v = 'Z' WHERE id = 2;");
        await ok(exportArgs(src, out(dir, 'two', format), format));
        const r = await importJson(tgt, out(dir, 'two', format));
        expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
        expect(r.projections).toEqual([{ name: 't', state: 'active', seq: 2, rebuilt: 'HISTORY_DIVERGED' }]);

        // Imported again, it changes nothing.
        const again = await importJson(tgt, out(dir, 'two', format));
        expect(again.projections).toEqual([{ name: 't', state: 'active', seq: 2 }]);
      } finally {
        removeDir(dir);
      }
    });

    for (const [how, reason] of [
      ['re-armed', 'TABLE_REARMED'],
      ['bumped', 'GENERATION_CHANGED'],
    ] as const) {
      test(`${format}: after a write capture did not see, the table ${how}: the new export's snapshot at the same seq rebuilds (${reason})`, async () => {
        const dir = makeDir();
        try {
          const src = source(path.join(dir, 'a.db'), "(1, 'a')");
          sh(src, "INSERT INTO t VALUES (2, 'b')");
          const tgt = path.join(dir, 'imp.db');
          await ok(exportArgs(src, out(dir, 'f1', format), format));
          await ok(['import', tgt, out(dir, 'f1', format)]);
          if (how === 're-armed') {
            sh(src, "DROP TRIGGER _sluice_t1_upd; UPDATE t SET v = 'HIDDEN' WHERE id = 1");
            await ok(['enable', src, 't']);
          } else {
            unseenWrite(src, "UPDATE t SET v = 'HIDDEN' WHERE id = 1");
            await ok(['bump', src, '--reason', 'reloaded t']);
          }
          // The old export cannot go on; a new one starts with a snapshot at the same seq.
          expect((await cli(exportArgs(src, out(dir, 'f1', format), format))).status).toBe(3);
          await ok(exportArgs(src, out(dir, 'f2', format), format));
          const r = await importJson(tgt, out(dir, 'f2', format));
          expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
          expect(r.projections).toEqual([{ name: 't', state: 'active', seq: 1, rebuilt: reason }]);

          // The file from before (the target holds more than it) is older: importing it changes nothing.
          const old = await importJson(tgt, out(dir, 'f1', format));
          expect(old.projections).toEqual([{ name: 't', state: 'active', seq: 1 }]);
          expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
        } finally {
          removeDir(dir);
        }
      });
    }

    test(`${format}: a file of a copy of the source (same source id) onto a target made from the original: FILE_CHANGED`, async () => {
      const dir = makeDir();
      try {
        const app = source(path.join(dir, 'app.db'), "(1, 'a'), (2, 'b')");
        sh(app, 'PRAGMA wal_checkpoint(TRUNCATE)');
        const staging = path.join(dir, 'staging.db');
        fs.copyFileSync(app, staging);
        sh(app, "UPDATE t SET v = 'prod' WHERE id = 1; INSERT INTO t VALUES (3, 'p3'); INSERT INTO t VALUES (4, 'p4');");
        sh(staging, "DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (9, 's9');");
        const tgt = path.join(dir, 'tgt.db');
        await ok(exportArgs(app, out(dir, 'app', format), format));
        await ok(['import', tgt, out(dir, 'app', format)]);
        // The copy's export: a snapshot at seq 2, then (exported again into the same file or folder) the batch (2, 4].
        await ok(exportArgs(staging, out(dir, 'stg', format), format));
        sh(staging, "INSERT INTO t VALUES (10, 's10'); INSERT INTO t VALUES (11, 's11');");
        await ok(exportArgs(staging, out(dir, 'stg', format), format));
        const r = await importJson(tgt, out(dir, 'stg', format));
        expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(staging, ['t']));
        expect(r.projections).toEqual([{ name: 't', state: 'active', seq: 4, rebuilt: 'FILE_CHANGED' }]);
      } finally {
        removeDir(dir);
      }
    });
  }

  test('an older file of the same history, imported after a newer one, changes nothing', async () => {
    const dir = makeDir();
    try {
      const src = source(path.join(dir, 'a.db'), "(1, 'a')");
      const tgt = path.join(dir, 'imp.db');
      await ok(['export', src, '--out', path.join(dir, 'f1.jsonl')]);
      sh(src, "INSERT INTO t VALUES (2, 'b'); UPDATE t SET v = 'x' WHERE id = 1;");
      await ok(['export', src, '--out', path.join(dir, 'f1.jsonl')]);
      await ok(['export', src, '--out', path.join(dir, 'f2.jsonl')]);
      sh(src, "INSERT INTO t VALUES (3, 'c')");
      await ok(['export', src, '--out', path.join(dir, 'f2.jsonl')]);
      await ok(['import', tgt, path.join(dir, 'f2.jsonl')]);
      const r = await importJson(tgt, path.join(dir, 'f1.jsonl'));
      expect(r).toMatchObject({ batchesApplied: 0, batchesSkipped: 1, projections: [{ name: 't', state: 'active', seq: 3 }] });
      expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
    } finally {
      removeDir(dir);
    }
  });
});

describe('import refuses a file that cannot rebuild the target', () => {
  test('batches (no snapshot) of a copy of the source onto a target made from the original: FILE_CHANGED, nothing applied', async () => {
    const dir = makeDir();
    try {
      const app = source(path.join(dir, 'app.db'), "(1, 'a'), (2, 'b')");
      sh(app, 'PRAGMA wal_checkpoint(TRUNCATE)');
      const staging = path.join(dir, 'staging.db');
      fs.copyFileSync(app, staging);
      sh(app, "UPDATE t SET v = 'prod' WHERE id = 1; INSERT INTO t VALUES (3, 'p3'); INSERT INTO t VALUES (4, 'p4');");
      sh(staging, "DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (9, 's9');");
      const tgt = path.join(dir, 'tgt.db');
      await ok(['export', app, '--out', path.join(dir, 'app.jsonl')]);
      await ok(['import', tgt, path.join(dir, 'app.jsonl')]);
      const first = parseJson(await ok(['export', staging, '--out', path.join(dir, 's1.jsonl'), '--json']), S.exportOutput);
      sh(staging, "INSERT INTO t VALUES (10, 's10'); INSERT INTO t VALUES (11, 's11');");
      const batches = path.join(dir, 's2.jsonl');
      await ok(['export', staging, '--since', String(first.cursor), '--out', batches]);
      const before = dumpTables(tgt, ['t']);
      const r = await cli(['import', tgt, batches]);
      expect(r.status, r.stdout).toBe(3);
      expect(r.stderr).toMatch(
        /^sluice: FILE_CHANGED: .*s2\.jsonl:\d+: .*projection t in the target, at seq 3, so nothing of it was applied: The cursor was taken on another file .*import a new export file/,
      );
      expect(dumpTables(tgt, ['t'])).toEqual(before);
      expect(scalar(tgt, "SELECT seq FROM _sluice_projections WHERE name = 't'")).toBe(3n);
    } finally {
      removeDir(dir);
    }
  });

  for (const format of FORMATS) {
    test(`${format}: a snapshot of another source is refused at its first line with SOURCE_CHANGED`, async () => {
      const dir = makeDir();
      try {
        const a = source(path.join(dir, 'a.db'), "(1, 'a')");
        const c = path.join(dir, 'c.db');
        sh(c, "CREATE TABLE z(id INTEGER PRIMARY KEY, v); INSERT INTO z VALUES (5, 'zz');");
        enabled(c, ['z']);
        sh(c, "INSERT INTO z VALUES (6, 'yy')");
        const tgt = path.join(dir, 'tgt.db');
        expect(await syncByLibrary(a, tgt)).toBe(0);
        await ok(exportArgs(c, out(dir, 'c', format), format));
        const before = dumpTables(tgt);
        const r = await cli(['import', tgt, out(dir, 'c', format)]);
        expect(r.status, r.stdout).toBe(3);
        expect(r.stderr).toMatch(
          new RegExp(
            `^sluice: SOURCE_CHANGED: Projection t in the target follows source ${sourceIdOf(a)}, but .* is from ${sourceIdOf(c)}`,
          ),
        );
        expect(dumpTables(tgt)).toEqual(before);
      } finally {
        removeDir(dir);
      }
    });
  }
});

describe('subscribe rebuilds from the new snapshot of a re-armed source', () => {
  for (const format of FORMATS) {
    for (const batchBefore of [false, true]) {
      test(`${format}: ${batchBefore ? 'with a batch published before the re-arm' : 'at the same seq'}: TABLE_REARMED`, async () => {
        const dir = makeDir();
        try {
          const url = nats.server().url;
          const src = source(path.join(dir, 'a.db'), "(1, 'a')");
          const id = sourceIdOf(src);
          sh(src, "INSERT INTO t VALUES (2, 'b')");
          const tgt = path.join(dir, 'tgt.db');
          const sub = ['subscribe', tgt, '--nats', url, '--source', id, '--format', format];
          await ok(['publish', src, '--nats', url, '--format', format]);
          await ok(sub);
          if (batchBefore) {
            sh(src, "INSERT INTO t VALUES (3, 'c')");
            await ok(['publish', src, '--nats', url, '--format', format]);
          }
          sh(src, "DROP TRIGGER _sluice_t1_upd; UPDATE t SET v = 'HIDDEN' WHERE id = 1");
          await ok(['enable', src, 't']);
          const p = await ok(['publish', src, '--nats', url, '--format', format]);
          expect(p.stderr).toContain('TABLE_REARMED');
          const r = await ok([...sub, '--json']);
          const s = parseJson(r, S.subscribeOutput);
          expect(s.started).toBe('snapshot');
          expect(s.rebuilt).toMatchObject({ reason: 'TABLE_REARMED', targetSeq: 1 });
          expect(s.projections).toEqual([{ name: 't', state: 'active', seq: batchBefore ? 2 : 1, rebuilt: 'TABLE_REARMED' }]);
          expect(r.stderr).toMatch(/TABLE_REARMED: .*rebuilding from the snapshot at seq/);
          expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
          // Then it follows the new stream.
          sh(src, "UPDATE t SET v = 'after' WHERE id = 2");
          await ok(['publish', src, '--nats', url, '--format', format]);
          const next = parseJson(await ok([...sub, '--json']), S.subscribeOutput);
          expect(next.rebuilt).toBeUndefined();
          expect(next.batchesApplied).toBe(1);
          expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
        } finally {
          removeDir(dir);
        }
      });
    }
  }

  test('a follower that meets the new snapshot rebuilds from it, then follows the batches after it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = source(path.join(dir, 'a.db'), "(1, 'a')");
      const sourceId = sourceIdOf(src);
      sh(src, "INSERT INTO t VALUES (2, 'b')");
      const tgt = path.join(dir, 'tgt.db');
      await ok(['publish', src, '--nats', url]);
      await ok(['subscribe', tgt, '--nats', url, '--source', sourceId]);
      const stop = new AbortController();
      const said: string[] = [];
      const run = subscribe(tgt, url, { sourceId, follow: true, signal: stop.signal, log: (line) => said.push(line) });
      let report: Awaited<typeof run> | undefined;
      try {
        sh(src, "DROP TRIGGER _sluice_t1_upd; UPDATE t SET v = 'HIDDEN' WHERE id = 1");
        await ok(['enable', src, 't']);
        await ok(['publish', src, '--nats', url]);
        sh(src, "UPDATE t SET v = 'after' WHERE id = 2");
        await ok(['publish', src, '--nats', url]);
        await waitFor('the follower to reach the source', () => projectionSeq(tgt, 't') === sourceSeq(src), 60_000);
      } finally {
        stop.abort();
        report = await run;
      }
      expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
      expect(report.projections).toEqual([{ name: 't', state: 'active', seq: 2, rebuilt: 'TABLE_REARMED' }]);
      expect(said.join('\n')).toMatch(/does not continue the target's cursor; applying it/);
    } finally {
      removeDir(dir);
    }
  });
});
