// publisher and subscriber following ride out a nats server restart
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, dumpTables, startCli, waitFor, scalar, sourceSeq, type Spawned } from '../cli/support/cli.ts';
import { sourceIdOf, COMMENT_WRITER } from './support/broker.ts';

/*
 * publish --follow and subscribe --follow keep running while the
 * nats-server under them is killed (SIGKILL) and started again on the same
 * port and store: each says so in one line when it loses the broker and
 * when it has it back, and the target catches up with what the source
 * committed meanwhile, with nothing missing or applied twice.
 */

function targetSeq(file: string): number {
  try {
    return Number(scalar(file, 'SELECT min(seq) FROM main._sluice_projections'));
  } catch {
    return -1;
  }
}

describe('a nats-server restart under followers', () => {
  test('both resume by themselves with a log line each way, and the target ends equal to the source', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const tgt = path.join(dir, 'cache.db');
      const pub = startCli(['publish', src, '--nats', server.url, '--batch', '10', '--follow', '--json']);
      procs.push(pub);
      // The stream exists once the first snapshot is out; then the subscriber can start.
      await waitFor('the first snapshot', () => pub.stderr().includes('published a snapshot'), 30_000);
      const sub = startCli(['subscribe', tgt, '--nats', server.url, '--source', sourceIdOf(src), '--follow', '--json']);
      procs.push(sub);
      runPython(COMMENT_WRITER, [src, '40']);
      await waitFor('the target to catch up', () => targetSeq(tgt) === sourceSeq(src), 30_000);

      await server.kill();
      await waitFor('both to notice', () => [pub, sub].every((p) => p.stderr().includes('lost the connection to NATS')), 30_000);
      runPython(COMMENT_WRITER, [src, '60']); // committed while the broker is away
      await new Promise((r) => setTimeout(r, 500));
      expect(targetSeq(tgt)).toBeLessThan(sourceSeq(src));
      await server.restart();
      await waitFor('the target to catch up after the restart', () => targetSeq(tgt) === sourceSeq(src), 60_000);
      runPython(COMMENT_WRITER, [src, '10']); // and it goes on following
      await waitFor('the target to follow on', () => targetSeq(tgt) === sourceSeq(src), 30_000);
      for (const p of [pub, sub]) expect(p.stderr(), p.stderr()).toMatch(/reconnected to NATS at nats:\/\/127\.0\.0\.1:\d+; resuming/);

      for (const p of [pub, sub]) p.child.kill('SIGTERM');
      const [pe, se] = await Promise.all([pub.exited, sub.exited]);
      expect(pe.status, pub.stderr()).toBe(0);
      expect(se.status, sub.stderr()).toBe(0);
      expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
      // Every event applied once: the comments mirror counted exactly the source's 110 events.
      expect(scalar(tgt, "SELECT applied_events FROM main._sluice_projections WHERE name = 'comments'")).toBe(110n);
      const out = JSON.parse(sub.stdout().trim()) as { batchesApplied: number; projections: { seq: number }[] };
      expect(out.projections[0]?.seq).toBe(sourceSeq(src));
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await server.dispose();
      removeDir(dir);
    }
  }, 120_000);
});
