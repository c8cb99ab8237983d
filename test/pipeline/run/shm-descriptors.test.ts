// sluice run keeps a bounded number of -shm descriptors however often its target threads restart
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { type Spawned } from '../../cli/support/cli.ts';
import { NatsServer } from '../../support/nats-server.ts';
import { appSource, freePort, kill, put, py, runAppPipeline, startRun, waitFor, waitHealth } from '../support/run.ts';
import { shmDmsLock } from '../../support/shm-lock.ts';

/*
 * A target's thread reads the source's and the target's `-shm` and never
 * closes a descriptor of one (closing it releases SQLite's locks on it:
 * sqlite/shm-files.ts). The main thread owns them: it lends a new thread
 * those it holds, and is given each one a thread opens. Reloads that
 * restart targets, a publisher beside them, and a thread that ends
 * abruptly leave at most 3 per `-shm` after five restarts, not one more
 * per thread started. Read from /proc (Linux).
 */

let running: Spawned | undefined;
let nats: NatsServer | undefined;
afterEach(async () => {
  kill(running);
  await nats?.dispose();
  nats = undefined;
});

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

/**
 * The descriptors of these databases' `-shm` files, checked: of no other
 * file, and at most 3 per file (SQLite's own, one for all the process's
 * connections, and sluice's: one, or two when two threads opened one at
 * once before either had one to lend).
 */
function bounded(pid: number, dbs: readonly string[]): Map<string, number> {
  const held = shmDescriptors(pid);
  const files = dbs.map((d) => `${fs.realpathSync(d)}-shm`);
  expect([...held.keys()].filter((f) => !files.includes(f))).toEqual([]);
  expect(
    [...held.values()].every((n) => n <= 3),
    JSON.stringify([...held]),
  ).toBe(true);
  return held;
}

/** A map projection whose name changes each round: declaring it restarts its target's thread. */
const extra = (name: string) => `, {name: ${name}, source: issues, kind: map, columns: {id: id}, filter: "state = 'open'"}`;

/** Reloads the run with `file(i)` for rounds 1..n, each once every target holds its new projection; a pass after each. */
async function reloadRounds(run: Spawned, port: number, src: string, from: number, to: number, file: (i: number) => void): Promise<void> {
  for (let i = from; i <= to; i++) {
    file(i);
    run.child.kill('SIGHUP');
    await waitHealth(
      port,
      `round ${i} built`,
      (h) => h.code === 200 && h.status.targets.every((t) => t.projections.some((p) => p.name.endsWith(`_${i}`))),
    );
    py(src, `con.execute("UPDATE issues SET title = 'round ${i}' WHERE id = 1")`); // a pass, through the log's index
  }
}

/**
 * Runs a pipeline of app.db (its source lines under `capture`, given round
 * i, 0 at start), reloads it for rounds 1 to 5 (each declaring a new
 * projection, which restarts its target's thread), and checks the run's
 * `-shm` descriptors of `targets` and the source (bounded). Returns the
 * source's path.
 */
async function restartsAddNone(tmp: string, targets: readonly string[], lines: (i: number) => string): Promise<string> {
  const src = path.join(tmp, 'app.db');
  const config = path.join(tmp, 'sluice.yml');
  appSource(src);
  const port = await freePort();
  const file = (i: number) =>
    put(config, `sources:\n  - path: app.db\n    capture: [issues, comments]\n${lines(i)}prune: true\nlisten: 127.0.0.1:${port}\n`);
  file(0);
  const run = startRun(config);
  running = run;
  await waitHealth(port, 'running', (h) => h.code === 200 && h.status.run.parts.every((p) => p.state === 'running'));
  await reloadRounds(run, port, src, 1, 5, file);
  bounded(run.child.pid as number, [src, ...targets.map((t) => path.join(tmp, t))]); // one more per restart would be 6 or more
  return src;
}

describe.skipIf(process.platform !== 'linux')('sluice run and -shm descriptors', () => {
  test('five reloads that restart two targets of one source leave at most 3 descriptors per -shm, not one more per restart, and the source stays locked by the run', async ({
    tmp,
  }) => {
    const round = (t: string, i: number) => `      - {path: ${t}.db, projections: ["*"${i === 0 ? '' : extra(`${t}_${i}`)}]}\n`;
    const src = await restartsAddNone(tmp, ['a.db', 'b.db'], (i) => `    targets:\n${round('a', i)}${round('b', i)}`);
    expect(shmDmsLock(src)).toBe('held');
  });

  test('a publisher reading the source beside a target restarted five times: at most 3 descriptors per -shm, not one more per restart', async ({
    tmp,
  }) => {
    const server = await NatsServer.start();
    nats = server;
    await restartsAddNone(
      tmp,
      ['cache.db'],
      (i) =>
        `    targets:\n      - {path: cache.db, projections: ["*"${i === 0 ? '' : extra(`open_${i}`)}]}\n    publish: {nats: "${server.url}"}\n`,
    );
  });

  test('a target thread that ends abruptly again and again (a handler calling process.exit) leaves no descriptor behind: at most 3 per -shm after five attempts', async ({
    tmp,
  }) => {
    put(path.join(tmp, 'h.mjs'), `export default { version: '1', async init() {}, async apply() { process.exit(3); } };\n`);
    const { src, run } = await runAppPipeline(tmp, '"*", {name: hooked, source: issues, kind: custom, module: ./h.mjs}');
    running = run;
    py(src, `con.execute("UPDATE issues SET title = 'boom' WHERE id = 1")`);
    const failures = (n: number) =>
      waitFor(
        `${n} failed attempts`,
        () =>
          run
            .stderr()
            .split('\n')
            .filter((l) => l.includes('"event":"failed"')).length >= n,
        30_000,
      );
    const dbs = [src, path.join(tmp, 'cache.db')];
    // The backoff waits 0.5, 1, 2 s...: five attempts within about 8 s; one more descriptor per attempt would be 6 or more.
    await failures(5);
    bounded(run.child.pid as number, dbs);
  });
});
