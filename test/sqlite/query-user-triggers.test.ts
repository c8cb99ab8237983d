// query runs a users sql with the trigger semantics of the users own app
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, scalar } from '../cli/support/cli.ts';
import { fileState, pythonWrite } from '../cli/support/source-state.ts';

/*
 * An app's own "touch" trigger updates the row it fires for. In the app
 * (Python's sqlite3, the sqlite3 shell: recursive_triggers off, SQLite's
 * default) that is one extra update. `sluice query` must run the user's SQL
 * the same way, not with the recursive_triggers=ON of sluice's own
 * connections, where the trigger fires itself until SQLite gives up.
 */

const APP = `CREATE TABLE t (id INTEGER PRIMARY KEY, x INTEGER, updated_at TEXT);
CREATE TRIGGER t_touch AFTER UPDATE ON t BEGIN UPDATE t SET updated_at = 'touched' WHERE id = NEW.id; END;
INSERT INTO t VALUES (1, 0, 'old'), (2, 0, 'old');`;

let dir: string;
beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

describe("query and the user's own triggers", () => {
  test('an UPDATE on a table with a touch trigger succeeds and the trigger runs once per row, as in the app', async () => {
    const db = path.join(dir, 'plain.db');
    pythonWrite(db, APP);
    const r = await runCliAsync(['query', db, 'UPDATE t SET x = 1', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.queryOutput).changes).toBe(2);
    expect(scalar(db, "SELECT group_concat(id || ':' || x || ':' || updated_at, ' ') FROM t")).toBe('1:1:touched 2:1:touched');
    expect(fileState(db).journalMode).toBe('delete');
  });

  test('on a captured table too, and both updates of each row reach the journal in order', async () => {
    const db = path.join(dir, 'captured.db');
    pythonWrite(db, APP);
    const enabled = await runCliAsync(['enable', db, 't']);
    expect(enabled.status, enabled.stderr).toBe(0);
    const r = await runCliAsync(['query', db, 'UPDATE t SET x = 1 WHERE id = 2']);
    expect(r.status, r.stderr).toBe(0);
    expect(scalar(db, 'SELECT updated_at FROM t WHERE id = 2')).toBe('touched');
    const changes = await runCliAsync(['changes', db]);
    expect(changes.status, changes.stderr).toBe(0);
    const events = changes.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { op?: string; key?: unknown[]; after?: Record<string, unknown> })
      .filter((e) => e.op === 'update');
    expect(events.map((e) => [e.key, e.after])).toEqual([
      [[2], { id: 2, x: 1, updated_at: 'old' }],
      [[2], { id: 2, x: 1, updated_at: 'touched' }],
    ]);
  });
});
