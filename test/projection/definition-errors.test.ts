// a bad definition is rejected with a clear error before anything is written
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { Syncer, sync } from '../../src/apply/sync/index.ts';
import { importFile } from '../../src/export/index.ts';
import { InvalidInputError } from '../../src/errors.ts';
import { cli, dumpFile, highWater, makeSource } from '../apply/support/target.ts';
import { SCHEMA, SEED } from '../apply/support/scenario.ts';

interface BadCase {
  readonly what: string;
  readonly defs: readonly unknown[];
  readonly code: string;
  /** The message names what is wrong. */
  readonly message: RegExp;
}

const CASES: readonly BadCase[] = [
  // zod: the shape of the definition.
  {
    what: 'an unknown kind',
    defs: [{ name: 'x', source: 'items', kind: 'mirrorr' }],
    code: 'BAD_DEFINITION',
    message: /projection x .*kind: .*'mirror' \| 'map' \| 'fts5' \| 'custom'/,
  },
  { what: 'a missing source', defs: [{ name: 'x', kind: 'mirror' }], code: 'BAD_DEFINITION', message: /source: .*expected string/ },
  { what: 'a map without columns', defs: [{ name: 'x', source: 'items', kind: 'map' }], code: 'BAD_DEFINITION', message: /columns: / },
  {
    what: 'an fts5 with no columns',
    defs: [{ name: 'x', source: 'items', kind: 'fts5', columns: [] }],
    code: 'BAD_DEFINITION',
    message: /columns: Too small/,
  },
  {
    what: 'a misspelt field',
    defs: [{ name: 'x', source: 'items', kind: 'map', colums: { id: 'id' } }],
    code: 'BAD_DEFINITION',
    message: /Unrecognized key: "colums"/,
  },
  {
    what: 'a name that is not an identifier',
    defs: [{ name: 'open issues', source: 'items', kind: 'mirror' }],
    code: 'BAD_DEFINITION',
    message: /name: use letters, digits/,
  },
  {
    what: 'a name with SQL in it',
    defs: [{ name: 'x";DROP TABLE items;--', source: 'items', kind: 'mirror' }],
    code: 'BAD_DEFINITION',
    message: /name: /,
  },
  {
    what: 'a reserved target name',
    defs: [{ name: 'x', source: 'items', kind: 'mirror', target: '_sluice_projections' }],
    code: 'BAD_DEFINITION',
    message: /target: .*reserved/,
  },
  {
    what: 'a column type with SQL in it',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', q: { expr: 'qty', type: 'INT; DROP TABLE items' } } }],
    code: 'BAD_DEFINITION',
    message: /columns\.q\.type/,
  },
  {
    what: 'a custom projection without a handler',
    defs: [{ name: 'x', source: 'items', kind: 'custom' }],
    code: 'BAD_DEFINITION',
    message: /needs "module"/,
  },
  // Validation against the source.
  {
    what: 'an fts5 tokenizer SQLite does not have',
    defs: [{ name: 'x', source: 'items', kind: 'fts5', columns: ['name'], tokenize: 'porter nosuch' }],
    code: 'BAD_TOKENIZER',
    message: /Projection x: "tokenize": "porter nosuch" is not usable: .*tokenizer.*unicode61/,
  },
  {
    what: 'an fts5 tokenizer option its tokenizer does not take',
    defs: [{ name: 'x', source: 'items', kind: 'fts5', columns: ['name'], tokenize: 'unicode61 remove_diacritics 7' }],
    code: 'BAD_TOKENIZER',
    message: /"tokenize": "unicode61 remove_diacritics 7" is not usable/,
  },
  {
    what: 'an unknown source table',
    defs: [{ name: 'x', source: 'nope', kind: 'mirror' }],
    code: 'UNKNOWN_SOURCE_TABLE',
    message: /source table nope does not exist/,
  },
  {
    what: 'an unknown column in a map',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', n: 'nmae' } }],
    code: 'UNKNOWN_COLUMN',
    message: /items has no column nmae \(it has id, name, qty, price, data\)/,
  },
  {
    what: 'an unknown column in an fts5',
    defs: [{ name: 'x', source: 'items', kind: 'fts5', columns: ['title'] }],
    code: 'UNKNOWN_COLUMN',
    message: /no column title/,
  },
  {
    what: 'an fts5 column named like its own index',
    defs: [{ name: 'name', source: 'items', kind: 'fts5', columns: ['name'] }],
    code: 'RESERVED_COLUMN',
    message: /cannot have a column named name .*command column/,
  },
  {
    what: 'an unknown column in an expression',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', y: { expr: 'cost * 2' } } }],
    code: 'BAD_EXPRESSION',
    message: /column y .*no such column: cost/,
  },
  {
    what: 'a map without the key column',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { name: 'name', qty: 'qty' } }],
    code: 'MISSING_KEY',
    message: /must include the source key column id of items/,
  },
  {
    what: 'a key column only as an expression',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: { expr: 'id + 0' } } }],
    code: 'MISSING_KEY',
    message: /key column id/,
  },
  {
    what: 'random()',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', r: { expr: 'random()' } } }],
    code: 'BAD_EXPRESSION',
    message: /column r \(random\(\)\).*non-deterministic/,
  },
  {
    what: "date('now')",
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', d: { expr: "date('now')" } } }],
    code: 'BAD_EXPRESSION',
    message: /non-deterministic use of date\(\)/,
  },
  // SQLite's purity check runs when a date function is called, so the probe evaluates sample values, not only NULLs.
  {
    what: "a date in the process's time zone ('localtime')",
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', d: { expr: "date(name, 'localtime')" } } }],
    code: 'BAD_EXPRESSION',
    message: /column d \(date\(name, 'localtime'\)\) is not usable: non-deterministic use of date\(\) .*time zone/,
  },
  {
    what: "a unix time in the process's time zone",
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', d: { expr: "datetime(qty, 'unixepoch', 'localtime')" } } }],
    code: 'BAD_EXPRESSION',
    message: /column d .*non-deterministic use of datetime\(\)/,
  },
  {
    what: "a 'utc' filter",
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id' }, filter: "date(price, 'utc') > '2024-01-01'" }],
    code: 'BAD_EXPRESSION',
    message: /filter .*non-deterministic use of date\(\)/,
  },
  {
    what: 'current_timestamp',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', d: { expr: 'current_timestamp' } } }],
    code: 'BAD_EXPRESSION',
    message: /non-deterministic/,
  },
  {
    what: 'a non-deterministic filter',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id' }, filter: 'random() % 2 = 0' }],
    code: 'BAD_EXPRESSION',
    message: /filter .*non-deterministic/,
  },
  {
    what: 'a subquery',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', s: { expr: '(SELECT count(*) FROM tags)' } } }],
    code: 'BAD_EXPRESSION',
    message: /subqueries prohibited/,
  },
  {
    what: 'a subquery in the filter',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id' }, filter: 'id IN (SELECT n FROM tags)' }],
    code: 'BAD_EXPRESSION',
    message: /filter .*subqueries prohibited/,
  },
  {
    what: 'an aggregate',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', m: { expr: 'max(qty)' } } }],
    code: 'BAD_EXPRESSION',
    message: /misuse of aggregate/,
  },
  {
    what: 'an expression that smuggles a statement',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', s: { expr: '1); DROP TABLE items; --' } } }],
    code: 'BAD_EXPRESSION',
    message: /syntax error/,
  },
  // sluice's own columns sit next to the source's where a map is applied (_sluice_seq, _sluice_side): out of reach.
  {
    what: 'an expression naming a column sluice uses internally',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', s: { expr: '_sluice_seq' } } }],
    code: 'BAD_EXPRESSION',
    message: /column s .*no such column: _sluice_seq/,
  },
  {
    what: 'a filter naming a column sluice uses internally',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id' }, filter: '_sluice_side = 1' }],
    code: 'BAD_EXPRESSION',
    message: /filter .*no such column: _sluice_side/,
  },
  {
    what: "a target column with sluice's prefix",
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', _Sluice_seq: 'qty' } }],
    code: 'BAD_DEFINITION',
    message: /columns\._Sluice_seq: .*reserved/,
  },
  {
    what: 'two target columns that differ only in case',
    defs: [{ name: 'x', source: 'items', kind: 'map', columns: { id: 'id', n: 'name', N: 'qty' } }],
    code: 'DUPLICATE_COLUMN',
    message: /target column N appears twice/,
  },
  // Collisions between projections of one target.
  {
    what: 'two projections writing one target table',
    defs: [
      { name: 'a', source: 'items', kind: 'mirror', target: 'shared' },
      { name: 'b', source: 'tags', kind: 'mirror', target: 'Shared' },
    ],
    code: 'TARGET_COLLISION',
    message: /Projections a and b both write target table Shared/,
  },
  {
    what: "a target name that is another projection's FTS5 content table",
    defs: [
      { name: 'search', source: 'items', kind: 'fts5', columns: ['name'] },
      { name: 'copy', source: 'items', kind: 'mirror', target: 'search_src' },
    ],
    code: 'TARGET_COLLISION',
    message: /search and copy both write target table search_src/,
  },
  {
    what: 'two projections with one name',
    defs: [
      { name: 'items', source: 'items', kind: 'mirror' },
      { name: 'ITEMS', source: 'tags', kind: 'mirror' },
    ],
    code: 'DUPLICATE_PROJECTION',
    message: /Projections items and ITEMS have one name but for case, and projection names compare without case .*sluice drop TARGET items/,
  },
  {
    what: 'two projections with the very same name',
    defs: [
      { name: 'items', source: 'items', kind: 'mirror' },
      { name: 'items', source: 'tags', kind: 'mirror', target: 'tags_copy' },
    ],
    code: 'DUPLICATE_PROJECTION',
    message: /Two projections are named items\./,
  },
];

