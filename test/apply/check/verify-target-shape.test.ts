// a projection's table remade by hand (a mirror without its key, an fts5 index with other options or as a plain table): verify and health both say TARGET_TABLE_CHANGED naming what differs and the repair; nothing sluice builds is flagged
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir } from '../../cli/support/cli.ts';

/*
 * verify checked only that a projection's tables exist: a mirror made again
 * by hand without its PRIMARY KEY, holding a row twice, was "ok" (its rows
 * were compared by a join on the key, which both copies matched), exit 0,
 * while health said TARGET_TABLE_CHANGED. And nothing read an fts5 index's
 * own declaration: one made again with a column UNINDEXED, another
 * tokenizer, detail=none or a prefix index (rebuilt from its content table,
 * so FTS5's integrity-check agrees) answered searches unlike the index the
 * definition makes, and both verify and health exited 0. Now verify checks
 * the shape of each projection's tables by health's rule, and that rule
 * compares an fts5 index's declaration with the one its definition makes.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

/** A source with `schema`, captured (`tables`), synced into a new target with `projections` (definition objects). */
async function synced(schema: string, tables: readonly string[], projections: readonly object[] = [], tgtName = 'tgt.db') {
  const src = at('src.db');
  const tgt = at(tgtName);
  if (!fs.existsSync(src)) {
    runSqliteCli(src, schema);
    const e = await runCliAsync(['enable', src, ...tables]);
    expect(e.status, e.stdout + e.stderr).toBe(0);
  }
  const flags = projections.flatMap((p, i) => {
    const f = at(`${tgtName}.p${i}.json`);
    fs.writeFileSync(f, JSON.stringify(p));
    return ['--projection', f];
  });
  const s = await runCliAsync(['sync', src, tgt, ...flags]);
  expect(s.status, s.stdout + s.stderr).toBe(0);
  return { src, tgt };
}

/** verify and health of `tgt` both exit 3, each saying TARGET_TABLE_CHANGED for `name`, `what`, and the reinit. */
async function bothRefuse(src: string, tgt: string, name: string, what: RegExp): Promise<void> {
  const v = await runCliAsync(['verify', src, tgt]);
  const vout = v.stdout + v.stderr;
  expect(v.status, vout).toBe(3);
  expect(vout).toContain(`${name}: NOT VERIFIED TARGET_TABLE_CHANGED`);
  expect(vout).toMatch(what);
  expect(vout).toContain(`sluice reinit ${src} ${tgt} ${name}`);
  expect(vout).not.toMatch(/SQLITE_/);
  const h = await runCliAsync(['health', tgt]);
  const hout = h.stdout + h.stderr;
  expect(h.status, hout).toBe(3);
  expect(hout).toContain('TARGET_TABLE_CHANGED');
  expect(hout).toMatch(what);
  expect(hout).toContain(`sluice reinit ${src} ${tgt} ${name}`);
}

/** verify and health of `tgt` both exit 0. */
async function bothGreen(src: string, tgt: string): Promise<void> {
  const v = await runCliAsync(['verify', src, tgt]);
  expect(v.status, v.stdout + v.stderr).toBe(0);
  const h = await runCliAsync(['health', tgt]);
  expect(h.status, h.stdout + h.stderr).toBe(0);
}

const DOC = `CREATE TABLE doc(id INTEGER PRIMARY KEY, title TEXT, body TEXT);
  INSERT INTO doc VALUES (1, 'crash on start', 'the app crashes'), (2, 'slow search', 'search is slow');`;
const FE = { name: 'fe', source: 'doc', kind: 'fts5', columns: ['title', 'body'], content: 'external' };

