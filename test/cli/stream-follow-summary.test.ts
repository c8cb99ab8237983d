// publish and subscribe follow say a start line and summaries and a snapshot says why it was published
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, trackerSource, startCli, waitFor, runCliAsync, parseJson, sourceSeq, type Spawned } from './support/cli.ts';
import { natsForFile, sourceIdOf, COMMENT_WRITER } from '../broker/support/broker.ts';

/*
 * Output that tells the truth. A published snapshot says why it was published
 * (STREAM_HAD_NO_SNAPSHOT: the stream had none), never a code that reads as
 * its opposite; --json keeps the retired NO_SNAPSHOT_PUBLISHED beside it as
 * `aliases` for one release. publish --follow and subscribe --follow say
 * a start line, a summary every --summary-interval and a last line on
 * SIGTERM, as sync --follow does.
 */

const nats = natsForFile();

describe('publish and subscribe output', () => {
  test('a first snapshot says the stream had none, in text and in --json (with the retired code as its alias)', async () => {
    const dir = makeDir();
    try {
      // Two sources (two streams), one published in text and one in JSON.
      const [a, b] = ['a.db', 'b.db'].map((f) => trackerSource(path.join(dir, f), ['comments']));
      const url = nats.server().url;
      const [text, json] = await Promise.all([
        runCliAsync(['publish', a as string, '--nats', url]),
        runCliAsync(['publish', b as string, '--nats', url, '--json']),
      ]);
      expect(text.status, text.stderr).toBe(0);
      expect(text.stderr).toMatch(
        /^sluice publish: published a snapshot at seq 0 \(600 rows, 2 messages\) because the stream had none \(STREAM_HAD_NO_SNAPSHOT\)$/m,
      );
      expect(text.stderr + text.stdout).not.toContain('NO_SNAPSHOT_PUBLISHED');
      expect(json.status, json.stderr).toBe(0);
      expect(parseJson(json, S.publishOutput).snapshots).toEqual([
        { seq: 0, rows: 600, reason: 'STREAM_HAD_NO_SNAPSHOT', aliases: ['NO_SNAPSHOT_PUBLISHED'] },
      ]);
    } finally {
      removeDir(dir);
    }
  });

  test('publish --follow and subscribe --follow print a start line, summaries as batches flow, and a last line on SIGTERM', async () => {
    const dir = makeDir();
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const tgt = path.join(dir, 'cache.db');
      const url = nats.server().url;
      const pub = startCli(['publish', src, '--nats', url, '--batch', '10', '--follow', '--summary-interval', '200']);
      procs.push(pub);
      await waitFor('the first snapshot', () => pub.stderr().includes('published a snapshot'), 30_000);
      const sub = startCli(['subscribe', tgt, '--nats', url, '--source', sourceIdOf(src), '--follow', '--summary-interval', '200']);
      procs.push(sub);
      await waitFor('the subscriber to start', () => sub.stdout().includes('following stream'), 30_000);
      runPython(COMMENT_WRITER, [src, '30']);
      const seq = sourceSeq(src);
      const moved = (p: Spawned, verb: string) =>
        new RegExp(`^following: [1-9]\\d* events ${verb} in the last 0\\.2s, ${seq} in \\d+ batches since start; at seq ${seq}`, 'm').test(
          p.stdout(),
        );
      await waitFor('a publisher summary with the events', () => moved(pub, 'published'), 30_000);
      await waitFor('a subscriber summary with the events', () => moved(sub, 'applied'), 30_000);

      expect(pub.stdout()).toMatch(
        new RegExp(
          `^following ${src.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: publishing to stream SLUICE_\\S+ at ${url}, from seq 0; a summary every 200 ms, Ctrl-C to stop$`,
          'm',
        ),
      );
      expect(pub.stdout()).toMatch(
        /^following: 0 events published in the last 0\.2s, 0 in 0 batches since start; at seq 0, source at seq 0 \(lag 0 events\)$/m,
      );
      expect(sub.stdout()).toMatch(
        new RegExp(
          `^following stream SLUICE_\\S+ at ${url} into ${tgt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, from the snapshot at seq 0; a summary every 200 ms, Ctrl-C to stop$`,
          'm',
        ),
      );
      expect(sub.stdout()).toMatch(
        new RegExp(
          `^following: \\d+ events applied in the last 0\\.2s, ${seq} in \\d+ batches since start; at seq ${seq}, 0 messages waiting on the stream$`,
          'm',
        ),
      );

      for (const p of [pub, sub]) p.child.kill('SIGTERM');
      const [pe, se] = await Promise.all([pub.exited, sub.exited]);
      expect(pe.status, pub.stderr()).toBe(0);
      expect(se.status, sub.stderr()).toBe(0);
      expect(pub.stdout()).toMatch(
        new RegExp(
          `^stopped by SIGTERM after [\\d.]+s: ${seq} events published in \\d+ batches; at seq ${seq}, source at seq ${seq} \\(lag 0 events\\); saved in .*\\.cursor, where the next publish resumes$`,
          'm',
        ),
      );
      expect(sub.stdout()).toMatch(
        new RegExp(
          `^stopped by SIGTERM after [\\d.]+s: ${seq} events applied in \\d+ batches; committed comments at seq ${seq}, where the next subscribe resumes$`,
          'm',
        ),
      );
    } finally {
      for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      removeDir(dir);
    }
  }, 90_000);
});