function sourceImage(db: ReturnType<typeof openDatabase>): unknown {
  return { hw: highWater(db), schema: db.prepare('SELECT type, name, sql FROM main.sqlite_schema ORDER BY name').all() };
}

async function rejection(source: string, target: string, defs: readonly unknown[]): Promise<InvalidInputError> {
  let thrown: unknown;
  try {
    const s = await Syncer.open(source, target, { projections: defs as never });
    s.close();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(InvalidInputError);
  return thrown as InvalidInputError;
}

describe('a bad projection definition is refused before anything is written', () => {
  // One source and one existing target for every case: nothing may change
  // either, so a write by one case would also show in the cases after it.
  const shared = { dir: '', source: '', target: '', image: undefined as unknown, before: {} as ReturnType<typeof dumpFile> };
  beforeAll(async () => {
    shared.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-test-'));
    shared.source = path.join(shared.dir, 'source.db');
    shared.target = path.join(shared.dir, 'target.db');
    const db = openDatabase(shared.source, { create: true });
    db.exec(SCHEMA);
    db.exec(SEED);
    enable(db, ['items', 'tags']);
    db.exec('UPDATE items SET qty = 9 WHERE id = 1');
    shared.image = sourceImage(db);
    db.close();
    await sync(shared.source, shared.target, { projections: [{ name: 'kept', source: 'items', kind: 'mirror', target: 'kept_items' }] });
    shared.before = dumpFile(shared.target);
  });
  afterAll(() => fs.rmSync(shared.dir, { recursive: true, force: true }));

  test.for(CASES)('$what: $code', async (c, { tmp }) => {
    // Into a new target: the error, and no file at all.
    const fresh = path.join(tmp, 'fresh.db');
    const e = await rejection(shared.source, fresh, c.defs);
    expect(e.code).toBe(c.code);
    expect(e.message).toMatch(c.message);
    for (const suffix of ['', '-wal', '-shm']) expect(fs.existsSync(`${fresh}${suffix}`), `fresh.db${suffix}`).toBe(false);

    // Into a target that already holds a projection: the same error, the target unchanged.
    expect((await rejection(shared.source, shared.target, c.defs)).code).toBe(c.code);
    expect(dumpFile(shared.target)).toEqual(shared.before);
    const db = openDatabase(shared.source);
    try {
      expect(sourceImage(db)).toEqual(shared.image);
    } finally {
      db.close();
    }
  });

  test("deterministic date expressions, a guarded one and one that raises only on some values pass the probe's sample rows", async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    const columns = {
      id: 'id',
      d: { expr: "CASE WHEN lower(name) = 'now' THEN NULL ELSE date(name, '+1 day') END" },
      u: { expr: "datetime(qty, 'unixepoch')" },
      p: { expr: 'date(name)' },
      j: { expr: 'CASE WHEN json_valid(name) THEN json(name) END' },
    };
    await sync(src.file, target, { projections: [{ name: 'x', source: 'items', kind: 'map', columns }] });
    const db = openDatabase(target);
    try {
      expect((db.prepare('SELECT count(*) AS n FROM x').get() as { n: number }).n).toBeGreaterThan(0);
    } finally {
      db.close();
    }
  });

  test("a target name taken by a projection already stored in the target is a TARGET_COLLISION, and the stored projection's rows stay", async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    await sync(src.file, target, { projections: [{ name: 'items', source: 'items', kind: 'mirror' }] });
    const before = dumpFile(target);
    const e = await rejection(src.file, target, [{ name: 'tag_copy', source: 'tags', kind: 'mirror', target: 'items' }]);
    expect(e.code).toBe('TARGET_COLLISION');
    expect(e.message).toMatch(/(items and tag_copy|tag_copy and items) both write target table items/);
    expect(dumpFile(target)).toEqual(before);
  });

  test('a target table that sluice did not make is never overwritten: TARGET_TABLE_EXISTS, and the user table keeps its rows', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const { db: user, file: target } = makeDb('target.db', "CREATE TABLE Items (mine TEXT); INSERT INTO Items VALUES ('keep me')");
    user.close();
    // The failing projection is reported (other projections of the run would go on), never applied.
    const report = await sync(src.file, target, { projections: [{ name: 'items', source: 'items', kind: 'mirror' }] });
    expect(report.projections[0]?.error?.code).toBe('TARGET_TABLE_EXISTS');
    expect(report.projections[0]?.error?.message).toMatch(/target table items already exists .* sluice did not make it/);
    const after = dumpFile(target);
    expect(after.Items).toEqual([[`text:${Buffer.from('keep me').toString('hex').toUpperCase()}`]]);
    // Nothing of it was built; its row says so, with the failure, so health shows it (state building, no cursor).
    const t = openDatabase(target, { readonly: true });
    try {
      expect(t.prepare('SELECT name, state, cursor, last_error_code FROM _sluice_projections').all()).toEqual([
        { name: 'items', state: 'building', cursor: null, last_error_code: 'TARGET_TABLE_EXISTS' },
      ]);
    } finally {
      t.close();
    }
  });

  test('the CLI exits 1 with the code and the reason on stderr, and creates no target', ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    const files = {
      'zod.json': { name: 'x', source: 'items', kind: 'mapp' },
      'random.json': { name: 'x', source: 'items', kind: 'map', columns: { id: 'id', r: { expr: 'abs(random())' } } },
    };
    for (const [file, def] of Object.entries(files)) fs.writeFileSync(path.join(tmp, file), JSON.stringify(def));
    const zod = cli(['sync', src.file, target, '--projection', path.join(tmp, 'zod.json')]);
    expect(zod.status).toBe(1);
    expect(zod.stderr).toMatch(/^sluice: BAD_DEFINITION: Invalid projection x \(.*zod\.json\): kind: /);
    const random = cli(['sync', src.file, target, '--projection', path.join(tmp, 'random.json'), '--json']);
    expect(random.status).toBe(1);
    expect(JSON.parse(random.stdout)).toEqual({
      error: { code: 'BAD_EXPRESSION', message: expect.stringMatching(/column r \(abs\(random\(\)\)\) is not usable: non-deterministic/) },
    });
    expect(fs.existsSync(target)).toBe(false);
  });

  test("a folder given as --projection (a folder of definitions) is DEFINITION_NOT_FOUND naming the folder and the files in it to pass, not Node's module-resolution error; no target is made", ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    const folder = path.join(tmp, 'projections');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'items.json'), JSON.stringify({ name: 'items', source: 'items', kind: 'mirror' }));
    fs.writeFileSync(path.join(folder, 'tags.json'), JSON.stringify({ name: 'tags', source: 'tags', kind: 'mirror' }));
    fs.writeFileSync(path.join(folder, 'README.md'), 'notes');
    const r = cli(['sync', src.file, target, '--projection', folder]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^sluice: DEFINITION_NOT_FOUND: [^\n]+\n$/);
    expect(r.stderr).toContain(`Projection file ${folder} is a folder`);
    expect(r.stderr).toContain(`--projection ${path.join(folder, 'items.json')} --projection ${path.join(folder, 'tags.json')}`);
    expect(r.stderr).not.toMatch(/Directory import|chunk-|README/);
    expect(fs.existsSync(target)).toBe(false);
  });

  test('import checks expressions as sync does: one naming a column sluice uses internally is refused, and nothing is imported', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const file = path.join(tmp, 'items.jsonl');
    expect(cli(['export', src.file, '--out', file]).status).toBe(0);
    const target = path.join(tmp, 'imported.db');
    for (const [what, def] of [
      ['a column', { name: 'x', source: 'items', kind: 'map', columns: { id: 'id', s: { expr: '_sluice_side' } } }],
      ['the filter', { name: 'x', source: 'items', kind: 'map', columns: { id: 'id' }, filter: '_sluice_seq > 0' }],
      ['random()', { name: 'x', source: 'items', kind: 'map', columns: { id: 'id', r: { expr: 'random()' } } }],
    ] as const) {
      const err = await importFile(target, file, { projections: [def] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(InvalidInputError);
      expect((err as InvalidInputError).code, what).toBe('BAD_EXPRESSION');
      expect(fs.existsSync(target) ? (dumpFile(target)._sluice_projections ?? []) : [], what).toEqual([]);
    }
  });

  test('an fts5 over a column FTS5 or its key table reserves (rowid, rank, _k0 with external content) is refused before any table is made; contentless may index _k0', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb(
      'odd.db',
      'CREATE TABLE notes (id INTEGER PRIMARY KEY, "rowid" TEXT, "Rank" TEXT, "_k0" TEXT); INSERT INTO notes VALUES (1, \'a\', \'b\', \'c\')',
    );
    enable(db, ['notes']);
    const target = path.join(tmp, 'target.db');
    for (const column of ['rowid', 'Rank', '_k0']) {
      const err = await Syncer.open(file, target, { projections: [{ name: 'f', source: 'notes', kind: 'fts5', columns: [column] }] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, column).toBeInstanceOf(InvalidInputError);
      expect((err as InvalidInputError).code).toBe('RESERVED_COLUMN');
      expect((err as Error).message).toMatch(
        new RegExp(`Projection f: an fts5 index cannot have a column named ${column} .*Leave ${column} out`),
      );
      expect(fs.existsSync(target), column).toBe(false);
    }
    const bare = await sync(file, target, {
      projections: [{ name: 'f', source: 'notes', kind: 'fts5', columns: ['_k0'], content: 'none' }],
    });
    expect(bare.projections[0]).toMatchObject({ state: 'active', snapshotRows: 1 });
  });
});
