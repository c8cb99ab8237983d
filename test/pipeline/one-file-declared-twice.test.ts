// sluice run refuses two declared targets that are one file through a symlink
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
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
});
