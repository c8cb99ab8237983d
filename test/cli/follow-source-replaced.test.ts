// a source replaced under sync follow stops it with one line and the next sync rebuilds from the new file
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { decodeCursor } from '../../src/feed/index.ts';
import { readResumePoint } from '../../src/export/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import {
  runCliAsync,
  makeDir,
  removeDir,
  expectOneLineError,
  dumpTables,
  parseJson,
  startCli,
  waitFor,
  scalar,
  type Spawned,
} from './support/cli.ts';

/*
 * People swap a compacted copy in under a live database: `VACUUM INTO
 * copy.db`, then `mv copy.db src.db`. A follower's connection still holds
 * the old, unlinked file. It used to go on reading it and stamp its cursors
 * with the device and inode of whatever the path named (the new file), so
 * a later sync took those cursors for the new file's: "applied 0 events",
 * health green, rows stale. The identity a cursor carries is now the file
 * the connection holds (taken when it was opened), and a follower whose
 * source path names another file stops: one line, SOURCE_REPLACED, naming
 * the source and the fix, exit 1, with the failure recorded so that health
 * exits 3 until a sync succeeds. The next sync opens the new file, finds
 * the cursors were taken on another one (FILE_CHANGED) and rebuilds.
 * export --follow stops the same way.
 */

let dir: string;
let running: Spawned | undefined;

beforeAll(() => {
  dir = makeDir();
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
});
afterAll(() => removeDir(dir));

/** Upserts rows [from, to) of t with v = `${tag}${id}`, one commit each, from Python (a writer that knows nothing of sluice). */
function writeRows(file: string, from: number, to: number, tag: string): void {
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2]), int(sys.argv[3])):
    con.execute("INSERT OR REPLACE INTO t(id, v) VALUES (?, ?)", (i, sys.argv[4] + str(i)))
    con.commit()
con.close()`,
    [file, String(from), String(to), tag],
  );
}

/** The swap people do: a compacted copy made beside the live file, then renamed over it. */
function vacuumInto(file: string, copy: string): void {
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("VACUUM INTO ?", (sys.argv[2],))
con.close()`,
    [file, copy],
  );
}

/**
 * Checkpoints the old file's WAL into it and empties it: the -wal keeps its
 * name across the rename, and SQLite would read frames left there as pages
 * of the new file (a hazard of the swap itself, for every connection).
 */
