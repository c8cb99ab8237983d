import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runSqliteCli, runCli } from '../support/fixtures.ts';
import { pythonExec } from '../support/journal.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable, readTables } from '../../src/capture/index.ts';
import { OWN_BTREES, btreePages, findIn, pageImages, textForms } from './support/secret-pages.ts';

/*
 * Columns left out of capture never reach the journal: a secret written by
 * better-sqlite3, Python's sqlite3 and the sqlite3 shell (plain writes,
 * REPLACE through the key and through a UNIQUE index, upserts, UPDATE OR
 * REPLACE) is in no page of sluice's tables (nor any -wal frame of those
 * pages), no `changes` line, no export and no target file. A column
 * excluded after the fact is purged from the retained journal rows.
 */

const SECRET = 'S3CR3T-pw-7f1c9a';
const BLOB = Buffer.from('dead5ec12e7abcdef0123456789abcd5', 'hex');
const API = 'APIKEY-9e2b77';

const SCHEMA = `CREATE TABLE users (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT UNIQUE,
  password_hash TEXT,
  totp_secret BLOB,
  api_key TEXT
)`;

/** The writes of writer `w` (rows b+1..b+4): inserts, updates, REPLACE through the key and through email, upserts, UPDATE OR REPLACE, a delete. */
function writes(w: string, b: number): string {
  const blob = `X'${BLOB.toString('hex')}'`;
  const pw = (n: number) => `'${SECRET}-${w}-${n}'`;
  const key = (n: number) => `'${API}-${w}-${n}'`;
  return `
INSERT INTO users VALUES (${b + 1}, 'n1', 'e${b + 1}', ${pw(1)}, ${blob}, ${key(1)});
INSERT INTO users VALUES (${b + 2}, 'n2', 'e${b + 2}', ${pw(2)}, ${blob}, ${key(2)});
UPDATE users SET password_hash = ${pw(3)}, totp_secret = ${blob} || X'01' WHERE id = ${b + 1};
UPDATE users SET name = 'n1b', password_hash = ${pw(4)} WHERE id = ${b + 1};
INSERT OR REPLACE INTO users VALUES (${b + 3}, 'n3', 'e${b + 2}', ${pw(5)}, ${blob}, ${key(3)});
REPLACE INTO users VALUES (${b + 1}, 'n1c', 'e${b + 1}', ${pw(6)}, ${blob}, ${key(4)});
INSERT INTO users VALUES (${b + 3}, 'n3b', 'e${b + 3}', ${pw(7)}, ${blob}, ${key(5)})
  ON CONFLICT (id) DO UPDATE SET name = excluded.name, password_hash = excluded.password_hash, totp_secret = excluded.totp_secret;
INSERT INTO users VALUES (${b + 4}, 'n4', 'e${b + 2}', ${pw(8)}, ${blob}, ${key(6)})
  ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash;
UPDATE OR REPLACE users SET email = 'e${b + 1}', password_hash = ${pw(9)} WHERE id = ${b + 3};
INSERT INTO users VALUES (${b + 4}, 'n4', 'e${b + 4}', ${pw(10)}, ${blob}, ${key(7)});
INSERT INTO users VALUES (${b + 5}, 'n5', 'e${b + 5}', ${pw(11)}, ${blob}, ${key(8)});
DELETE FROM users WHERE id = ${b + 5};
`;
}

const WRITERS: readonly { name: string; write: (file: string, sql: string) => void }[] = [
  {
    name: 'better-sqlite3',
    write: (file, sql) => {
      const db = openDatabase(file);
      try {
        db.exec(sql);
      } finally {
        db.close();
      }
    },
  },
  { name: 'python', write: (file, sql) => void pythonExec(file, sql) },
  { name: 'shell', write: (file, sql) => void runSqliteCli(file, sql) },
];

const secretBytes = [Buffer.from(SECRET), BLOB];
const apiBytes = [Buffer.from(API)];

/** Where the secret is in each text (an output, a file): none expected. */
function textHits(label: string, text: string, secrets: readonly Buffer[]): string[] {
  return secrets.flatMap((s) =>
    textForms(s)
      .filter((f) => text.includes(f))
      .map((f) => `${label}: ${f}`),
  );
}

function fileHits(file: string, secrets: readonly Buffer[]): string[] {
  const hits: string[] = [];
  for (const f of [file, `${file}-wal`]) {
    if (!fs.existsSync(f)) continue;
    const bytes = fs.readFileSync(f);
    for (const s of secrets) if (bytes.includes(s)) hits.push(`${path.basename(f)}: ${s.toString('latin1')}`);
  }
  return hits;
}

function writeDefinitions(tmp: string): string[] {
  const defs = {
    'names.json': {
      name: 'user_names',
      source: 'users',
      kind: 'map',
      columns: { id: 'id', who: 'name', mail: { expr: "lower(email) || '@'" } },
    },
    'search.json': { name: 'user_search', source: 'users', kind: 'fts5', columns: ['name', 'email'], content: 'external' },
    'mirror.json': { name: 'users', source: 'users', kind: 'mirror' },
  };
  return Object.entries(defs).flatMap(([f, d]) => {
    fs.writeFileSync(path.join(tmp, f), JSON.stringify(d));
    return ['--projection', path.join(tmp, f)];
  });
}

