// sluice run refuses two declared targets that are one file through a symlink
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe, runCli } from '../support/fixtures.ts';
import type { Spawned } from '../cli/support/cli.ts';
import { appSource, kill, put, startRun } from './support/run.ts';

/*
 * Two targets of a pipeline file whose paths are one file (a symlink, or a
 * folder reached through a symlink) would be two parts writing one
 * database, each seeing the other's projections as undeclared (and, with
 * prune: true, dropping them in turn). The file is refused at start, as a
 * path declared twice is, before anything is written; a symlink that does
 * not resolve yet (its target not built) counts too.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

/** Starts run and waits up to 20 s for it to exit by itself. */
async function exitOf(config: string): Promise<{ status: number | null; stderr: string }> {
  running = startRun(config);
  const r = running;
  const timer = setTimeout(() => r.child.kill('SIGKILL'), 20_000);
  const exit = await r.exited;
  clearTimeout(timer);
  return { status: exit.status, stderr: r.stderr() };
}

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('refuses two declared targets that are one file through a symlink (to a file not built yet, or to a folder) at start, writing nothing', async ({
    tmp,
  }) => {
    appSource(path.join(tmp, 'app.db'));
    fs.mkdirSync(path.join(tmp, 'data'));
    fs.symlinkSync('real.db', path.join(tmp, 'link.db'));
    fs.symlinkSync('data', path.join(tmp, 'alias'));
    const config = path.join(tmp, 'sluice.yml');
    const file = (a: string, b: string) =>
      put(
        config,
        `sources:
  - path: app.db
    capture: [issues]
    targets:
      - {path: ${a}, projections: ["*"]}
      - {path: ${b}, projections: [{name: open_issues, source: issues, kind: map, columns: {id: id}, filter: "state = 'open'"}]}
`,
      );
    file('real.db', 'link.db');
    const before = fs.readdirSync(tmp).sort();
    const viaLink = await exitOf(config);
    expect(viaLink.status, viaLink.stderr).toBe(1);
    expect(viaLink.stderr).toMatch(
      /PIPELINE_INVALID: .*sluice\.yml:6:\d+: .*link\.db is declared again as a target; it is already a target at .*sluice\.yml:5:\d+/,
    );

    file('data/c.db', 'alias/c.db');
    const viaFolder = await exitOf(config);
    expect(viaFolder.status, viaFolder.stderr).toBe(1);
    expect(viaFolder.stderr).toMatch(/PIPELINE_INVALID: .*alias\/c\.db is declared again as a target/);

    expect(fs.readdirSync(tmp).sort()).toEqual(before);
    expect(fs.readdirSync(path.join(tmp, 'data'))).toEqual([]);
  }, 60_000);

  test('plan refuses a target that is a hard link to its source (one file by two names no path comparison finds), writing nothing', ({
    tmp,
  }) => {
    appSource(path.join(tmp, 'app.db'));
    fs.linkSync(path.join(tmp, 'app.db'), path.join(tmp, 'cache.db'));
    put(
      path.join(tmp, 'sluice.yml'),
      `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - {path: cache.db, projections: ["*"]}\n`,
    );
    const before = fs.readdirSync(tmp).sort();
    const bytes = fs.readFileSync(path.join(tmp, 'app.db'));
    const plan = runCli(['plan'], { cwd: tmp });
    expect(plan.status, plan.stdout).toBe(1);
    expect(plan.stderr).toMatch(
      /PIPELINE_INVALID: .*sluice\.yml:5:\d+: .*cache\.db is declared again as a target; it is already a source at .*sluice\.yml:2:\d+/,
    );
    expect(fs.readdirSync(tmp).sort()).toEqual(before);
    expect(fs.readFileSync(path.join(tmp, 'app.db')).equals(bytes), 'the source unchanged').toBe(true);
  });
});
