// a sync refused for a bad projection definition leaves the source untouched even when a table needs re arming
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { test, expect } from '../../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, expectOneLineError } from '../../cli/support/cli.ts';
import { fileState, expectUntouched, pythonWrite, setJournalMode } from '../../cli/support/source-state.ts';

/*
 * docs/source-writes.md: re-arming happens only in enable and at the open
 * of sync, "which both report it". A sync refused for its definition (exit
 * 1, UNKNOWN_SOURCE_TABLE) reports nothing, so it must write nothing; but
 * the session re-arms the source (a table with a newer user AFTER trigger,
 * USER_TRIGGER_NEWER) before the definitions are read: generation + 1,
 * new triggers and a new order mark in the user's file, unreported.
 */

let dir: string;
beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

test('a sync whose --projection names a table the source lacks exits 1 and leaves the bytes of a source that needs a re-arm as they were', async () => {
  const src = trackerSource(path.join(dir, 'app.db'), ['issues']);
  pythonWrite(src, 'CREATE TRIGGER audit AFTER UPDATE ON issues BEGIN SELECT 1; END;');
  setJournalMode(src, 'delete');
  const def = path.join(dir, 'bad.json');
  fs.writeFileSync(def, JSON.stringify({ name: 'x', source: 'no_such_table', kind: 'mirror' }));
  const before = fileState(src);
  const r = await runCliAsync(['sync', src, path.join(dir, 'cache.db'), '--projection', def]);
  expect(r.status).toBe(1);
  expectOneLineError(r, 'UNKNOWN_SOURCE_TABLE');
  expectUntouched(src, before, 'the refused sync');
});
