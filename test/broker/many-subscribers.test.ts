// many subscribers keep their own cursors and a suspended one holds back no one
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import {
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  startCli,
  waitFor,
  scalar,
  sourceSeq,
  write,
  type Spawned,
  projectionSeq,
} from '../cli/support/cli.ts';
import { sourceIdOf } from './support/broker.ts';

/*
 * Three subscribers follow one publisher into three targets, each with its
 * own cursor and consumer. One target is tampered with: its subscriber
 * suspends the projection (TARGET_DIVERGED, exit 3) and commits nothing of
 * that batch, while the publisher and the other two go on to the source's seq.
 */

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    con.execute("UPDATE repositories SET stars = stars + 1 WHERE id = ?", (1 + i % 3,))
    con.commit()
`;

describe('many subscribers', () => {
  test('a suspended subscriber holds back neither the publisher nor the others', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['repositories']);
      const pub = startCli(['publish', src, '--nats', server.url, '--batch', '4', '--follow']);
      procs.push(pub);
      await waitFor('the first snapshot', () => pub.stderr().includes('published a snapshot'), 30_000);
      const targets = ['a.db', 'b.db', 'c.db'].map((f) => path.join(dir, f));
      const subs = targets.map((t) => startCli(['subscribe', t, '--nats', server.url, '--source', sourceIdOf(src), '--follow', '--json']));
      procs.push(...subs);
      runPython(WRITER, [src, '12']);
      await waitFor('every target at the source', () => targets.every((t) => projectionSeq(t, 'repositories') === sourceSeq(src)), 30_000);

      // b's row of repository 1 no longer matches the source's before-image.
      write(targets[1] as string, 'UPDATE repositories SET stars = -1 WHERE id = 1');
      const tampered = projectionSeq(targets[1] as string, 'repositories');
      runPython(WRITER, [src, '30']);
      const b = await subs[1]?.exited;
      expect(b?.status, subs[1]?.stderr()).toBe(3);
      expect(subs[1]?.stderr()).toContain('TARGET_DIVERGED');
      expect(scalar(targets[1] as string, "SELECT state || ' ' || reason FROM main._sluice_projections")).toBe('suspended TARGET_DIVERGED');
      expect(projectionSeq(targets[1] as string, 'repositories')).toBe(tampered);

      await waitFor(
        'a and c at the source',
        () => [targets[0], targets[2]].every((t) => projectionSeq(t as string, 'repositories') === sourceSeq(src)),
        30_000,
      );
      runPython(WRITER, [src, '5']);
      await waitFor(
        'a and c following on',
        () => [targets[0], targets[2]].every((t) => projectionSeq(t as string, 'repositories') === sourceSeq(src)),
        30_000,
      );
      for (const t of [targets[0], targets[2]]) expect(dumpTables(t as string)).toEqual(dumpTables(src, ['repositories']));
      for (const p of [pub, subs[0], subs[2]]) p?.child.kill('SIGTERM');
      for (const p of [pub, subs[0], subs[2]]) expect((await p?.exited)?.status, p?.stderr()).toBe(0);
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await server.dispose();
      removeDir(dir);
    }
  }, 120_000);
});
