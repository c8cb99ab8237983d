// A source made by the sqlite3 CLI, captured and synced to a target, and `sync --follow` of it as a subprocess: the set-up the follower tests share
import path from 'node:path';
import { afterEach } from 'vitest';
import { expect, runCli, runSqliteCli } from '../../support/fixtures.ts';
import { startCli, waitFor, type Spawned } from '../../cli/support/cli.ts';

/** app.db made by `sql` (WAL), `tables` captured, synced to cache.db: both paths. */
export function syncedApp(tmp: string, sql: string, tables: readonly string[]): { src: string; tgt: string } {
  const src = path.join(tmp, 'app.db');
  runSqliteCli(src, `PRAGMA journal_mode = WAL; ${sql}`);
  expect(runCli(['enable', src, ...tables]).status).toBe(0);
  const tgt = path.join(tmp, 'cache.db');
  expect(runCli(['sync', src, tgt]).status).toBe(0);
  return { src, tgt };
}

/**
 * `sluice sync SRC TGT --follow` started, once it said it follows; each is
 * killed after its test (afterEach, registered by the file that calls this
 * at its top level).
 */
export function followers(): { start(src: string, tgt: string): Promise<Spawned> } {
  const running: Spawned[] = [];
  afterEach(() => {
    for (const f of running.splice(0)) if (f.child.exitCode === null && f.child.signalCode === null) f.child.kill('SIGKILL');
  });
  return {
    async start(src, tgt) {
      const f = startCli(['sync', src, tgt, '--follow']);
      running.push(f);
      await waitFor('the follower started', () => `${f.stdout()}${f.stderr()}`.includes('following'));
      return f;
    },
  };
}
