// values a source column holds that its declared type would store otherwise are never copied converted without a word
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { runCli, runPython } from '../../support/fixtures.ts';
import { pythonExec } from '../../support/journal.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * A column's declared type changed without its rows written again (PRAGMA
 * writable_schema, the way SQLite documents): the source's column declared
 * INTEGER still holds the TEXT '1' it held as TEXT. A mirror or a map
 * declares its columns as the source does, so a copy stores the INTEGER 1:
 * a rebuild used to do so, exit 0 with health green, and verify then
 * blamed a hand edit (TARGET_EDITED) and offered a reinit, which copied the
 * same converted values again. Now a rebuild over a column whose declared
 * type changed its affinity reads its values first, and suspends the
 * projection with SOURCE_AFFINITY, keeping its rows, when it holds any;
 * verify says SOURCE_AFFINITY of rows that differ for it; the repair (the
 * values stored again in the source, then a reinit) makes the copy exact.
 */

const SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, w TEXT); INSERT INTO t VALUES (1, '1', 'a'), (2, '2', 'b'), (3, 'x', 'c')";

/** Declares `from` as `to` in the table's SQL, rows untouched (writable_schema and a schema_version bump, from Python). */
function redeclare(file: string, from: string, to: string): void {
  runPython(
    `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
sv = c.execute('PRAGMA schema_version').fetchone()[0]
c.execute('PRAGMA writable_schema=ON')
c.execute("UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE name = 't'", (sys.argv[2], sys.argv[3]))
c.execute('PRAGMA schema_version=%d' % (sv + 1))
c.execute('PRAGMA writable_schema=OFF')
c.close()
`,
    [file, from, to],
  );
}

function quoted(file: string, sql = 'SELECT id, quote(v) FROM t ORDER BY id'): string {
  return runPython(
    `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(';'.join('|'.join(str(x) for x in r) for r in c.execute(sys.argv[2])))
`,
    [file, sql],
  ).trim();
}

function cli(args: string[]): { status: number; out: Record<string, unknown> } {
  const r = runCli([...args, '--json']);
  return { status: r.status, out: (r.stdout.trim() === '' ? {} : JSON.parse(r.stdout)) as Record<string, unknown> };
}

test("a mirror over a column declared INTEGER in place, holding TEXT '1', is suspended with SOURCE_AFFINITY and keeps its rows; reinit refuses the same until the values are stored again; then it is exact", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, SCHEMA, ['t']);
  const target = path.join(tmp, 'target.db');
  expect(cli(['sync', src.file, target]).status).toBe(0);
  const before = quoted(target);
  expect(before).toBe("1|'1';2|'2';3|'x'");

  redeclare(src.file, 'v TEXT', 'v INTEGER');
  const s = cli(['sync', src.file, target]);
  expect(s.status).toBe(3);
  const p = (s.out.projections as Record<string, unknown>[])[0];
  expect(p).toMatchObject({
    name: 't',
    state: 'suspended',
    reason: 'SOURCE_AFFINITY',
    detail: {
      table: 't',
      columns: ['v'],
      misfits: [{ column: 'v', affinity: 'INTEGER', count: 2, classes: ['text'], key: [1], value: "'1'" }],
      rewrite: `UPDATE "t" SET "v" = "v" WHERE typeof("v") IN ('text')`,
    },
  });
  // Its rows as they were: nothing converted.
  expect(quoted(target)).toBe(before);
  const h = runCli(['health', target]);
  expect(h.status).toBe(3);
  expect(h.stdout).toContain('SOURCE_AFFINITY: t.v holds values that its declared type stores in another class');
  expect(h.stdout).toContain(`sluice query ${src.file} 'UPDATE "t" SET "v" = "v" WHERE typeof("v") IN ('\\''text'\\'')'`);
  // A rebuild alone would copy them converted: refused the same.
  const again = cli(['reinit', src.file, target, 't']);
  expect(again.status).toBe(3);
  expect(quoted(target)).toBe(before);

  // The repair, as said: the values stored again in the source (journaled), then the rebuild.
  const q = runCli(['query', src.file, `UPDATE "t" SET "v" = "v" WHERE typeof("v") IN ('text')`]);
  expect(q.status, q.stderr).toBe(0);
  expect(quoted(src.file)).toBe("1|1;2|2;3|'x'");
  expect(cli(['reinit', src.file, target, 't']).status).toBe(0);
  expect(quoted(target)).toBe(quoted(src.file));
  expect(cli(['verify', src.file, target])).toMatchObject({ status: 0, out: { ok: true } });
  expect(runCli(['health', target]).status).toBe(0);
});

