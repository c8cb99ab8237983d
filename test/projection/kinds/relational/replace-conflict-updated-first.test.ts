// a replace whose conflicting row is updated first by a user before trigger or a foreign key action never leaves a mirror stale
import path from 'node:path';
import { test, expect, runSqliteCli } from '../../../support/fixtures.ts';
import { enable } from '../../../../src/capture/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { pythonExec } from '../../../support/journal.ts';
import { tableCells } from '../../../apply/support/target.ts';

/*
 * The REPLACE guard notes a conflicting row, and its flush journals the
 * delete only if no event since the note touched the row's key. That test
 * also drops a row that was merely UPDATED in place between the note and
 * the delete, and then nothing journals the delete (recursive_triggers off):
 * - a user BEFORE INSERT trigger older than sluice's (made before enable,
 *   the usual order) that updates the row the insert conflicts with;
 * - ON DELETE SET NULL on a self-reference: the REPLACE deletes the parent
 *   (key conflict), the action updates the child, then the REPLACE deletes
 *   the child (UNIQUE conflict).
 * The mirror stays active with a row the source no longer has.
 */

const CASES: { name: string; schema: string; seed: string; write: string; pragmas?: string[] }[] = [
  {
    name: 'a user BEFORE INSERT trigger made before enable updates the row the REPLACE then deletes',
    schema:
      'CREATE TABLE t (id INTEGER PRIMARY KEY, u UNIQUE, n INT NOT NULL DEFAULT 0); CREATE TRIGGER bump_dupes BEFORE INSERT ON t BEGIN UPDATE t SET n = n + 1 WHERE u = NEW.u; END',
    seed: "INSERT INTO t (id, u) VALUES (1, 'a'), (2, 'b');",
    write: "INSERT OR REPLACE INTO t (id, u) VALUES (3, 'a');",
  },
  {
    name: 'ON DELETE SET NULL updates a child the same REPLACE then deletes through a UNIQUE column',
    schema: 'CREATE TABLE t (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES t (id) ON DELETE SET NULL, u UNIQUE)',
    seed: "INSERT INTO t VALUES (1, NULL, 'a'), (2, 1, 'b');",
    write: "INSERT OR REPLACE INTO t VALUES (1, NULL, 'b');",
    pragmas: ['PRAGMA foreign_keys = ON'],
  },
];

for (const c of CASES) {
  for (const writer of ['python', 'sqlite3 shell'] as const) {
    test(`${c.name} (${writer}): the mirror is active only with the source's rows`, async ({ makeDb, tmp }) => {
      const { db, file } = makeDb('source.db', c.schema);
      enable(db, ['t']);
      pythonExec(file, c.seed, c.pragmas);
      const target = path.join(tmp, 'target.db');
      await sync(file, target, { projections: [{ name: 't', source: 't', kind: 'mirror' }] });
      if (writer === 'python') pythonExec(file, c.write, c.pragmas);
      else runSqliteCli(file, `${(c.pragmas ?? []).join('; ')}; ${c.write}`);
      const r = await sync(file, target);
      const t = openDatabase(target);
      const rows = tableCells(t, 'main', 't');
      t.close();
      const source = tableCells(db, 'main', 't');
      expect(source).toHaveLength(2 - (c.pragmas === undefined ? 0 : 1));
      expect({ state: r.projections[0]?.state, rows }).toEqual({ state: 'active', rows: source });
    });
  }
}
