// each command writes to a source only what docs source writes says
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { NatsServer } from '../support/nats-server.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource } from './support/cli.ts';
import { changedBetween, contents, expectUntouched, fileState, pythonWrite, setJournalMode } from './support/source-state.ts';

/*
 * docs/source-writes.md, held to command by command. The source is a
 * user's database in rollback-journal (delete) mode, with capture, a
 * synced target and events after the target's cursor. The read-only
 * commands leave its bytes, its WAL and its journal mode as they were;
 * the others change exactly the objects the document lists.
 */

let golden: string;
let n = 0;

beforeAll(async () => {
  golden = makeDir();
  const src = trackerSource(path.join(golden, 'app.db'), ['issues', 'comments']);
  await sync(src, path.join(golden, 'cache.db'));
  pythonWrite(src, "UPDATE issues SET state = 'closed' WHERE number < 4; DELETE FROM comments WHERE id < 10");
  setJournalMode(src, 'delete');
  setJournalMode(path.join(golden, 'cache.db'), 'delete');
}, 60_000);
afterAll(() => removeDir(golden));

/** A private copy of the golden source and target (no connection is open on them). */
function copy(): { dir: string; src: string; tgt: string } {
  const dir = path.join(golden, `case-${n++}`);
  fs.mkdirSync(dir);
  for (const f of ['app.db', 'cache.db']) fs.copyFileSync(path.join(golden, f), path.join(dir, f));
  return { dir, src: path.join(dir, 'app.db'), tgt: path.join(dir, 'cache.db') };
}

async function ok(args: string[]): Promise<string> {
  const r = await runCliAsync(args);
  expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

const DROP_ISSUES_UPDATE_TRIGGER = 'DROP TRIGGER _sluice_t1_upd';

describe('commands that only read the source', () => {
  test('status, changes, export, health, strip, verify and explain leave its bytes, its WAL and its journal mode as they were', async () => {
    const { dir, src, tgt } = copy();
    const before = fileState(src);
    expect(before.journalMode).toBe('delete');
    const out = path.join(dir, 'out.jsonl');
    for (const args of [
      ['status', src],
      ['changes', src],
      ['export', src, '--out', out],
      ['health', tgt],
      ['strip', src, '--out', path.join(dir, 'copy.db')],
      ['verify', src, tgt],
      ['explain', src, tgt],
    ]) {
      const r = await runCliAsync(args);
      expect(r.status, `${args[0]}: ${r.stderr}`).toBeLessThanOrEqual(3);
      expectUntouched(src, before, args[0]);
    }
  });

  test('publish reads the source only, and keeps its position in a state file beside it', async () => {
    const { src } = copy();
    const before = fileState(src);
    const nats = await NatsServer.start();
    try {
      await ok(['publish', src, '--nats', nats.url]);
    } finally {
      await nats.dispose();
    }
    expectUntouched(src, before, 'publish');
    const dirOf = path.dirname(src);
    expect(fs.readdirSync(dirOf).filter((f) => f.startsWith(`${path.basename(src)}.publish-`) && f.endsWith('.cursor'))).toHaveLength(1);
  });

  test('verify does not re-arm a table whose trigger was dropped: it reads, and the trigger stays missing', async () => {
    const { src, tgt } = copy();
    pythonWrite(src, DROP_ISSUES_UPDATE_TRIGGER);
    const before = fileState(src);
    await runCliAsync(['verify', src, tgt]);
    expectUntouched(src, before);
  });

  test('query of a SELECT (and of select 1) reads without writing or switching the journal mode', async () => {
    const { src } = copy();
    const before = fileState(src);
    expect(parseJson({ stdout: await ok(['query', src, 'select 1', '--json']), stderr: '' }, S.queryOutput).rows).toEqual([[1]]);
    await ok(['query', src, 'SELECT count(*) FROM issues']);
    expectUntouched(src, before);
  });
});

describe('enable', () => {
  test('a failed enable (a table without a primary key) leaves a rollback-journal database byte-identical and in its mode', async () => {
    const { dir } = copy();
    const db = path.join(dir, 'plain.db');
    pythonWrite(db, 'CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES (1)');
    const before = fileState(db);
    expect(before.journalMode).toBe('delete');
    const r = await runCliAsync(['enable', db, 'notes']);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/primary key/i);
    expectUntouched(db, before);
  });

  test('a failed enable on a source with capture (an unknown table) changes nothing there either', async () => {
    const { src } = copy();
    const before = fileState(src);
    const r = await runCliAsync(['enable', src, 'no_such_table']);
    expect(r.status, r.stderr).toBe(1);
    expectUntouched(src, before);
  });

  test('a successful enable switches the file to WAL and says so, in its text and in --json; a second one says it was already', async () => {
    const { dir } = copy();
    const db = path.join(dir, 'app2.db');
    pythonWrite(db, 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 2)');
    expect(fileState(db).journalMode).toBe('delete');
    const first = parseJson({ stdout: await ok(['enable', db, 'notes', '--json']), stderr: '' }, S.enableOutput);
    expect(first).toMatchObject({ created: true, added: ['notes'], journalMode: 'wal', switchedToWal: true });
    expect(fileState(db).journalMode).toBe('wal');
    const again = parseJson({ stdout: await ok(['enable', db, 'notes', '--json']), stderr: '' }, S.enableOutput);
    expect(again).toMatchObject({ created: false, added: [], rearmed: [], journalMode: 'wal', switchedToWal: false });
    setJournalMode(db, 'delete');
    expect(await ok(['enable', db, 'notes'])).toMatch(/switched .* to WAL/);
  });
});