test('INTEGER declared TEXT in place: the integers it holds are such values too; a map that copies the column is suspended, one that does not read it is rebuilt', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(
    makeDb,
    "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, w TEXT); INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')",
    ['t'],
  );
  const target = path.join(tmp, 'target.db');
  const defs: ProjectionDefinition[] = [
    { name: 'copies', source: 't', kind: 'map', columns: { id: 'id', v: 'v' } },
    { name: 'other', source: 't', kind: 'map', columns: { id: 'id', w: 'w' } },
  ];
  let s = await Syncer.open(src.file, target, { projections: defs });
  await s.runOnce();
  s.close();
  redeclare(src.file, 'v INTEGER', 'v TEXT');
  s = await Syncer.open(src.file, target, { projections: defs });
  try {
    const r = await s.runOnce();
    expect(r.projections.map((p) => [p.name, p.state, p.reason ?? p.rebuilt])).toEqual([
      ['copies', 'suspended', 'SOURCE_AFFINITY'],
      ['other', 'active', 'CAPTURE_REARMED'],
    ]);
    expect(r.projections[0]?.detail).toMatchObject({ columns: ['v'], misfits: [{ affinity: 'TEXT', count: 2, classes: ['integer'] }] });
    expect(quoted(target, 'SELECT id, quote(v) FROM copies ORDER BY id')).toBe('1|10;2|20');
  } finally {
    s.close();
  }
});

test('verify says SOURCE_AFFINITY, not a hand edit, of rows a rebuild converted from values declared anew before the table was captured, with the statement that repairs it', async ({
  makeDb,
  tmp,
}) => {
  const made = makeDb('source.db', SCHEMA);
  made.db.close();
  redeclare(made.file, 'v TEXT', 'v INTEGER');
  expect(runCli(['enable', made.file, 't']).status).toBe(0);
  const target = path.join(tmp, 'target.db');
  expect(cli(['sync', made.file, target]).status).toBe(0);
  // A rebuild with no declaration changed since the build does not read every value first (what a rebuild costs).
  pythonExec(made.file, "UPDATE t SET w = 'b2' WHERE id = 2");
  cli(['reinit', made.file, target, 't']);
  const v = cli(['verify', made.file, target]);
  expect(v.status).toBe(3);
  const p = (v.out.projections as Record<string, unknown>[])[0];
  expect(p).toMatchObject({
    ok: false,
    reason: 'SOURCE_AFFINITY',
    suspended: true,
    sourceAffinity: { columns: ['v'], rewrite: `UPDATE "t" SET "v" = "v" WHERE typeof("v") IN ('text')` },
  });
  expect(String(p?.repair)).toMatch(/^SOURCE_AFFINITY: t\.v holds values .* then rebuild: sluice reinit /);
  const h = cli(['health', target]);
  expect(h.status).toBe(3);
  expect(JSON.stringify(h.out)).toContain('SOURCE_AFFINITY');
  // The reinit verify used to offer copies them converted again: refused while they are there.
  expect(cli(['reinit', made.file, target, 't']).status).toBe(3);

  expect(runCli(['query', made.file, String((p?.sourceAffinity as { rewrite: string }).rewrite)]).status).toBe(0);
  expect(cli(['reinit', made.file, target, 't']).status).toBe(0);
  expect(quoted(target)).toBe(quoted(made.file));
  expect(cli(['verify', made.file, target])).toMatchObject({ status: 0, out: { ok: true } });
});