function checkpoint(file: string): void {
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
con.close()`,
    [file],
  );
}

function source(name: string): string {
  const file = path.join(dir, name);
  const db = openDatabase(file, { create: true, wal: true });
  try {
    db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
    enable(db, ['t']);
  } finally {
    db.close();
  }
  writeRows(file, 1, 151, 'a');
  return file;
}

async function exitWithin(f: Spawned): Promise<{ status: number | null }> {
  const exit = await Promise.race([f.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000))]);
  expect(exit, `the follower is still running 10 s after its source was replaced; stderr: ${f.stderr()}`).toBeDefined();
  return exit ?? { status: null };
}

function expectReplaced(exit: { status: number | null }, f: Spawned, src: string): void {
  expect(exit.status, f.stderr()).toBe(1);
  expectOneLineError({ stdout: '', stderr: f.stderr() }, 'SOURCE_REPLACED');
  expect(f.stderr()).toContain(src);
  expect(f.stderr()).toContain('Run it again');
}

/**
 * health names the failure (exit 3) until a sync succeeds; then the next
 * sync rebuilds from the new file, for `reason` (the cursor names another
 * file, or, when the new file is behind it, a seq the file does not have),
 * and health is green.
 */
async function expectRecovery(src: string, target: string, reason: 'FILE_CHANGED' | 'SEQ_REGRESSED'): Promise<void> {
  const before = await runCliAsync(['health', target, '--json']);
  expect(before.status, before.stderr).toBe(3);
  expect(parseJson(before, S.healthOutput).projections[0]?.failure?.code).toBe('SOURCE_REPLACED');
  const again = await runCliAsync(['sync', src, target, '--json']);
  expect(again.status, again.stderr).toBe(0);
  const p = parseJson(again, S.syncOutput).projections[0];
  expect(p?.rebuilt).toBe(reason);
  expect(dumpTables(target)).toEqual(dumpTables(src));
  const after = await runCliAsync(['health', target, '--json']);
  expect(after.status, after.stdout).toBe(0);
}

describe.skipIf(process.platform === 'win32')('a source replaced under sync --follow', () => {
  test('by VACUUM INTO and a rename, with writes going on in the new file: the follower stops with SOURCE_REPLACED and no cursor names the new file', async () => {
    const src = source('a.db');
    const copy = path.join(dir, 'a-copy.db');
    const target = path.join(dir, 'a-cache.db');
    running = startCli(['sync', src, target, '--follow', '--json']);
    const f = running;
    await waitFor('the first pass', () => f.stdout().includes('\n'));
    vacuumInto(src, copy);
    // Writes the copy misses go to the old file, and the follower applies them from there.
    writeRows(src, 151, 166, 'old');
    await waitFor("the old file's writes in the target", () => scalar(target, 'SELECT v FROM t WHERE id = 165') === 'old165');
    const heldFile = fs.statSync(src, { bigint: true });
    checkpoint(src);
    fs.renameSync(copy, src);
    const newFile = fs.statSync(src, { bigint: true });
    expect(newFile.ino).not.toBe(heldFile.ino);
    writeRows(src, 151, 171, 'new');
    const exit = await exitWithin(f);
    expectReplaced(exit, f, src);
    // Every cursor the follower committed names the file it read, never the new one.
    const cursors = f
      .stdout()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { projections?: { cursor: string | null }[]; error?: { code: string } })
      .flatMap((l) => (l.error === undefined ? (l.projections ?? []).map((p) => p.cursor) : []))
      .filter((c): c is string => c !== null);
    expect(cursors.length).toBeGreaterThan(0);
    expect(f.stdout()).toContain('"code":"SOURCE_REPLACED"'); // --json: the error object is the last line
    for (const c of cursors) expect(decodeCursor(c).file?.ino).toBe(heldFile.ino.toString());
    await expectRecovery(src, target, 'FILE_CHANGED');
  });

  test('while the source is idle: the follower notices without waiting for a commit', async () => {
    const src = source('b.db');
    const copy = path.join(dir, 'b-copy.db');
    const target = path.join(dir, 'b-cache.db');
    running = startCli(['sync', src, target, '--follow', '--json']);
    const f = running;
    await waitFor('the first pass', () => f.stdout().includes('\n'));
    vacuumInto(src, copy);
    writeRows(src, 151, 156, 'old'); // in the old file only: the copy was made before them
    checkpoint(src);
    fs.renameSync(copy, src);
    const exit = await exitWithin(f);
    expectReplaced(exit, f, src);
    await expectRecovery(src, target, 'SEQ_REGRESSED');
  });

  test('export --follow stops the same way, and its saved cursor names the file it read', async () => {
    const src = source('c.db');
    const copy = path.join(dir, 'c-copy.db');
    const out = path.join(dir, 'c.jsonl');
    running = startCli(['export', src, '--out', out, '--follow']);
    const f = running;
    await waitFor('the snapshot on disk', () => fs.existsSync(`${out}.cursor`));
    vacuumInto(src, copy);
    writeRows(src, 151, 156, 'old');
    await waitFor("the old file's writes in the export", () => fs.readFileSync(out, 'utf8').includes('"old155"'));
    const heldFile = fs.statSync(src, { bigint: true });
    checkpoint(src);
    fs.renameSync(copy, src);
    writeRows(src, 151, 161, 'new');
    const exit = await exitWithin(f);
    expectReplaced(exit, f, src);
    expect(fs.readFileSync(out, 'utf8')).not.toContain('"new');
    const saved = readResumePoint(`${out}.cursor`).cursor;
    expect(saved).toBeDefined();
    expect(decodeCursor(saved as string).file?.ino).toBe(heldFile.ino.toString());
  });
});
