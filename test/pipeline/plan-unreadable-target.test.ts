// plan for a source not captured yet names a declared target it cannot read and the fix and leaves it as it is
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { describe, expect, leaveHotJournal, runCli, runSqliteCli, test } from '../support/fixtures.ts';

/*
 * For a source not captured yet, plan reads a declared target that exists
 * (a user's own database) to predict which builds sync refuses. It attached
 * the target by hand and failed with SQLite's bare "SQLITE_READONLY_ROLLBACK:
 * attempt to write a readonly database" on one left with a hot journal, and
 * "SQLITE_NOTADB: file is not a database" on a file that is not SQLite,
 * naming neither the file nor the fix. It says what explain, verify and sync
 * say (the rule of every session that attaches a target), and writes nothing.
 */

const SCHEMA = `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'apple pie');`;

const YML = `sources:
  - path: app.db
    capture: [items]
    targets:
      - path: cache.db
        projections: ["*"]
`;

/** The declared target's files, by content. */
function targetFiles(dir: string): Record<string, string> {
  return Object.fromEntries(
    fs
      .readdirSync(dir)
      .filter((f) => f.startsWith('cache.db'))
      .sort()
      .map((f) => [
        f,
        createHash('sha256')
          .update(fs.readFileSync(path.join(dir, f)))
          .digest('hex'),
      ]),
  );
}

describe('plan for a source not captured yet, with a declared target it cannot read', () => {
  test('a target left with a hot journal: DB_OPEN_FAILED naming the -journal and the fix, no file changed', ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA).db.close();
    fs.writeFileSync(path.join(tmp, 'sluice.yml'), YML);
    const tgt = path.join(tmp, 'cache.db');
    runSqliteCli(tgt, 'CREATE TABLE mine (x);');
    // A program writing it killed in the middle of a transaction that had spilled to the file.
    leaveHotJournal(tgt);
    const before = targetFiles(tmp);
    expect(Object.keys(before)).toEqual(['cache.db', 'cache.db-journal']);
    const r = runCli(['plan'], { cwd: tmp });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /^sluice: DB_OPEN_FAILED: Cannot read target .*cache\.db: .*cache\.db-journal is a hot journal.*rolls it back/,
    );
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(targetFiles(tmp), 'plan changed a file of the target').toEqual(before);
  });

  test('a target that is not a SQLite file: NOT_A_DATABASE naming it, the file as it was', ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA).db.close();
    fs.writeFileSync(path.join(tmp, 'sluice.yml'), YML);
    fs.writeFileSync(path.join(tmp, 'cache.db'), `notes, not a database ${'.'.repeat(100)}\n`);
    const before = targetFiles(tmp);
    const r = runCli(['plan'], { cwd: tmp });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^sluice: NOT_A_DATABASE: Target .*cache\.db is not a SQLite database/);
    expect(targetFiles(tmp)).toEqual(before);
  });
});
