// strip writes a copy without sluice objects and leaves the original untouched
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  sha256,
  write,
  expectOneLineError,
} from '../cli/support/cli.ts';

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  // Journal rows, a consumer, in the WAL and checkpointed: everything strip must remove.
  write(src, "UPDATE issues SET body = 'secret draft' WHERE repo_id = 1; DELETE FROM comments WHERE id < 50");
  const db = openDatabase(src);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
});
afterAll(() => removeDir(dir));

function schemaOf(file: string): { type: string; name: string }[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db
      .prepare("SELECT type, name FROM main.sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name")
      .all() as { type: string; name: string }[];
  } finally {
    db.close();
  }
}

describe('strip', () => {
  test('the copy has no _sluice_ object and the same data; the original is byte-identical', async () => {
    const before = sha256(src);
    const originalSchema = schemaOf(src);
    const data = dumpTables(src);
    expect(originalSchema.some((o) => o.name.startsWith('_sluice_'))).toBe(true);

    const copy = at('shareable.db');
    const r = await runCliAsync(['strip', src, '--out', copy, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const s = parseJson(r, S.stripOutput);

    expect(sha256(src)).toBe(before);
    expect(fs.existsSync(`${src}-wal`) ? fs.statSync(`${src}-wal`).size : 0).toBe(0);

    const copied = schemaOf(copy);
    expect(copied.filter((o) => o.name.toLowerCase().startsWith('_sluice_'))).toEqual([]);
    expect(copied).toEqual(originalSchema.filter((o) => !o.name.startsWith('_sluice_')));
    expect(s.removed.sort()).toEqual(
      originalSchema
        .filter((o) => o.name.startsWith('_sluice_'))
        .map((o) => o.name)
        .sort(),
    );
    expect(dumpTables(copy)).toEqual(data);
    // The dropped journal left no free pages behind (the copy is vacuumed).
    const db = openDatabase(copy, { readonly: true });
    expect(db.pragma('freelist_count', { simple: true })).toBe(0n);
    db.close();
  });

  test('refuses an --out that exists, and leaves that file alone (exit 1)', async () => {
    const existing = at('existing.db');
    fs.writeFileSync(existing, 'precious');
    const before = sha256(src);
    const r = await runCliAsync(['strip', src, '--out', existing]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'OUTPUT_EXISTS');
    expect(r.stderr).toContain(existing);
    expect(fs.readFileSync(existing, 'utf8')).toBe('precious');
    expect(sha256(src)).toBe(before);
  });
});
