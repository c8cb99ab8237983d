// every command that only reads a database leaves its folder byte for byte as it was, WAL files included, and reads beside a live writer
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { describe, expect, runPython, test, filesIn, leaveWal } from '../support/fixtures.ts';
import { PythonWriter } from '../support/python-writer.ts';
import { NatsServer } from '../support/nats-server.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { runCliAsync, trackerSource, scalar, type CliResult } from '../cli/support/cli.ts';

/*
 * A reader of a WAL file that no other connection has open makes an empty
 * -wal and -shm beside it, and a read-only connection cannot remove them
 * when it closes. plan and health --config read by the rule of
 * src/sqlite/quiet-hold.ts (each file held, while it is read, by a
 * connection that never writes and closes last); explain, verify, status,
 * health of a target, changes, export, strip, a read by query, publish
 * and the forecast of alter --target read without it, and left app.db-wal,
 * app.db-shm, cache.db-wal and cache.db-shm behind. Each now reads by that
 * rule:
 * - nothing beside either file: the folder is byte for byte what it was;
 * - a -wal and -shm a killed program left: neither removed nor
 *   checkpointed, every file but the -shm (SQLite's shared memory, which
 *   any process that opens the file rebuilds) byte for byte what it was;
 * - a live writer (Python's sqlite3, its connection open, committing while
 *   each command reads): every command reads, every write commits, and once
 *   the writer closes, no -wal or -shm is left (nothing of sluice still
 *   holds the file).
 */

/** The files but each -shm (see above). */
function withoutShm(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).filter(([f]) => !f.endsWith('-shm')));
}

/** app.db (the tracker, issues and labels captured) synced into cache.db in `dir`, both in WAL mode, every connection closed. */
async function pair(dir: string): Promise<{ src: string; tgt: string }> {
  const src = trackerSource(path.join(dir, 'app.db'), ['issues', 'labels']);
  const tgt = path.join(dir, 'cache.db');
  await sync(src, tgt);
  for (const f of [src, tgt]) expect(fs.readFileSync(f).readUInt8(18), `${f} is in WAL mode`).toBe(2);
  expect(fs.readdirSync(dir).sort()).toEqual(['app.db', 'cache.db']);
  return { src, tgt };
}

/** Each command that reads `src` or `tgt` and writes neither, with its exit code; what it writes goes into `out` (another folder). */
function readers(src: string, tgt: string, out: string): { readonly args: readonly string[]; readonly status: number }[] {
  let copies = 0;
  return [
    { args: ['explain', src, tgt], status: 0 },
    { args: ['verify', src, tgt], status: 0 },
    { args: ['status', src], status: 0 },
    { args: ['health', tgt], status: 0 },
    { args: ['changes', src, '--limit', '5'], status: 0 },
    { args: ['export', src, '--out', path.join(out, 'changes.jsonl')], status: 0 },
    { args: ['export', src, '--format', 'segment', '--out', path.join(out, 'segments')], status: 0 },
    {
      get args() {
        return ['strip', src, '--out', path.join(out, `copy${++copies}.db`)];
      },
      status: 0,
    },
    { args: ['query', src, 'SELECT count(*) FROM issues'], status: 0 },
    { args: ['query', tgt, 'SELECT count(*) FROM issues'], status: 0 },
  ];
}

function expectStatus(r: CliResult, args: readonly string[], status: number): void {
  expect(r.status, `sluice ${args[0]}: ${r.stderr}`).toBe(status);
}

