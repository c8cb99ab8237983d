// a second sync follow of one target (by its name, or another hard link of it) is refused naming the first, and a killed one leaves no lock behind
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import {
  runCliAsync,
  makeDir,
  removeDir,
  trackerSource,
  expectOneLineError,
  parseJson,
  startCli,
  waitFor,
  write,
  onDatabase,
  type Spawned,
} from '../../cli/support/cli.ts';

/*
 * Two `sync --follow` on one target with different definitions for one
 * projection name rebuilt it in turn forever (DEFINITION_CHANGED on every
 * other pass), each exiting 0. A target has one follower: the second is
 * refused with one line, TARGET_FOLLOWED, naming the target, the process
 * that follows it and the fix, exit 1, having applied nothing. The lock is
 * the operating system's (a lock SQLite takes on a small file beside the
 * target), so a follower killed with SIGKILL leaves nothing that needs
 * cleaning up: the next one starts. A one-shot sync still runs beside a
 * follower (each target transaction is whole either way).
 */

let dir: string;
const running: Spawned[] = [];

beforeAll(() => {
  dir = makeDir();
});
afterEach(() => {
  for (const f of running.splice(0)) if (f.child.exitCode === null && f.child.signalCode === null) f.child.kill('SIGKILL');
});
afterAll(() => removeDir(dir));

function definition(file: string, filter: string): string {
  const p = path.join(dir, file);
  fs.writeFileSync(
    p,
    JSON.stringify({ name: 'picked', source: 'issues', kind: 'map', columns: { repo: 'repo_id', num: 'number', title: 'title' }, filter }),
  );
  return p;
}

function follower(args: readonly string[]): Spawned {
  const f = startCli(args);
  running.push(f);
  return f;
}

/** Whether a pass of `f` (sync --follow --json) applied events. */
function applied(f: Spawned): boolean {
  return f
    .stdout()
    .split('\n')
    .some(
      (l) =>
        l.startsWith('{') && (JSON.parse(l) as { projections?: { applied: number }[] }).projections?.some((p) => p.applied > 0) === true,
    );
}

async function exitWithin(f: Spawned, ms: number): Promise<{ status: number | null } | undefined> {
  return Promise.race([f.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);
}

describe.skipIf(process.platform === 'win32')('one follower per target', () => {
  test('a second sync --follow of the target, with another definition of one projection, is refused naming the first; the first goes on without a rebuild', async () => {
    const src = trackerSource(path.join(dir, 'a.db'), ['issues']);
    const target = path.join(dir, 'a-cache.db');
    const first = follower(['sync', src, target, '--follow', '--json', '--projection', definition('open.json', "state = 'open'")]);
    await waitFor("the first follower's first pass", () => first.stdout().includes('\n'));
    const second = follower(['sync', src, target, '--follow', '--json', '--projection', definition('closed.json', "state = 'closed'")]);
    const exit = await exitWithin(second, 15_000);
    expect(exit, `the second follower is still running; its stdout: ${second.stdout().slice(0, 500)}`).toBeDefined();
    expect(exit?.status, second.stderr()).toBe(1);
    expectOneLineError({ stdout: '', stderr: second.stderr() }, 'TARGET_FOLLOWED');
    expect(second.stderr()).toContain(target);
    expect(second.stderr()).toContain(`process ${String(first.child.pid)}`);
    expect(second.stderr()).toContain('sync --follow');
    expect(second.stderr()).toMatch(/stop that process first/i);

    // The first follower still follows, and never rebuilt its projection for the other definition.
    write(src, "UPDATE issues SET title = 'still followed' WHERE number = 1");
    await waitFor('the first follower applies a commit', () => applied(first));
    expect(first.stdout()).not.toContain('"rebuilt"');

    // A one-shot sync runs beside it, as before.
    const once = await runCliAsync(['sync', src, target, '--json', '--projection', definition('open-again.json', "state = 'open'")]);
    expect(once.status, once.stderr).toBe(0);
    expect(parseJson(once, S.syncOutput).projections[0]?.state).toBe('active');

    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ status: 0, signal: null });
  });

  test('a follower killed with SIGKILL leaves no lock behind: the next one starts and follows', async () => {
    const src = trackerSource(path.join(dir, 'b.db'), ['issues']);
    const target = path.join(dir, 'b-cache.db');
    const killed = follower(['sync', src, target, '--follow', '--json']);
    await waitFor('the first pass', () => killed.stdout().includes('\n'));
    killed.child.kill('SIGKILL');
    await killed.exited;
    const next = follower(['sync', src, target, '--follow', '--json']);
    await waitFor("the next follower's first pass", () => next.stdout().includes('\n'), 30_000);
    write(src, "UPDATE issues SET title = 'after the kill' WHERE number = 2");
    await waitFor('the next follower applies a commit', () => applied(next));
    next.child.kill('SIGTERM');
    expect(await next.exited).toEqual({ status: 0, signal: null });
  });
});

