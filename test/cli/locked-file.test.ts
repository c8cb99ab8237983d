// a file another process holds locked: every command names it, the lock and the fix, never a bare SQLITE_BUSY
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { PythonWriter } from '../support/python-writer.ts';
import { setJournalMode } from './support/source-state.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError, syncedAndExported, syncByLibrary } from './support/cli.ts';

/*
 * An app holding a write transaction open (here a Python sqlite3 writer in
 * BEGIN IMMEDIATE, or BEGIN EXCLUSIVE with a write on a rollback-journal
 * file, which keeps readers out too) is the lock a user meets most. sync
 * names it (SOURCE_BUSY / TARGET_BUSY, test/apply/sync/busy-timeout.test.ts);
 * the other commands printed SQLite's bare "SQLITE_BUSY: database is locked",
 * which names no file. Each now fails, after the usual 5 s wait, with one line
 * naming the file, that another process holds its lock, and to run the
 * command again once that process commits; exit 1.
 */

let dir: string;
let src: string;
let tgt: string;
let jsonl: string;
let rollback: string;
let rollbackTgt: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  ({ src, tgt, jsonl } = await syncedAndExported(dir));
  rollback = trackerSource(at('rollback.db'));
  rollbackTgt = at('rollback-cache.db');
  expect(await syncByLibrary(rollback, rollbackTgt)).toBe(0);
  setJournalMode(rollback, 'delete');
});
afterAll(() => removeDir(dir));

async function hold(file: string, sql: readonly string[]): Promise<PythonWriter> {
  const w = PythonWriter.start();
  expect((await w.send({ open: file })).ok).toBe(true);
  for (const s of sql) {
    const r = await w.send({ sql: s });
    expect(r.ok, r.error).toBe(true);
  }
  return w;
}

interface Case {
  readonly args: () => string[];
  readonly code: string;
  /** The file the line names (and the other file, for a lock that may be either's). */
  readonly names: () => string[];
}

async function expectNamed(locked: () => string, lock: readonly string[], cases: Record<string, Case>): Promise<void> {
  const w = await hold(locked(), lock);
  try {
    // All at once: each command spends its time in the 5 s busy wait, not on a core.
    const results = await Promise.all(Object.entries(cases).map(async ([name, c]) => ({ name, c, r: await runCliAsync(c.args()) })));
    for (const { name, c, r } of results) {
      expect(r.status, `${name}: ${r.stderr}`).toBe(1);
      expect(r.stderr, name).not.toContain('SQLITE_BUSY');
      expectOneLineError(r, c.code);
      for (const n of c.names()) expect(r.stderr, name).toContain(n);
      expect(r.stderr, name).toContain('another process holds');
      expect(r.stderr, name).toMatch(/run sluice [a-z]+ again once that process commits/);
    }
  } finally {
    await w.send({ sql: 'ROLLBACK' });
    await w.stop();
  }
}

// Side by side: each test locks a file of its own (the source, the target, the rollback-journal source) and runs
// commands that open no file another test locks, so their 5 s busy waits overlap.
describe.concurrent('a file another process holds locked', () => {
  test('the source in WAL, held by a writer: the commands that write it name the source', async () => {
    await expectNamed(() => src, ['BEGIN IMMEDIATE'], {
      enable: { args: () => ['enable', src, 'issues', '--mode', 'keys'], code: 'SOURCE_BUSY', names: () => [src] },
      disable: { args: () => ['disable', src, 'labels'], code: 'SOURCE_BUSY', names: () => [src] },
      bump: { args: () => ['bump', src, '--reason', 'reload'], code: 'SOURCE_BUSY', names: () => [src] },
      prune: { args: () => ['prune', src], code: 'SOURCE_BUSY', names: () => [src] },
      forget: { args: () => ['forget', src, 'nobody'], code: 'SOURCE_BUSY', names: () => [src] },
      alter: { args: () => ['alter', src, 'ALTER TABLE labels ADD COLUMN note TEXT'], code: 'SOURCE_BUSY', names: () => [src] },
      query: { args: () => ['query', src, "UPDATE labels SET name = name || '!'"], code: 'DB_BUSY', names: () => [src] },
    });
  });

  test('the target, held by a writer: drop, protect and import name the target', async () => {
    await expectNamed(() => tgt, ['BEGIN IMMEDIATE'], {
      drop: { args: () => ['drop', tgt, 'labels'], code: 'TARGET_BUSY', names: () => [tgt] },
      protect: { args: () => ['protect', tgt], code: 'TARGET_BUSY', names: () => [tgt] },
      import: { args: () => ['import', tgt, jsonl], code: 'TARGET_BUSY', names: () => [tgt] },
    });
  });

  test('a rollback-journal source under an exclusive lock: verify and explain, which only read it, name the source', async () => {
    await expectNamed(() => rollback, ['BEGIN EXCLUSIVE', "UPDATE labels SET name = name || '!'"], {
      verify: { args: () => ['verify', rollback, rollbackTgt], code: 'SOURCE_BUSY', names: () => [rollback] },
      explain: { args: () => ['explain', rollback, rollbackTgt], code: 'SOURCE_BUSY', names: () => [rollback] },
    });
  });
});
