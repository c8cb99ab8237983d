// sluice run refuses to start when its listen address is taken, with nothing written
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { runCliAsync } from '../../cli/support/cli.ts';
import { afterEach } from 'vitest';
import type { Spawned } from '../../cli/support/cli.ts';
import { appSource, healthz, kill, logLines, put, startRun, waitFor } from '../support/run.ts';

/*
 * The port of `listen` held by another process (another run's default
 * 127.0.0.1:9464, a Prometheus exporter): run used to start anyway, build
 * and follow every target, and retry its HTTP server forever, so /healthz
 * (what a supervisor or a load balancer asks) answered from the other
 * process. It must exit 1 at start with one line naming the address and the
 * fix, before it enables capture or creates a target.
 */
describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('exits 1 at start when the listen port is in use, naming the address, with no target created and no capture enabled', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    const before = fs.readFileSync(src);
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      put(
        config,
        `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - path: cache.db
        projections: ["*"]
listen: 127.0.0.1:${port}
`,
      );
      const r = await runCliAsync(['run', '--config', config], { cwd: tmp });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`METRICS_LISTEN_FAILED: Cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
      expect(r.stderr).toContain('change "listen" in the pipeline file');
      expect(fs.existsSync(path.join(tmp, 'cache.db'))).toBe(false);
      expect(fs.readFileSync(src).equals(before)).toBe(true);
      // Only reading happened: the source's -wal and -shm a reader makes, and the run's lock file (kept: process-lock.ts); no target's lock.
      expect(fs.readdirSync(tmp).sort()).toEqual(['app.db', 'app.db-shm', 'app.db-wal', 'sluice.yml', 'sluice.yml-run']);
      expect(fs.statSync(path.join(tmp, 'app.db-wal')).size).toBe(0);
      expect(runSqliteCli(src, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_sluice%' ESCAPE '\\';").trim()).toBe('0');
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  }, 30_000);

  test('on port 0 logs the port the system gave it, where /healthz answers', async ({ tmp }) => {
    appSource(path.join(tmp, 'app.db'));
    const config = path.join(tmp, 'sluice.yml');
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - {path: cache.db, projections: ["*"]}\nlisten: 127.0.0.1:0\n`,
    );
    running = startRun(config);
    const serving = () => logLines(running as Spawned).find((l) => l.part === 'http:127.0.0.1:0' && l.event === 'start');
    await waitFor('the HTTP part to start', () => serving() !== undefined);
    const port = Number(serving()?.port);
    expect(port).toBeGreaterThan(0);
    expect(serving()?.msg).toContain(`http://127.0.0.1:${port}/`);
    expect((await healthz(port)).status.targets.map((t) => path.basename(t.path))).toEqual(['cache.db']);
  }, 30_000);
});

let running: Spawned | undefined;
afterEach(() => kill(running));
