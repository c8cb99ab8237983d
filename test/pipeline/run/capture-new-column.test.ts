// sluice run, a table leaving a column out, and a column added to it by the application's migration
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import type { Spawned } from '../../cli/support/cli.ts';
import { freePort, kill, logLines, put, startRun, waitForRun, waitHealth } from '../support/run.ts';

/*
 * The pipeline file leaves pw of users out of capture; while `run` runs,
 * the application's migration adds phone (the sqlite3 CLI). phone may be pw
 * renamed, so the table is not re-armed by itself and the mirror is
 * suspended: the run says, in /healthz, the status of its capture part and
 * its log, to declare phone under capture.users (exclude or include). Once
 * the file includes it, the reload re-arms users, the mirror is rebuilt
 * with phone, and no value of pw is in the target.
 */

const PW = 'pw-run-secret-77';

let running: Spawned | undefined;
afterEach(() => kill(running));

function config(port: number, capture: string): string {
  return `sources:\n  - path: app.db\n    capture: ${capture}\n    targets:\n      - path: cache.db\n        projections: ["*"]\nlisten: 127.0.0.1:${port}\n`;
}

function phones(tgt: string): unknown[] | undefined {
  try {
    const db = openDatabase(tgt, { readonly: true });
    try {
      return db.prepare('SELECT phone FROM users ORDER BY id').pluck().all();
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('says to declare a column added to a table leaving a column out (exclude or include), and re-arms it once the file includes it, pw still out of the target', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const file = path.join(tmp, 'sluice.yml');
    runSqliteCli(
      src,
      `PRAGMA journal_mode = wal; CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, pw TEXT); INSERT INTO users VALUES (1, 'ann', '${PW}-1');`,
    );
    const port = await freePort();
    put(file, config(port, '{users: {exclude: [pw]}}'));
    running = startRun(file);
    await waitHealth(port, 'the mirror built', (h) => h.code === 200);

    runSqliteCli(src, `ALTER TABLE users ADD COLUMN phone TEXT; INSERT INTO users VALUES (2, 'bob', '${PW}-2', '555-0102');`);
    const held = await waitHealth(
      port,
      'the capture part failing with the fix in the file terms',
      (h) => h.code === 503 && h.status.run.parts.some((p) => p.name === src && p.failure?.code === 'SCHEMA_CHANGED'),
    );
    const part = held.status.run.parts.find((p) => p.name === src);
    expect(part?.failure?.message).toMatch(
      /has a new column since it was armed, phone, .*declare phone in .*sluice\.yml:3:\d+ under capture\.users: in "exclude" to leave it out, or in "include" to capture it/,
    );
    const said = held.status.problems.find((x) => x.startsWith('capture of table users')) ?? '';
    expect(said).toContain('under capture.users');
    expect(said).not.toContain('sluice run re-arms it');
    const log = logLines(running).find((l) => l.event === 'not-armed');
    expect(log?.level).toBe('warn');
    expect(log?.msg).toContain('under capture.users');

    put(file, config(port, '{users: {exclude: [pw], include: [phone]}}'));
    await waitForRun(running, 'the mirror rebuilt with phone', () => JSON.stringify(phones(tgt)) === JSON.stringify([null, '555-0102']));
    await waitHealth(port, 'all well again', (h) => h.code === 200);
    const enabled = logLines(running).find((l) => l.event === 'enabled' && Array.isArray(l.include));
    expect(enabled?.msg).toContain('excluding pw, including phone (new since armed)');
    expect([tgt, `${tgt}-wal`].some((f) => fs.existsSync(f) && fs.readFileSync(f).includes(PW))).toBe(false);
  }, 90_000);
});
