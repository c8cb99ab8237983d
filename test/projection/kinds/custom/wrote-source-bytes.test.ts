// a custom handler that writes the source fails its batch with custom wrote source and both files keep their bytes
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, ROOT, runPython } from '../../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../../src/cli/index.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { loadDefinitions } from '../../../../src/projection/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { runCliAsync, parseJson, sha256 } from '../../../cli/support/cli.ts';

/*
 * In a sync the source is the apply connection's main database, so a
 * handler's raw SQL with an unqualified table name runs on the source: an
 * INSERT into a table sluice does not capture leaves no trace, an UPDATE of
 * a captured one is journaled as a user's write and spreads to every mirror.
 * Every such statement is refused before it runs: the batch fails with
 * CUSTOM_WROTE_SOURCE (exit 1), nothing of it is committed on either side
 * (the target's rows and cursor are as they were), and the source file and
 * its -wal keep every byte. The handler here is a careless one, as a user
 * writes it in a .ts definition file next to their kysely: a note whose text
 * starts with "run: " is SQL it runs as written.
 */

const HANDLER = `import { sql } from 'kysely';
import type { CustomHandler } from 'sluice';

const handler: CustomHandler = {
  version: '1',
  async init(rows, { db }) {
    await db.schema.createTable('seen').ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).execute();
    for (const r of rows) await db.insertInto('seen').values({ id: r.id }).execute();
  },
  async apply(e, { db }) {
    const body = e.after === null ? '' : String(e.after.body);
    if (body.startsWith('run: ')) await sql.raw(body.slice(5)).execute(db);
    if (e.after !== null) await db.insertInto('seen').values({ id: e.after.id }).onConflict((oc) => oc.doNothing()).execute();
  },
};
export default [{ name: 'seen', source: 'notes', kind: 'custom' as const, handler }];
`;

const CASES = {
  'an INSERT into a table sluice does not capture': "INSERT INTO audit VALUES ('by the handler')",
  'an UPDATE of a captured table': "UPDATE notes SET body = 'overwritten' WHERE id = 1",
  'a CREATE TABLE': 'CREATE TABLE made_by_handler (x)',
};

describe('a custom handler whose SQL writes the source', () => {
  for (const [what, statement] of Object.entries(CASES)) {
    test(`${what} fails the batch with CUSTOM_WROTE_SOURCE, commits nothing on either side, and the source file and its -wal keep their bytes`, async ({
      tmp,
      makeDb,
    }) => {
      // The handler's folder has kysely in its node_modules, as a user's project does.
      fs.mkdirSync(path.join(tmp, 'node_modules'));
      fs.symlinkSync(path.join(ROOT, 'node_modules', 'kysely'), path.join(tmp, 'node_modules', 'kysely'), 'dir');
      const defs = path.join(tmp, 'seen.ts');
      fs.writeFileSync(defs, HANDLER);
      // The app keeps its connection open (so no one's close checkpoints the -wal).
      const { db, file } = makeDb(
        'app.db',
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); CREATE TABLE audit (what TEXT); INSERT INTO notes VALUES (1, 'first')",
      );
      enable(db, ['notes']);
      const target = path.join(tmp, 'cache.db');
      expect((await sync(file, target, { projections: await loadDefinitions(defs) })).projections[0]?.error).toBeUndefined();
      runPython(
        'import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute("INSERT INTO notes VALUES (2, ?)", (sys.argv[2],))\nc.commit()\nc.close()',
        [file, `run: ${statement}`],
      );
      const before = { main: sha256(file), wal: sha256(`${file}-wal`) };
      const t = openDatabase(target, { readonly: true });
      const targetState = () => ({
        seen: t.prepare('SELECT id FROM seen ORDER BY id').pluck().all(),
        cursor: t.prepare("SELECT seq, cursor FROM _sluice_projections WHERE name = 'seen'").get(),
      });
      const targetBefore = targetState();

      const r = await runCliAsync(['sync', file, target, '--json']);
      expect(r.status, r.stderr).toBe(1);
      const seen = parseJson(r, S.syncOutput).projections.find((p) => p.name === 'seen');
      expect(seen?.error?.code).toBe('CUSTOM_WROTE_SOURCE');
      expect(seen?.error?.message).toContain('custom projection seen');
      expect({ main: sha256(file), wal: sha256(`${file}-wal`) }).toEqual(before);
      expect(targetState()).toEqual(targetBefore);
      expect(targetBefore.seen).toEqual([1n]);
      t.close();
      expect(db.prepare('SELECT count(*) FROM audit').pluck().get()).toBe(0n);
      expect(db.prepare('SELECT body FROM notes WHERE id = 1').pluck().get()).toBe('first');
      expect(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'made_by_handler'").pluck().get()).toBe(0n);
    });
  }
});
