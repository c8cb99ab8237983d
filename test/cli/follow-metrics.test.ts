// sync follow metrics serve the documented names and move as events apply or fail
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { test, expect, describe, runPython, ROOT } from '../support/fixtures.ts';
import { documentedMetrics, sample, scrape, scrapeUntil, type Scrape } from '../support/metrics.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, parseJson, removeDir, runCliAsync, startCli, trackerSource, waitFor, write, type Spawned } from './support/cli.ts';

/*
 * `sync --follow --metrics HOST:PORT` as a user runs it: a real follower
 * process, a Python writer on the source, and scrapes over HTTP. Every name
 * docs/metrics.md documents is served with its type, the counters move when
 * events are applied and when a batch fails, and the lag gauges are the
 * numbers `sluice health` prints.
 */

let dir: string;
let src: string;
let tgt: string;
let running: Spawned | undefined;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  tgt = at('cache.db');
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
});
afterAll(() => removeDir(dir));

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const of = sample;

/** A user trigger on the target's issues table that makes every apply to it fail with a raw SQLite error. */
const BLOCK = "CREATE TRIGGER block_issues BEFORE INSERT ON issues BEGIN SELECT RAISE(ABORT, 'issues are frozen'); END";

function updateIssues(tag: string, count: number): void {
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA busy_timeout = 10000")
for n in range(1, ${count + 1}):
    con.execute("UPDATE issues SET title = '${tag} ' || number WHERE repo_id = 5 AND number = ?", (n,))
    con.commit()`,
    [src],
  );
}

describe.skipIf(process.platform === 'win32')('sync --follow --metrics', () => {
  test('serves every documented name, counts applied events, batches and failures, and serves the lag health reports', async () => {
    const docs = documentedMetrics('sync');
    expect([...docs.keys()].length).toBeGreaterThanOrEqual(6);
    const port = await freePort();
    running = startCli(['sync', src, tgt, '--follow', '--json', '--metrics', `127.0.0.1:${port}`]);
    const f = running;
    await waitFor('the first pass (snapshot)', () => f.stdout().includes('\n'));

    const first = await scrape(port);
    for (const [name, type] of docs) expect(first.types.get(name), name).toBe(type);
    for (const name of first.types.keys()) expect(docs.has(name), `${name} is served but not documented`).toBe(true);
    const p = 'projection="issues"';
    expect(of(first, 'sluice_batches_total', p)).toBeGreaterThanOrEqual(1); // the snapshot
    expect(of(first, 'sluice_lag_events', p)).toBe(0);
    const committedAt = of(first, 'sluice_last_commit_time_seconds', p) ?? 0;
    expect(Math.abs(committedAt - Date.now() / 1000)).toBeLessThan(60);

    // Events applied move the counters and the last commit time.
    const applied0 = of(first, 'sluice_events_applied_total', p) ?? 0;
    const batches0 = of(first, 'sluice_batches_total', p) ?? 0;
    updateIssues('metrics', 10);
    let now = await scrapeUntil(port, (s) => (of(s, 'sluice_events_applied_total', p) ?? 0) >= applied0 + 10);
    expect(of(now, 'sluice_events_applied_total', p)).toBe(applied0 + 10);
    expect(of(now, 'sluice_batches_total', p)).toBeGreaterThan(batches0);
    expect(of(now, 'sluice_last_commit_time_seconds', p)).toBeGreaterThan(committedAt);
    expect(of(now, 'sluice_lag_events', p)).toBe(0);
    expect(of(now, 'sluice_failures_total', `${p},reason="SQLITE_CONSTRAINT_TRIGGER"`)).toBeUndefined();

    // A batch that fails moves the failure counter under its code, and the lag grows as health says.
    write(tgt, BLOCK);
    updateIssues('frozen', 3);
    const reason = `${p},reason="SQLITE_CONSTRAINT_TRIGGER"`;
    now = await scrapeUntil(port, (s) => (of(s, 'sluice_failures_total', reason) ?? 0) >= 1);
    expect(of(now, 'sluice_failures_total', reason)).toBeGreaterThanOrEqual(1);
    expect(of(now, 'sluice_events_applied_total', p)).toBe(applied0 + 10);
    const h = parseJson(await runCliAsync(['health', tgt, '--json']), S.healthOutput);
    const issues = h.projections.find((x) => x.name === 'issues');
    const after = await scrape(port);
    expect(issues?.lagEvents).toBe(3);
    expect(of(after, 'sluice_lag_events', p)).toBe(issues?.lagEvents);
    expect(of(after, 'sluice_lag_ms', p)).toBeGreaterThan(0);
    expect(of(after, 'sluice_lag_events', 'projection="comments"')).toBe(0);

    // Stopped with issues left failed, it exits as a one-shot sync would (1).
    f.child.kill('SIGTERM');
    expect((await f.exited).status).toBe(1);
  });

  test('a port in use fails with one line naming it, before anything is synced', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const fresh = at('never.db');
      const r = await runCliAsync(['sync', src, fresh, '--follow', '--metrics', `127.0.0.1:${port}`]);
      expect(r.status).toBe(1);
      expect(r.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(new RegExp(`^sluice: METRICS_LISTEN_FAILED: .*127\\.0\\.0\\.1:${port}.*in use`)),
      ]);
      expect(fs.existsSync(fresh)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()));
    }
  });

  test.each([['localhost'], ['127.0.0.1:'], ['127.0.0.1:0'], ['127.0.0.1:65536'], [':9464']])(
    'a bad --metrics value %s is a usage error naming the flag',
    async (value) => {
      const r = await runCliAsync(['sync', src, at('never.db'), '--follow', '--metrics', value]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/--metrics/);
    },
  );

  test('--metrics without --follow is a usage error naming both flags', async () => {
    const r = await runCliAsync(['sync', src, at('never.db'), '--metrics', '127.0.0.1:9464']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--metrics.*--follow/);
  });
});