describe('columns left out of capture', () => {
  test('a secret written by three writers is in no journal page, WAL frame, changes line, export or target; excluded later, the journal loses it', ({
    makeDb,
    tmp,
  }) => {
    // Kept open throughout, so that no writer's close checkpoints the WAL away: its frames are read too.
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['users'], { exclude: ['password_hash', 'totp_secret'] });
    for (const [i, w] of WRITERS.entries()) w.write(file, writes(w.name, 10 * i));

    // The writes were journaled (a change of only excluded columns was not).
    const src = openDatabase(file);
    const events = Number(src.prepare('SELECT count(*) FROM _sluice_journal').pluck().get());
    const rows = src.prepare('SELECT id, name, email FROM users ORDER BY id').all();
    src.close();
    expect(events).toBeGreaterThan(20);
    expect(rows.length).toBe(6);

    // The check sees a secret where it is: the users table's own pages hold it, sluice's the captured api_key.
    const userPages = pageImages(file, btreePages(file, "name = 'users'"));
    expect(findIn(userPages, [Buffer.from(SECRET)]).length).toBeGreaterThan(0);
    expect(findIn(userPages, [BLOB]).length).toBeGreaterThan(0);
    const own = btreePages(file, OWN_BTREES);
    const ownImages = pageImages(file, own);
    expect(ownImages.some((i) => i.where.startsWith('wal'))).toBe(true);
    expect(findIn(ownImages, apiBytes).length).toBeGreaterThan(0);
    expect(findIn(ownImages, secretBytes)).toEqual([]);

    // changes, an export, and targets (a mirror, a map and an fts5 index).
    const changes = runCli(['changes', file]);
    expect(changes.status, changes.stderr).toBe(0);
    expect(changes.stdout).toContain(`${API}-shell-8`);
    expect(textHits('changes', changes.stdout, secretBytes)).toEqual([]);
    const out = path.join(tmp, 'export.jsonl');
    const exp = runCli(['export', file, '--out', out]);
    expect(exp.status, exp.stderr).toBe(0);
    const exported = fs.readFileSync(out, 'latin1');
    expect(exported).toContain(API);
    expect(textHits('export', exported, secretBytes)).toEqual([]);
    expect(exported).not.toContain('password_hash');
    const target = path.join(tmp, 'target.db');
    const defs = writeDefinitions(tmp);
    const sync = runCli(['sync', file, target, ...defs]);
    expect(sync.status, sync.stderr).toBe(0);
    // More writes after the snapshot, applied from the journal.
    for (const [i, w] of WRITERS.entries()) w.write(file, writes(w.name, 100 + 10 * i));
    const sync2 = runCli(['sync', file, target]);
    expect(sync2.status, sync2.stderr).toBe(0);
    const t = openDatabase(target, { readonly: true });
    const mirrorColumns = t.prepare("SELECT name FROM pragma_table_info('users')").pluck().all();
    const mirrored = Number(t.prepare('SELECT count(*) FROM users').pluck().get());
    t.close();
    expect(mirrorColumns).toEqual(['id', 'name', 'email', 'api_key']);
    expect(mirrored).toBe(12);
    expect(fileHits(target, apiBytes).length).toBeGreaterThan(0);
    expect(fileHits(target, secretBytes)).toEqual([]);
    const verify = runCli(['verify', file, target]);
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);

    // api_key excluded after the fact: the retained journal rows lose it, and the mirror loses the column.
    const again = openDatabase(file);
    const r = enable(again, ['users'], { exclude: ['password_hash', 'totp_secret', 'api_key'] });
    expect(r.rearmedReasons).toEqual([
      { table: 'users', reason: 'EXCLUDE_CHANGED', detail: 'exclude password_hash, totp_secret -> password_hash, totp_secret, api_key' },
    ]);
    expect(r.purgedRows).toBeGreaterThan(30);
    expect(readTables(again)[0]).toMatchObject({ columns: ['id', 'name', 'email'], excluded: ['password_hash', 'totp_secret', 'api_key'] });
    const width = Number(again.prepare('SELECT journal_width FROM _sluice_state').pluck().get());
    const anyCell = Array.from({ length: width }, (_, i) => `instr(c${i}, ?) > 0`).join(' OR ');
    const left = Number(
      again
        .prepare(`SELECT count(*) FROM _sluice_journal WHERE ${anyCell}`)
        .pluck()
        .get(...Array(width).fill(API)),
    );
    again.close();
    expect(left).toBe(0);
    expect(findIn(pageImages(file, btreePages(file, OWN_BTREES)), [...apiBytes, ...secretBytes])).toEqual([]);
    const sync3 = runCli(['sync', file, target]);
    expect(sync3.status, sync3.stderr).toBe(0);
    const t2 = openDatabase(target, { readonly: true });
    const after = t2.prepare("SELECT name FROM pragma_table_info('users')").pluck().all();
    t2.close();
    expect(after).toEqual(['id', 'name', 'email']);
  });
});