describe('read-only commands on WAL files', () => {
  test('nothing beside either file: each command leaves the folder byte for byte as it was', async ({ tmp }) => {
    const dir = path.join(tmp, 'data');
    const out = path.join(tmp, 'out');
    fs.mkdirSync(dir);
    fs.mkdirSync(out);
    const { src, tgt } = await pair(dir);
    const before = filesIn(dir);
    for (const c of readers(src, tgt, out)) {
      const args = c.args;
      const r = await runCliAsync(args);
      expectStatus(r, args, c.status);
      expect(filesIn(dir), `sluice ${args.join(' ')} changed, made or removed a file`).toEqual(before);
    }
  });

  test('sluice alter --target: the target is byte for byte as it was, and no -wal, -shm or -journal is left beside either file', async ({
    tmp,
  }) => {
    const { src, tgt } = await pair(tmp);
    const target = filesIn(tmp)['cache.db'];
    const r = await runCliAsync(['alter', src, 'ALTER TABLE issues ADD COLUMN due TEXT', '--target', tgt]);
    expect([0, 3], r.stderr).toContain(r.status);
    expect(r.stdout).toContain(`forecast for ${tgt}`);
    expect(fs.readdirSync(tmp).sort(), 'the forecast left a file beside the source or the target').toEqual(['app.db', 'cache.db']);
    expect(filesIn(tmp)['cache.db'], 'the forecast changed the target').toBe(target);
  });

  test('sluice publish: the source is byte for byte as it was, and only the cursor file publish keeps is added beside it', async ({
    tmp,
  }) => {
    const { src } = await pair(tmp);
    const before = filesIn(tmp);
    const nats = await NatsServer.start();
    try {
      const r = await runCliAsync(['publish', src, '--nats', nats.url, '--json']);
      expect(r.status, r.stderr).toBe(0);
    } finally {
      await nats.dispose();
    }
    const after = filesIn(tmp);
    const state = Object.keys(after).filter((f) => f.startsWith('app.db.publish-') && f.endsWith('.cursor'));
    expect(state, 'publish keeps its cursor beside the source').toHaveLength(1);
    expect(Object.keys(after).sort(), 'publish left a file beside the source').toEqual([...Object.keys(before), ...state].sort());
    expect(after['app.db'], 'publish changed the source').toBe(before['app.db']);
    expect(after['cache.db']).toBe(before['cache.db']);
  });

  test('a -wal and -shm a killed program left beside each file: neither removed nor checkpointed', async ({ tmp }) => {
    const dir = path.join(tmp, 'data');
    const out = path.join(tmp, 'out');
    fs.mkdirSync(dir);
    fs.mkdirSync(out);
    const { src, tgt } = await pair(dir);
    leaveWal(src);
    leaveWal(tgt);
    const names = ['app.db', 'app.db-shm', 'app.db-wal', 'cache.db', 'cache.db-shm', 'cache.db-wal'];
    expect(fs.readdirSync(dir).sort()).toEqual(names);
    const before = withoutShm(filesIn(dir));
    for (const c of readers(src, tgt, out)) {
      const args = c.args;
      const r = await runCliAsync(args);
      expectStatus(r, args, c.status);
      expect(fs.readdirSync(dir).sort(), `sluice ${args.join(' ')} made or removed a file`).toEqual(names);
      expect(withoutShm(filesIn(dir)), `sluice ${args.join(' ')} changed a file`).toEqual(before);
    }
  });

  test('a live writer commits while each command reads: every command reads, every write commits, nothing is left once it closes', async ({
    tmp,
  }) => {
    const dir = path.join(tmp, 'data');
    const out = path.join(tmp, 'out');
    fs.mkdirSync(dir);
    fs.mkdirSync(out);
    const { src, tgt } = await pair(dir);
    const issues = Number(scalar(src, 'SELECT count(*) FROM issues'));
    const writer = PythonWriter.start();
    let written = 0;
    try {
      expect(await writer.send({ open: src })).toMatchObject({ ok: true });
      for (const c of readers(src, tgt, out)) {
        const args = c.args;
        let done = false;
        const running = runCliAsync(args).finally(() => (done = true));
        // Writes until the command ends (at least one while it runs): each must commit.
        do {
          const w = await writer.send({
            sql: `INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ${1000 + written}, 'live', 'written while sluice ${args[0]} reads', 'open', 'py', 1.5, '2026-03-01')`,
          });
          expect(w, `a write while sluice ${args[0]} reads`).toEqual({ ok: true, in_transaction: false });
          written++;
          await new Promise((resolve) => setTimeout(resolve, 5));
        } while (!done);
        expectStatus(await running, args, c.status);
      }
      expect(await writer.send({ close: true })).toMatchObject({ ok: true });
    } finally {
      await writer.stop();
    }
    expect(fs.readdirSync(dir).sort(), 'a -wal or -shm is left once the writer closed').toEqual(['app.db', 'cache.db']);
    expect(Number(scalar(src, 'SELECT count(*) FROM issues'))).toBe(issues + written);
  });
});
