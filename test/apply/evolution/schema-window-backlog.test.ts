// a projection whose backlog does not apply across a schema window is rebuilt not suspended as diverged
import path from 'node:path';
import { test, expect, runSqliteCli } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { pythonExec } from '../../support/journal.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';

/*
 * Review round 2. docs/journal.md, "DDL that leaves no trace": after DDL
 * sluice did not make, sync applies a mirror/map/fts5 backlog in one batch
 * and compares; "Different: it is rebuilt from a snapshot (rebuilt:
 * SCHEMA_WINDOW)". One of the windows the section names is a user AFTER
 * trigger made and dropped around a write (here a `touch`, by the sqlite3
 * shell). It is newer than sluice's triggers, so it fires first and its
 * nested update is journaled before the outer write. The backlog then does
 * not apply: the outer update's before-image is not what the target holds
 * (or the nested update's key is not there yet). The step returns that
 * apply failure before the comparison is reached, so the projection is
 * suspended as TARGET_DIVERGED, which tells the user the target was written
 * by someone else and needs --reinit, instead of being rebuilt for the
 * window the cursor check already saw.
 */

const TOUCH_UPDATE =
  "CREATE TRIGGER touch AFTER UPDATE OF body ON t WHEN NEW.body NOT LIKE '%edited' BEGIN UPDATE t SET body = NEW.body || ' edited' WHERE id = NEW.id; END; UPDATE t SET body = 'second draft' WHERE id = 1; DROP TRIGGER touch;";
const TOUCH_INSERT =
  "CREATE TRIGGER touch AFTER INSERT ON t BEGIN UPDATE t SET body = NEW.body || ' edited' WHERE id = NEW.id; END; INSERT INTO t VALUES (3, 'third'); DROP TRIGGER touch;";

const DEFS: Record<string, ProjectionDefinitionInput> = {
  mirror: { name: 'p', source: 't', kind: 'mirror' },
  map: {
    name: 'p',
    source: 't',
    kind: 'map',
    columns: { id: 'id', body: 'body', n: { expr: 'length(body)', type: 'INTEGER' } },
    filter: 'id < 100',
  } as ProjectionDefinitionInput,
  fts5: { name: 'p', source: 't', kind: 'fts5', columns: ['body'], content: 'external' } as ProjectionDefinitionInput,
};

for (const [kind, def] of Object.entries(DEFS)) {
  for (const [what, window] of [
    ['update', TOUCH_UPDATE],
    ['insert', TOUCH_INSERT],
  ] as const) {
    test(`a ${kind} projection synced across a window in which a transient touch trigger ran on ${what} is rebuilt and active`, async ({
      makeDb,
      tmp,
    }) => {
      const { db, file } = makeDb('source.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
      enable(db, ['t']);
      pythonExec(file, "INSERT INTO t VALUES (1, 'first draft'), (2, 'other words');");
      const target = path.join(tmp, 'target.db');
      await sync(file, target, { projections: [def] });
      runSqliteCli(file, window);
      const r = await sync(file, target);
      const p = r.projections[0];
      const tg = openDatabase(target);
      const table = kind === 'fts5' ? 'p_src' : kind === 'mirror' ? 't' : 'p';
      const bodies = tg.prepare(`SELECT body FROM main.${table} ORDER BY body`).pluck().all();
      tg.close();
      const source = db.prepare('SELECT body FROM t ORDER BY body').pluck().all();
      expect({ state: p?.state, reason: p?.state === 'suspended' ? p.reason : undefined, bodies }).toEqual({
        state: 'active',
        reason: undefined,
        bodies: source,
      });
    });
  }
}
