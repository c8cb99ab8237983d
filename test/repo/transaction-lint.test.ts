// a transaction statement outside the transaction module fails the lint
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, test, expect } from 'vitest';

/* npm test runs eslint with eslint.config.js; these lint one file at a path under src/ (never written). */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const eslint = new ESLint({ cwd: root });

async function lint(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

const HEAD = "import type { Db } from '../sqlite/index.ts';\nexport type D = Db;\n";

describe('transactions go through src/sqlite/transaction.ts', () => {
  test('BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT and RELEASE run as SQL elsewhere fail, naming the module and docs/architecture.md', async () => {
    const cases = [
      "export const f = (db: Db) => db.exec('BEGIN');\n",
      "export const f = (db: Db) => db.exec('BEGIN IMMEDIATE');\n",
      'export const f = (db: Db) => db.prepare("COMMIT").run();\n',
      "export const f = (db: Db) => db.exec('END');\n",
      "export const f = (db: Db) => { if (db.inTransaction) db.exec('ROLLBACK'); };\n",
      'export const f = (db: Db, n: number) => db.exec(`SAVEPOINT sp${n}`);\n',
      'export const f = (db: Db, n: string) => db.exec(`ROLLBACK TO ${n}`);\n',
      "export const f = (db: Db) => db.exec('release sp1;');\n",
      'export const SQL = `\n  BEGIN DEFERRED`;\n',
    ];
    for (const code of cases) {
      const errors = await lint('src/apply/hand-written.ts', HEAD + code);
      expect(errors, code).toEqual([expect.stringContaining('Transactions go through src/sqlite/transaction.ts')]);
      expect(errors[0], code).toContain('docs/architecture.md');
    }
  });

  test("better-sqlite3's own db.transaction() fails too, in every layer", async () => {
    for (const file of ['src/capture/own.ts', 'src/cli/own.ts', 'src/export/own.ts']) {
      const errors = await lint(
        file,
        'export const f = (db: { transaction: (fn: () => void) => () => void }) => db.transaction(() => {})();\n',
      );
      expect(errors, file).toEqual([expect.stringContaining('Transactions go through src/sqlite/transaction.ts')]);
    }
  });

  test('the transaction module itself, trigger bodies, messages that name the statements and a user statement in a variable pass', async () => {
    expect(
      await lint(
        'src/sqlite/transaction.ts',
        "import type { Db } from './db.ts';\nexport const f = (db: Db) => db.exec('BEGIN IMMEDIATE');\n",
      ),
    ).toEqual([]);
    const passing = [
      'export const f = (db: Db, t: string) => db.exec(`CREATE TRIGGER ${t}_ai AFTER INSERT ON ${t} BEGIN SELECT 1; END`);\n',
      "export const m = 'A handler ran BEGIN, COMMIT or ROLLBACK: refused.';\n",
      'export const f = (db: Db, sql: string) => db.exec(sql);\n',
      "export const started: 'snapshot' | 'end' = 'end';\n",
    ];
    for (const code of passing) expect(await lint('src/apply/not-control.ts', HEAD + code), code).toEqual([]);
  });

  test('the transaction module still may not import upward', async () => {
    expect(
      await lint('src/sqlite/transaction.ts', "import { readState } from '../capture/index.ts';\nexport const f = readState;\n"),
    ).toEqual([expect.stringMatching(/sqlite\/ may not import capture\//)]);
  });
});
