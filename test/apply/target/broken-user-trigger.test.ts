// A user's trigger on a projection's table that no longer compiles: sync's failure names the trigger, its table and the target file, and the fix
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { cli, makeSource } from '../support/target.ts';

/*
 * SQLite makes a trigger without reading its body: an audit trigger whose
 * log table was dropped since makes every write to its table fail. A sync
 * of the mirror then failed with SQLite's bare "no such table: tgt.audit"
 * (exit 1, and the same in health): neither the trigger nor the target file
 * named, and "tgt" is no schema of the user's. Now the failure says which
 * trigger of which table in which file no longer fits, why, and the fix.
 */

describe('sync', () => {
  test("a trigger on a mirror's table whose body names a dropped table: the failure names the trigger, the table, the file and the fix", ({
    tmp,
    makeDb,
  }) => {
    const src = makeSource(makeDb, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');", ['t']);
    src.db.close();
    const tgt = path.join(tmp, 'cache.db');
    expect(cli(['sync', src.file, tgt]).status).toBe(0);
    runSqliteCli(
      tgt,
      'CREATE TABLE audit (x); CREATE TRIGGER audit_t AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (NEW.id); END; DROP TABLE audit;',
    );
    runSqliteCli(src.file, "INSERT INTO t VALUES (2, 'b');");
    const r = cli(['sync', src.file, tgt]);
    expect(r.status).toBe(1);
    const said = r.stdout + r.stderr;
    for (const part of ['TARGET_TRIGGER_BROKEN', 'trigger audit_t', 'table t', tgt, 'no such table: audit', 'DROP TRIGGER "audit_t"'])
      expect(said, `sync's failure names ${part}`).toContain(part);
    expect(said).not.toContain('tgt.audit');
    const h = cli(['health', tgt]);
    expect(h.status).toBe(3);
    expect(h.stdout).toContain('trigger audit_t');
    // Dropped as said: the next sync applies the row.
    runSqliteCli(tgt, 'DROP TRIGGER audit_t;');
    expect(cli(['sync', src.file, tgt]).status).toBe(0);
    expect(cli(['health', tgt]).status).toBe(0);
  });

  test('the same under import of an export file: TARGET_TRIGGER_BROKEN naming the trigger, its table and the file, in health too', ({
    tmp,
    makeDb,
  }) => {
    const src = makeSource(makeDb, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');", ['t']);
    src.db.close();
    const tgt = path.join(tmp, 'imported.db');
    const file = path.join(tmp, 'stream.jsonl');
    expect(cli(['export', src.file, '--out', file]).status).toBe(0);
    expect(cli(['import', tgt, file]).status).toBe(0);
    runSqliteCli(
      tgt,
      'CREATE TABLE audit (x); CREATE TRIGGER audit_t AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (NEW.id); END; DROP TABLE audit;',
    );
    runSqliteCli(src.file, "INSERT INTO t VALUES (2, 'b');");
    expect(cli(['export', src.file, '--out', file]).status).toBe(0);
    const r = cli(['import', tgt, file]);
    expect(r.status).toBe(1);
    for (const part of ['TARGET_TRIGGER_BROKEN', 'trigger audit_t', 'table t', tgt, 'no such table: audit', 'DROP TRIGGER "audit_t"'])
      expect(r.stderr, `import's error names ${part}`).toContain(part);
    expect(r.stderr).not.toContain('main.audit');
    expect(cli(['health', tgt]).stdout).toContain('TARGET_TRIGGER_BROKEN');
    runSqliteCli(tgt, 'DROP TRIGGER audit_t;');
    expect(cli(['import', tgt, file]).status).toBe(0);
    expect(cli(['health', tgt]).status).toBe(0);
  });
});
