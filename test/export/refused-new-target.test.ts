// an import refused into a target that did not exist leaves no file behind: health cannot mistake an empty target for a healthy one
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, runCliOk as ok, parseJson, makeDir, removeDir } from '../cli/support/cli.ts';

/*
 * `sluice import new.db events.jsonl` with a file that holds events but no
 * snapshot (export --since) refuses it (IMPORT_NO_SNAPSHOT: there is
 * nothing to apply the events to), but it left new.db behind, made and
 * empty: no projection, so nothing to record the refusal on, and `sluice
 * health new.db` then said "no projections in this target" and exited 0. A
 * cron job that runs health, not import's exit code, saw a healthy target.
 * As sync does for a refused first open, an import that made the target and
 * committed nothing removes it again: health then says the target does not
 * exist. A target the import found already there is kept as it was.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

/** A captured source t(id, v) with one row, and a file (JSONL or a segment) of the events written after its first export: no snapshot. */
async function eventsOnly(format: 'jsonl' | 'segment'): Promise<string> {
  const src = at('a.db');
  runSqliteCli(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a');");
  await ok(['enable', src, 't']);
  const first = parseJson(await ok(['export', src, '--out', at('first.jsonl'), '--json']), S.exportOutput).cursor as string;
  runSqliteCli(src, "INSERT INTO t VALUES (2, 'b');");
  const out = at(format === 'jsonl' ? 'events.jsonl' : 'events');
  await ok(['export', src, '--out', out, '--since', first, ...(format === 'segment' ? ['--format', 'segment'] : [])]);
  return out;
}

/** The files in `dir` whose names start with `prefix`. */
const filesOf = (prefix: string) => fs.readdirSync(dir).filter((f) => f.startsWith(prefix));

describe('an import refused into a new target', () => {
  for (const format of ['jsonl', 'segment'] as const) {
    test(`${format}: events with no snapshot are refused (IMPORT_NO_SNAPSHOT) and no target file is left; health says it does not exist`, async () => {
      const file = await eventsOnly(format);
      const tgt = at('new.db');
      const r = await runCliAsync(['import', tgt, file]);
      expect(r.status, r.stdout + r.stderr).not.toBe(0);
      expect(r.stderr).toContain('IMPORT_NO_SNAPSHOT');
      expect(filesOf('new.db')).toEqual([]);
      const h = await runCliAsync(['health', tgt]);
      expect(h.status, h.stdout + h.stderr).toBe(1);
      expect(h.stderr).toContain('DB_NOT_FOUND');
    });
  }

  test("a database of the user's that was no target keeps its rows, loses sluice's tables again and its journal mode is put back; health says it is no target", async () => {
    const file = await eventsOnly('jsonl');
    const tgt = at('kept.db');
    // A database of the user's (no sluice tables): import would make it a target, but refuses the file.
    runSqliteCli(tgt, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'mine');");
    const r = await runCliAsync(['import', tgt, file]);
    expect(r.stderr).toContain('IMPORT_NO_SNAPSHOT');
    expect(filesOf('kept.db')).toEqual(['kept.db']);
    expect(
      runSqliteCli(
        tgt,
        "SELECT group_concat(type || ':' || name, ' ') FROM sqlite_schema; PRAGMA journal_mode; SELECT * FROM notes;",
      ).trim(),
    ).toBe('table:notes\ndelete\n1|mine');
    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout + h.stderr).toBe(1);
    expect(h.stderr).toContain('NOT_A_TARGET');
  });

  test('a new target whose file committed its snapshot before a gap keeps it, with the refusal recorded: health exits 3', async () => {
    // first.jsonl (the snapshot), then the events of a second export with those of a first one missing: a gap after the snapshot.
    const events = await eventsOnly('jsonl');
    runSqliteCli(at('a.db'), "INSERT INTO t VALUES (3, 'c');");
    await ok(['export', at('a.db'), '--out', events]); // appends, resuming from events.jsonl.cursor
    const later = fs
      .readFileSync(events, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .slice(2)
      .join('\n');
    const file = at('gapped.jsonl');
    fs.writeFileSync(file, fs.readFileSync(at('first.jsonl'), 'utf8') + later + '\n');
    const tgt = at('new.db');
    const r = await runCliAsync(['import', tgt, file]);
    expect(r.status, r.stdout + r.stderr).toBe(3);
    expect(r.stderr).toContain('BATCH_GAP');
    expect(runSqliteCli(tgt, 'SELECT group_concat(id) FROM t;').trim()).toBe('1');
    const h = await runCliAsync(['health', tgt, '--json']);
    expect(h.status, h.stdout + h.stderr).toBe(3);
    expect(parseJson(h, S.healthOutput).projections).toMatchObject([{ name: 't', failure: { code: 'BATCH_GAP' } }]);
  });
});