describe('verify checks the shape of a projection table as health does', () => {
  test('a mirror made again without its PRIMARY KEY, holding a row twice, is not ok', async () => {
    const { src, tgt } = await synced("CREATE TABLE u(k TEXT PRIMARY KEY, v); INSERT INTO u VALUES ('a', '1'), ('b', '2');", ['u']);
    runSqliteCli(
      tgt,
      `CREATE TABLE u2(k TEXT, v); INSERT INTO u2 SELECT * FROM u; INSERT INTO u2 SELECT * FROM u WHERE k = 'a';
       DROP TABLE u; ALTER TABLE u2 RENAME TO u;`,
    );
    await bothRefuse(src, tgt, 'u', /table u of projection u has no PRIMARY KEY or UNIQUE index on its key \(k\)/);
    const r = await runCliAsync(['reinit', src, tgt, 'u']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    await bothGreen(src, tgt);
  });
});

describe("an fts5 index's own declaration", () => {
  const remade: readonly [string, string, RegExp][] = [
    ['a column UNINDEXED', "fts5(title, body UNINDEXED, content='fe_src', content_rowid='rowid')", /column body UNINDEXED/],
    ['another tokenizer', "fts5(title, body, content='fe_src', content_rowid='rowid', tokenize='porter')", /tokenize='porter'/],
    ['the trigram tokenizer', "fts5(title, body, content='fe_src', content_rowid='rowid', tokenize='trigram')", /tokenize='trigram'/],
    ['detail=none', "fts5(title, body, content='fe_src', content_rowid='rowid', detail=none)", /detail=none/],
    ['a prefix index', "fts5(title, body, content='fe_src', content_rowid='rowid', prefix='2 3')", /prefix='2 3'/],
    ['its columns in another order', "fts5(body, title, content='fe_src', content_rowid='rowid')", /columns body, title/],
    ['content kept by FTS5 itself', 'fts5(title, body)', /no content=/],
  ];
  test.each(remade)('made again by hand with %s: verify and health exit 3 naming what differs', async (_what, args, differs) => {
    const { src, tgt } = await synced(DOC, ['doc'], [FE]);
    runSqliteCli(tgt, `DROP TABLE fe; CREATE VIRTUAL TABLE fe USING ${args}; INSERT INTO fe(fe) VALUES ('rebuild');`);
    await bothRefuse(
      src,
      tgt,
      'fe',
      new RegExp(`table fe of projection fe is declared otherwise than the FTS5 index its definition makes \\(.*${differs.source}`),
    );
    const r = await runCliAsync(['reinit', src, tgt, 'fe']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    await bothGreen(src, tgt);
  });

  test('made a plain table by hand: verify and health exit 3', async () => {
    const { src, tgt } = await synced(DOC, ['doc'], [FE]);
    runSqliteCli(tgt, 'DROP TABLE fe; CREATE TABLE fe(title, body, fe, rank);');
    await bothRefuse(src, tgt, 'fe', /table fe of projection fe is a plain table, where its definition makes an FTS5 index/);
  });

  test('a contentless index made again with content: verify and health exit 3', async () => {
    const { src, tgt } = await synced(DOC, ['doc'], [{ ...FE, content: 'none', tokenize: 'porter' }]);
    runSqliteCli(tgt, "DROP TABLE fe; CREATE VIRTUAL TABLE fe USING fts5(title, body, tokenize='porter');");
    await bothRefuse(
      src,
      tgt,
      'fe',
      /table fe of projection fe is declared otherwise than the FTS5 index its definition makes \(no content=, where its definition has content=''/,
    );
  });
});

describe('nothing sluice builds is flagged', () => {
  test('fts5 indexes of every option, mirrors of WITHOUT ROWID and composite-key tables, and maps: verify and health exit 0, also after a reinit', async () => {
    const schema = `
      CREATE TABLE doc(id INTEGER PRIMARY KEY, title TEXT, "Body Text" TEXT COLLATE NOCASE);
      INSERT INTO doc VALUES (1, 'crash on start', 'the app crashes'), (2, 'slow search', 'search is slow');
      CREATE TABLE issue(repo TEXT, num INTEGER, title TEXT, PRIMARY KEY (repo, num)) WITHOUT ROWID;
      INSERT INTO issue VALUES ('x', 1, 'one'), ('x', 2, 'two'), ('y', 1, 'uno');
      CREATE TABLE pair(a INTEGER, b TEXT COLLATE NOCASE, v, PRIMARY KEY (a, b));
      INSERT INTO pair VALUES (1, 'p', 10), (1, 'q', 11);`;
    const fts = (name: string, extra: object) => ({ name, source: 'doc', kind: 'fts5', columns: ['title', 'Body Text'], ...extra });
    const projections = [
      fts('f_default', {}),
      fts('f_porter', { tokenize: 'porter' }),
      fts('f_porter_uni', { tokenize: 'porter unicode61 remove_diacritics 2' }),
      fts('f_trigram', { tokenize: 'trigram' }),
      fts('f_tokenchars', { tokenize: "unicode61 tokenchars '_'" }),
      fts('f_porter_ascii', { tokenize: 'porter ascii' }),
      fts('f_ascii', { tokenize: 'ascii', content: 'none' }),
      fts('f_none', { content: 'none' }),
      fts('f_target', { target: 'Search_Docs', tokenize: 'porter' }),
      { name: 'f_issue', source: 'issue', kind: 'fts5', columns: ['title'], tokenize: 'trigram' },
      { name: 'f_pair', source: 'pair', kind: 'fts5', columns: ['v'], content: 'none' },
      {
        name: 'm_issue',
        source: 'issue',
        kind: 'map',
        columns: { repo: 'repo', num: { from: 'num' }, t: { expr: 'upper(title)', type: 'TEXT', collate: 'NOCASE' } },
        filter: "repo = 'x'",
      },
      { name: 'issue', source: 'issue', kind: 'mirror' },
      { name: 'pair', source: 'pair', kind: 'mirror' },
      { name: 'doc', source: 'doc', kind: 'mirror' },
      { name: 'm_pair', source: 'pair', kind: 'map', columns: { a: 'a', b: 'b', v: 'v' } },
    ];
    const { src, tgt } = await synced(schema, ['doc', 'issue', 'pair'], projections);
    await bothGreen(src, tgt);
    runSqliteCli(
      src,
      "INSERT INTO doc VALUES (3, 'new', 'more'); UPDATE issue SET title = 'uno!' WHERE repo = 'y'; DELETE FROM pair WHERE b = 'q';",
    );
    const s = await runCliAsync(['sync', src, tgt]);
    expect(s.status, s.stdout + s.stderr).toBe(0);
    await bothGreen(src, tgt);
    for (const name of ['f_porter_uni', 'f_target', 'f_none', 'f_issue', 'issue', 'pair']) {
      const r = await runCliAsync(['reinit', src, tgt, name]);
      expect(r.status, r.stdout + r.stderr).toBe(0);
    }
    await bothGreen(src, tgt);
  });
});
