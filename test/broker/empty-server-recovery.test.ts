// followers recover from a nats server that comes back empty and health never calls an unknown lag ok
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { decodeCursor } from '../../src/feed/index.ts';
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
  runCliAsync,
  parseJson,
  type Spawned,
  projectionSeq,
} from '../cli/support/cli.ts';
import { COMMENT_WRITER, defaultStreamName, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * A nats-server that comes back on a new, empty store (its streams and
 * consumers gone, as after losing its disk): a following publisher makes the
 * stream again and publishes on (a JetStream API error during recovery is
 * waited out like a lost connection), a following subscriber makes its
 * consumer again and catches up, rebuilding from the published snapshot when
 * its cursor is not in the new stream. While it cannot be known how far a
 * subscribed target is behind, health says so and exits 3, never ok.
 */

async function health(tgt: string, ...flags: string[]) {
  const r = await runCliAsync(['health', tgt, '--json', ...flags]);
  return { status: r.status, stderr: r.stderr, h: r.status === 0 || r.status === 3 ? parseJson(r, S.healthOutput) : undefined };
}

describe('a nats-server that comes back empty', () => {
  test('publish --follow makes the stream again, publishes a snapshot and goes on; a new subscriber gets the whole source', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const published = () => publishedSeq(src, sid);
      const pub = startCli(['publish', src, '--nats', server.url, '--batch', '10', '--follow', '--json']);
      procs.push(pub);
      await waitFor('the first snapshot', () => pub.stderr().includes('published a snapshot'), 30_000);
      runPython(COMMENT_WRITER, [src, '15']);
      await waitFor('the publisher to publish the first events', () => published() === sourceSeq(src), 30_000);

      await server.kill();
      await waitFor('the publisher to notice', () => pub.stderr().includes('lost the connection to NATS'), 30_000);
      runPython(COMMENT_WRITER, [src, '20']); // committed while the broker is away
      await server.restartEmpty();
      runPython(COMMENT_WRITER, [src, '5']);
      await waitFor(
        'the publisher to publish everything on the new stream',
        () => pub.child.exitCode !== null || published() === sourceSeq(src),
        60_000,
      );
      expect(pub.child.exitCode, pub.stderr()).toBeNull();
      // The new stream holds a snapshot (the old one went with the store), so a new subscriber can start.
      await waitFor('a snapshot on the new stream', () => pub.stderr().split('published a snapshot').length === 3, 30_000);
      const tgt = path.join(dir, 'fresh.db');
      const sub = await runCliAsync(['subscribe', tgt, '--nats', server.url, '--source', sid, '--json']);
      expect(sub.status, sub.stderr).toBe(0);
      expect(projectionSeq(tgt, 'comments')).toBe(sourceSeq(src));
      expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));

      pub.child.kill('SIGTERM');
      const e = await pub.exited;
      expect(e.status, pub.stderr()).toBe(0);
      const out = parseJson({ stdout: pub.stdout(), stderr: pub.stderr() }, S.publishOutput);
      expect(out.seq).toBe(sourceSeq(src));
      expect(out.snapshots).toHaveLength(2);
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await server.dispose();
      removeDir(dir);
    }
  }, 120_000);

  for (const cursorInNewStream of [true, false]) {
    test(`subscribe --follow makes its consumer again and catches up (${cursorInNewStream ? 'its cursor is in the new stream: it goes on from it' : 'its cursor is not in the new stream: it rebuilds from the snapshot'}); health exits 3 while the lag cannot be read`, async () => {
      const dir = makeDir();
      const server = await NatsServer.start();
      const procs: Spawned[] = [];
      try {
        const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
        const sid = sourceIdOf(src);
        const tgt = path.join(dir, 'cache.db');
        // The publisher is this test's setup: the library the CLI runs (`sluice publish SRC --nats URL --batch 10`).
        const publish = () => publishOnce(src, server.url, { batchSeqs: 10 });
        await publish();
        const sub = startCli(['subscribe', tgt, '--nats', server.url, '--source', sid, '--follow', '--json']);
        procs.push(sub);
        runPython(COMMENT_WRITER, [src, '12']);
        await publish();
        await waitFor('the subscriber to catch up', () => projectionSeq(tgt, 'comments') === sourceSeq(src), 30_000);
        // A subscribed target has no source to read its lag from: health reads it from the stream, at the URL the
        // subscriber recorded or the one given with --nats.
        const [recorded, seen] = await Promise.all([health(tgt), health(tgt, '--nats', server.url)]);
        expect(recorded.status, recorded.stderr).toBe(0);
        expect(recorded.h?.projections[0]).toMatchObject({ lagEvents: 0, sourceSeq: sourceSeq(src), needsAction: false });
        expect(seen.status, seen.stderr).toBe(0);
        expect(seen.h?.projections[0]).toMatchObject({ lagEvents: 0, sourceSeq: sourceSeq(src), needsAction: false });

        await server.kill();
        await waitFor('the subscriber to notice', () => sub.stderr().includes('lost the connection to NATS'), 30_000);
        // Without the stream, health cannot call it ok.
        const blind = await health(tgt);
        expect(blind.status, blind.stderr).toBe(3);
        expect(blind.h?.projections[0]?.problems.join('\n')).toMatch(/lag .*cannot be read from NATS.*--nats/);
        runPython(COMMENT_WRITER, [src, '20']); // committed while the broker is away
        await server.restartEmpty();
        // The stream is gone: how far the target is behind cannot be known.
        const gone = await health(tgt, '--nats', server.url);
        expect(gone.status, gone.stderr).toBe(3);
        expect(gone.h?.projections[0]?.problems.join('\n')).toContain(defaultStreamName(sid));
        if (!cursorInNewStream) fs.rmSync(`${src}.publish-${defaultStreamName(sid)}.cursor`); // a publisher that starts afresh
        await publish(); // makes the stream again
        runPython(COMMENT_WRITER, [src, '7']);
        await publish();
        await waitFor(
          'the subscriber to catch up on the new stream',
          () => sub.child.exitCode !== null || projectionSeq(tgt, 'comments') === sourceSeq(src),
          60_000,
        );
        expect(sub.child.exitCode, sub.stderr()).toBeNull();
        expect(projectionSeq(tgt, 'comments'), sub.stderr()).toBe(sourceSeq(src));
        runPython(COMMENT_WRITER, [src, '3']); // and it goes on following
        await publish();
        await waitFor('the subscriber to follow on', () => projectionSeq(tgt, 'comments') === sourceSeq(src), 30_000);
        if (!cursorInNewStream) expect(sub.stderr()).toContain('SUBSCRIBER_BEHIND_STREAM');
        const back = await health(tgt, '--nats', server.url);
        expect(back.status, back.stderr).toBe(0);

        sub.child.kill('SIGTERM');
        const e = await sub.exited;
        expect(e.status, sub.stderr()).toBe(0);
        expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
        // Every event applied once (or rebuilt from the snapshot): the mirror is exact either way.
        if (cursorInNewStream)
          expect(scalar(tgt, "SELECT applied_events FROM main._sluice_projections WHERE name = 'comments'")).toBe(BigInt(sourceSeq(src)));
      } finally {
        for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
        await server.dispose();
        removeDir(dir);
      }
    }, 120_000);
  }
});

/** The seq the publisher has recorded as acknowledged (0 before its state file exists). */
function publishedSeq(src: string, sid: string): number {
  try {
    return decodeCursor(fs.readFileSync(`${src}.publish-${defaultStreamName(sid)}.cursor`, 'utf8').trim()).seq;
  } catch {
    return 0;
  }
}
