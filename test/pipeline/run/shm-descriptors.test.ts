// sluice run keeps one descriptor of its own per -shm however often its target threads restart
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, kill, put, py, startRun, waitHealth } from '../support/run.ts';
import { shmDmsLock } from '../../support/shm-lock.ts';

/*
 * A target's thread reads the source's and the target's `-shm` itself and
 * never closes them (closing one releases SQLite's locks on it:
 * sqlite/shm-files.ts). A thread that ends hands them to sluice run, which
 * gives them to the next thread of that target: reloads that restart the
 * target leave one descriptor per `-shm`, not one per thread ever started.
 * Read from /proc (Linux).
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

/** The run's open descriptors of `-shm` files, by path (one removed since counts under its path: SQLite removes it when its last connection closes). */
function shmDescriptors(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  const dir = `/proc/${pid}/fd`;
  for (const fd of fs.readdirSync(dir)) {
    let link: string;
    try {
      link = fs.readlinkSync(path.join(dir, fd));
    } catch {
      continue; // closed meanwhile
    }
    const shm = /^(.*-shm)(?: \(deleted\))?$/.exec(link)?.[1];
    if (shm !== undefined) out.set(shm, (out.get(shm) ?? 0) + 1);
  }
  return out;
}

describe.skipIf(process.platform !== 'linux')('sluice run and -shm descriptors', () => {
  test('five reloads that restart the target thread leave one descriptor per -shm beside the one SQLite keeps, and the source stays locked by the run', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    const port = await freePort();
    const file = (extra: number) =>
      put(
        config,
        `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - path: cache.db
        projections: ["*"${extra === 0 ? '' : `, {name: open_${extra}, source: issues, kind: map, columns: {id: id}, filter: "state = 'open'"}`}]
prune: true
listen: 127.0.0.1:${port}
`,
      );
    file(0);
    running = startRun(config);
    const pid = running.child.pid as number;
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    for (let i = 1; i <= 5; i++) {
      file(i);
      running.child.kill('SIGHUP');
      await waitHealth(
        port,
        `open_${i} built`,
        (h) => h.code === 200 && (h.status.targets[0]?.projections.some((p) => p.name === `open_${i}`) ?? false),
      );
      py(src, `con.execute("UPDATE issues SET title = 'round ${i}' WHERE id = 1")`); // a pass, through the log's index
    }
    const held = shmDescriptors(pid);
    expect([...held.keys()].sort()).toEqual([`${fs.realpathSync(src)}-shm`, `${fs.realpathSync(path.join(tmp, 'cache.db'))}-shm`].sort());
    // SQLite's own (one per file for all the process's connections) and the one the target's thread reads.
    expect(
      [...held.values()].every((n) => n <= 2),
      JSON.stringify([...held]),
    ).toBe(true);
    expect(shmDmsLock(src)).toBe('held');
  });
});
