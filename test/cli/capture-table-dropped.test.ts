// a source one of whose _sluice_ tables was dropped by hand: each command names the source, the table and the way back
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCliAsync, mapLimit, makeDir, removeDir, trackerSource, expectOneLineError, write } from './support/cli.ts';

/*
 * A table of sluice's capture dropped outside sluice (a schema tool that
 * drops what its model does not declare, a hand cleanup in the sqlite3
 * shell) left every command that reads the capture printing SQLite's bare
 * "SQLITE_ERROR: no such table: main._sluice_journal", which names neither
 * the file nor a way on. Each now fails with CAPTURE_DAMAGED, exit 3,
 * naming the source, the missing table, and the repair: sluice disable SRC
 * (which removes what is left) and enable again. That repair works.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

const DROPPED = ['_sluice_journal', '_sluice_tables', '_sluice_last', '_sluice_consumers'] as const;
/** The commands that read each table (changes and enable do not read the acknowledgements). */
const READERS: Readonly<Record<(typeof DROPPED)[number], readonly string[]>> = {
  _sluice_journal: ['status', 'changes', 'sync', 'export', 'enable'],
  _sluice_tables: ['status', 'changes', 'sync', 'export', 'enable'],
  _sluice_last: ['status', 'changes', 'sync', 'export', 'enable'],
  _sluice_consumers: ['status', 'sync', 'export'],
};

describe('a source with a _sluice_ table dropped by hand', () => {
  test.each(DROPPED)('without %s: the commands that read it say CAPTURE_DAMAGED, and disable then enable repairs it', async (table) => {
    const src = trackerSource(at(`${table}.db`), ['issues']);
    write(src, `DROP TABLE ${table}`);
    const commands: Record<string, string[]> = {
      status: ['status', src],
      changes: ['changes', src],
      sync: ['sync', src, at(`${table}-cache.db`)],
      export: ['export', src, '--out', at(`${table}.jsonl`)],
      enable: ['enable', src, 'issues'],
    };
    const results = await mapLimit(
      Object.entries(commands).filter(([name]) => READERS[table].includes(name)),
      4,
      async ([name, args]) => ({ name, r: await runCliAsync(args) }),
    );
    for (const { name, r } of results) {
      expect(r.status, `${name}: ${r.stderr}`).toBe(3);
      expect(r.stderr, name).not.toContain('SQLITE_ERROR');
      expectOneLineError(r, 'CAPTURE_DAMAGED');
      expect(r.stderr, name).toContain(`Source ${src}`);
      expect(r.stderr, name).toContain(table);
      expect(r.stderr, name).toContain(`sluice disable ${src}`);
    }
    // (Without the acknowledgements, sync finds out only once it has made the target, empty.)
    if (table !== '_sluice_consumers') expect(fs.existsSync(at(`${table}-cache.db`))).toBe(false);
    // The repair it names.
    expect((await runCliAsync(['disable', src])).status).toBe(0);
    expect((await runCliAsync(['enable', src, 'issues'])).status).toBe(0);
    const r = await runCliAsync(['status', src]);
    expect(r.status, r.stderr).toBe(0);
  });
});