/*
 * The follower lock of a target was the file beside it named after its
 * path, so a hard link (another name, the same file) had a lock of its own:
 * `sync --follow` through T.db and through T2.db both ran, each with its own
 * -wal and -shm (SQLite keys them by path) for one database file, and the
 * file ended "database disk image is malformed" about one run in three. A
 * target is one file whatever it is called (sluice tells a hard-linked
 * source from its target the same way: device and inode), so the second
 * follower through another name is refused with TARGET_FOLLOWED, naming the
 * name it was given, the name the first follows it by, and that process.
 */
describe.skipIf(process.platform === 'win32')('one follower per target file, whatever name it is followed by', () => {
  test.each([
    { linked: 'after the first follower started, which follows the first name', firstByLink: false, linkFirst: false },
    { linked: 'before either started; the first follows the link', firstByLink: true, linkFirst: true },
  ])(
    'a second sync --follow through another hard link of the target is refused naming both names (linked $linked)',
    async ({ firstByLink, linkFirst }) => {
      const tag = firstByLink ? 'link-b' : 'link-a';
      const src = trackerSource(path.join(dir, `${tag}.db`), ['issues']);
      const target = path.join(dir, `${tag}-cache.db`);
      const link = path.join(dir, `${tag}-cache-link.db`);
      if (linkFirst) {
        // The target exists before the link is made: a one-shot sync makes it.
        const made = startCli(['sync', src, target, '--projection', definition(`${tag}-open0.json`, "state = 'open'")]);
        expect((await made.exited).status, made.stderr()).toBe(0);
        fs.linkSync(target, link);
      }
      const [firstName, secondName] = firstByLink ? [link, target] : [target, link];
      const first = follower([
        'sync',
        src,
        firstName,
        '--follow',
        '--json',
        '--projection',
        definition(`${tag}-open.json`, "state = 'open'"),
      ]);
      await waitFor("the first follower's first pass", () => first.stdout().includes('\n'));
      if (!linkFirst) fs.linkSync(target, link);

      const second = follower([
        'sync',
        src,
        secondName,
        '--follow',
        '--json',
        '--projection',
        definition(`${tag}-closed.json`, "state = 'closed'"),
      ]);
      const exit = await exitWithin(second, 15_000);
      expect(
        exit,
        `the second follower (through ${secondName}) is still running; its stdout: ${second.stdout().slice(0, 500)}`,
      ).toBeDefined();
      expect(exit?.status, second.stderr()).toBe(1);
      expectOneLineError({ stdout: '', stderr: second.stderr() }, 'TARGET_FOLLOWED');
      expect(second.stderr()).toContain(secondName);
      expect(second.stderr()).toContain(fs.realpathSync(firstName));
      expect(second.stderr()).toContain(`process ${String(first.child.pid)}`);
      expect(second.stderr()).toMatch(/hard link/i);
      expect(second.stdout()).not.toContain('"projections"'); // refused before its first pass

      // The first goes on alone, and the file stays whole (read through the first's name: its -wal is that name's).
      write(src, "UPDATE issues SET title = 'still followed', state = 'open' WHERE number = 1");
      await waitFor(
        'the first follower applies the commit',
        () =>
          Number(
            onDatabase(
              firstName,
              (db) => db.prepare("SELECT count(*) AS n FROM picked WHERE title = 'still followed'").get() as { n: number | bigint },
            ).n,
          ) > 0,
      );
      first.child.kill('SIGTERM');
      expect(await first.exited).toEqual({ status: 0, signal: null });
      expect(first.stdout()).not.toContain('"rebuilt"');
      expect(onDatabase(firstName, (db) => db.pragma('integrity_check', { simple: true }))).toBe('ok');
    },
  );
});