describe('commands that write to the source', () => {
  test('sync writes only its acknowledgements (_sluice_consumers) and keeps the journal mode', async () => {
    const { src, tgt } = copy();
    const before = contents(src);
    await ok(['sync', src, tgt]);
    expect(changedBetween(before, contents(src))).toEqual({ schema: [], rows: ['_sluice_consumers'] });
    expect(fileState(src).journalMode).toBe('delete');
  });

  test('bump changes only _sluice_state, and re-arms nothing', async () => {
    const { src } = copy();
    pythonWrite(src, DROP_ISSUES_UPDATE_TRIGGER);
    const before = contents(src);
    await ok(['bump', src, '--reason', 'reload']);
    expect(changedBetween(before, contents(src))).toEqual({ schema: [], rows: ['_sluice_state'] });
    expect(fileState(src).journalMode).toBe('delete');
  });

  test('prune deletes journal rows and records pruned_through, and re-arms nothing', async () => {
    const { src } = copy();
    pythonWrite(src, DROP_ISSUES_UPDATE_TRIGGER);
    const before = contents(src);
    await ok(['prune', src]);
    const changed = changedBetween(before, contents(src));
    expect(changed.schema).toEqual([]);
    expect(changed.rows.every((t) => ['_sluice_journal', '_sluice_state'].includes(t))).toBe(true);
    expect(fileState(src).journalMode).toBe('delete');
  });

  test('disable removes every _sluice_ object and nothing else, and keeps the journal mode', async () => {
    const { src } = copy();
    const before = contents(src);
    await ok(['disable', src]);
    const after = contents(src);
    const ours = Object.keys(before.schema).filter((k) => k.startsWith('_sluice_'));
    expect(changedBetween(before, after).schema).toEqual(ours.sort());
    expect(Object.keys(after.schema).filter((k) => k.startsWith('_sluice_'))).toEqual([]);
    for (const t of Object.keys(after.rows)) expect(after.rows[t]).toEqual(before.rows[t]);
    expect(fileState(src).journalMode).toBe('delete');
  });

  test('disable of one table drops its triggers and changes only sluice rows (its catalog, last, journal rows, the state and the schema span), and keeps the journal mode', async () => {
    const { src } = copy();
    const before = contents(src);
    await ok(['disable', src, 'comments']);
    const after = contents(src);
    const changed = changedBetween(before, after);
    expect(changed.schema).toEqual(
      Object.keys(before.schema)
        .filter((k) => /^_sluice_t2_/.test(k))
        .sort(),
    );
    expect(changed.schema.length).toBeGreaterThan(0);
    expect(
      changed.rows.every((t) => ['_sluice_tables', '_sluice_last', '_sluice_journal', '_sluice_state', '_sluice_schema'].includes(t)),
    ).toBe(true);
    expect(changed.rows).toContain('_sluice_tables');
    expect(fileState(src).journalMode).toBe('delete');
  });

  test("forget deletes the one consumer's acknowledgement row, nothing else, and keeps the journal mode", async () => {
    // (The golden target acknowledged under the golden path, which the copy keeps.)
    const { src } = copy();
    const before = contents(src);
    await ok(['forget', src, `issues@${fs.realpathSync(path.join(golden, 'cache.db'))}`]);
    const after = contents(src);
    expect(changedBetween(before, after)).toEqual({ schema: [], rows: ['_sluice_consumers'] });
    expect(after.rows._sluice_consumers?.length).toBe((before.rows._sluice_consumers?.length ?? 0) - 1);
    expect(fileState(src).journalMode).toBe('delete');
  });

  test("query of a write changes the user's table and what its capture records, nothing else, and keeps the journal mode", async () => {
    const { src } = copy();
    const before = contents(src);
    await ok(['query', src, "UPDATE issues SET state = 'open' WHERE number = 5"]);
    const changed = changedBetween(before, contents(src));
    expect(changed.schema).toEqual([]);
    expect(changed.rows).toContain('issues');
    expect(changed.rows.filter((t) => t !== 'issues' && !t.startsWith('_sluice_'))).toEqual([]);
    expect(changed.rows).not.toContain('_sluice_tables');
    expect(fileState(src).journalMode).toBe('delete');
  });
});
