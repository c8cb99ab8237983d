// a column left out of capture is in no NATS message, snapshot or batch, nor the subscribed target
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { pythonExec } from '../support/journal.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { runCliAsync } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName } from '../../src/broker/index.ts';

const nats = natsForFile();

const SECRET = 'S3CR3T-nats-41d0';
const BLOB = Buffer.from('5ec12e7dead0b10b41d0c0ffee', 'hex');

describe('publish with columns left out of capture', () => {
  test('neither the published snapshot nor the batches nor the subscribed target hold the secret', async ({ makeDb, tmp }) => {
    const { db, file } = makeDb(
      'app.db',
      'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT UNIQUE, password_hash TEXT, totp_secret BLOB)',
    );
    db.exec(`INSERT INTO users VALUES (1, 'a', 'e1', '${SECRET}-0', X'${BLOB.toString('hex')}')`);
    enable(db, ['users'], { exclude: ['password_hash', 'totp_secret'] });
    const url = nats.server().url;
    const first = await runCliAsync(['publish', file, '--nats', url, '--json']);
    expect(first.status, first.stderr).toBe(0);
    pythonExec(
      file,
      `INSERT INTO users VALUES (2, 'b', 'e2', '${SECRET}-1', X'${BLOB.toString('hex')}');
INSERT OR REPLACE INTO users VALUES (3, 'c', 'e2', '${SECRET}-2', X'${BLOB.toString('hex')}');
INSERT INTO users VALUES (3, 'c2', 'e3', '${SECRET}-3', NULL) ON CONFLICT (id) DO UPDATE SET name = excluded.name, password_hash = excluded.password_hash;`,
    );
    runSqliteCli(file, `REPLACE INTO users VALUES (1, 'a2', 'e1', '${SECRET}-4', X'${BLOB.toString('hex')}');`);
    const second = await runCliAsync(['publish', file, '--nats', url, '--json']);
    expect(second.status, second.stderr).toBe(0);
    const messages = await streamMessages(url, defaultStreamName(sourceIdOf(file)));
    const text = messages.map((m) => Buffer.from(m.data).toString('latin1')).join('\n');
    // The messages are read: the captured columns are there.
    expect(text).toContain('"c2"');
    expect(text).toContain('"a2"');
    for (const form of [
      SECRET,
      BLOB.toString('hex'),
      BLOB.toString('hex').toUpperCase(),
      BLOB.toString('base64'),
      'password_hash',
      'totp_secret',
    ])
      expect(text, form).not.toContain(form);
    for (const m of messages) expect(Buffer.from(m.data).includes(BLOB)).toBe(false);

    const target = path.join(tmp, 'sub.db');
    const sub = await runCliAsync(['subscribe', target, '--nats', url, '--source', sourceIdOf(file), '--json']);
    expect(sub.status, sub.stderr).toBe(0);
    const t = openDatabase(target, { readonly: true });
    expect(t.prepare('SELECT id, name, email FROM users ORDER BY id').raw().all()).toEqual([
      [1n, 'a2', 'e1'],
      [3n, 'c2', 'e2'],
    ]);
    expect(t.prepare("SELECT name FROM pragma_table_info('users')").pluck().all()).toEqual(['id', 'name', 'email']);
    t.close();
    for (const f of [target, `${target}-wal`]) {
      if (!fs.existsSync(f)) continue;
      const bytes = fs.readFileSync(f);
      expect(bytes.includes(Buffer.from(SECRET)), f).toBe(false);
      expect(bytes.includes(BLOB), f).toBe(false);
    }
  });

  test('a column left out after subscribers were built: their rebuild from the new snapshot (JSONL and segments) keeps none of its values', async ({
    makeDb,
    tmp,
  }) => {
    const ROWS = 300;
    const { db, file } = makeDb('priv.db', 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, pw TEXT)');
    db.exec(
      `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO users SELECT i, 'n' || i, printf('PRIVPW%06d', i) FROM c`,
    );
    db.close();
    const url = nats.server().url;
    const cli = async (...args: string[]) => {
      const r = await runCliAsync(args);
      expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
    };
    const targets = { jsonl: path.join(tmp, 'sub-jsonl.db'), segment: path.join(tmp, 'sub-segment.db') };
    /** How many distinct private values each target's file and -wal hold. */
    const privateIn = () =>
      Object.fromEntries(
        Object.entries(targets).map(([format, target]) => {
          const bytes = Buffer.concat([target, `${target}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)));
          return [format, new Set(bytes.toString('latin1').match(/PRIVPW[0-9]{6}/g) ?? []).size];
        }),
      );
    let sid = '';
    const round = async () => {
      await cli('publish', file, '--nats', url, '--format', 'jsonl,segment', '--json');
      for (const [format, target] of Object.entries(targets))
        await cli('subscribe', target, '--nats', url, '--source', sid, '--format', format, '--json');
    };
    await cli('enable', file, 'users');
    sid = sourceIdOf(file);
    await round();
    expect(privateIn()).toEqual({ jsonl: ROWS, segment: ROWS });
    await cli('enable', file, 'users', '--exclude', 'pw');
    await round();
    for (const target of Object.values(targets)) {
      const t = openDatabase(target, { readonly: true });
      expect(t.prepare("SELECT name FROM pragma_table_info('users')").pluck().all(), target).toEqual(['id', 'name']);
      expect(t.prepare('SELECT count(*) FROM users').pluck().get(), target).toBe(BigInt(ROWS));
      t.close();
    }
    expect(privateIn()).toEqual({ jsonl: 0, segment: 0 });
    // Nor does the stream: the messages published before the column was left out (the first snapshot, in both formats)
    // are purged once the snapshot that leaves it out is published, so no subscriber started later, and no one reading
    // the server's store, finds them.
    const inStream = (await streamMessages(url, defaultStreamName(sid))).map((m) => Buffer.from(m.data));
    expect(inStream.length).toBeGreaterThan(0);
    expect(
      new Set(
        Buffer.concat(inStream)
          .toString('latin1')
          .match(/PRIVPW[0-9]{6}/g) ?? [],
      ).size,
    ).toBe(0);
  });
});
