// publish and subscribe follow metrics serve the documented names and move as batches flow
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython, ROOT } from '../support/fixtures.ts';
import { documentedMetrics, sample, scrape, scrapeUntil, type Scrape } from '../support/metrics.ts';
import { NatsServer, freePort } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, startCli, waitFor, sourceSeq, type Spawned } from './support/cli.ts';
import { sourceIdOf, COMMENT_WRITER } from '../broker/support/broker.ts';

/*
 * `publish --follow --metrics` and `subscribe --follow --metrics` as a user
 * runs them: real processes on a real nats-server, a Python writer, scrapes
 * over HTTP. Every name docs/metrics.md lists for the command is served with
 * its type; the publisher's counters and ack time move as batches are acked;
 * the subscriber's per projection counters, commit time and stream lag move
 * as it applies, and its lag, read from the stream, is 0 once caught up.
 */

const of = sample;

describe('publish and subscribe --follow --metrics', () => {
  test('serve their documented names, and the counters, commit and ack times and stream lag move as batches flow', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    const procs: Spawned[] = [];
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const tgt = path.join(dir, 'cache.db');
      const [pubPort, subPort] = [await freePort(), await freePort()];
      const pub = startCli(['publish', src, '--nats', server.url, '--batch', '10', '--follow', '--metrics', `127.0.0.1:${pubPort}`]);
      procs.push(pub);
      await waitFor('the first snapshot', () => pub.stderr().includes('published a snapshot'), 30_000);
      const id = sourceIdOf(src);
      const sub = startCli(['subscribe', tgt, '--nats', server.url, '--source', id, '--follow', '--metrics', `127.0.0.1:${subPort}`]);
      procs.push(sub);
      const p = 'projection="comments"';
      let s = await scrapeUntil(subPort, (x) => (of(x, 'sluice_batches_total', p) ?? 0) >= 1); // the snapshot

      for (const [port, command] of [
        [pubPort, 'publish'],
        [subPort, 'subscribe'],
      ] as const) {
        const docs = documentedMetrics(command);
        expect(docs.size, command).toBeGreaterThanOrEqual(4);
        const first = await scrape(port);
        for (const [name, type] of docs) expect(first.types.get(name), `${command} ${name}`).toBe(type);
        for (const name of first.types.keys()) expect(docs.has(name), `${command} serves ${name} undocumented`).toBe(true);
      }

      const pub0 = await scrape(pubPort);
      // Its one stream label, as served (the default stream name).
      const key = [...pub0.values.keys()].find((k) => k.startsWith('sluice_published_events_total{')) ?? '';
      const streamLabel = key.slice(key.indexOf('{') + 1, -1);
      expect(streamLabel).toMatch(/^stream="SLUICE_/);
      expect(of(pub0, 'sluice_published_events_total', streamLabel)).toBe(0);
      const committed0 = of(s, 'sluice_last_commit_time_seconds', p) ?? 0;
      expect(Math.abs(committed0 - Date.now() / 1000)).toBeLessThan(60);
      const applied0 = of(s, 'sluice_events_applied_total', p) ?? 0;

      runPython(COMMENT_WRITER, [src, '30']);
      const pubNow = await scrapeUntil(pubPort, (x) => (of(x, 'sluice_published_events_total', streamLabel) ?? 0) >= 30);
      expect(of(pubNow, 'sluice_published_events_total', streamLabel)).toBe(30);
      expect(of(pubNow, 'sluice_published_batches_total', streamLabel)).toBeGreaterThanOrEqual(3);
      expect(of(pubNow, 'sluice_published_duplicates_total', streamLabel)).toBe(0);
      expect(of(pubNow, 'sluice_last_ack_time_seconds', streamLabel)).toBeGreaterThan(Date.now() / 1000 - 60);

      s = await scrapeUntil(subPort, (x) => (of(x, 'sluice_events_applied_total', p) ?? 0) >= applied0 + 30);
      expect(of(s, 'sluice_events_applied_total', p)).toBe(applied0 + 30);
      expect(of(s, 'sluice_last_commit_time_seconds', p)).toBeGreaterThanOrEqual(committed0);
      s = await scrapeUntil(subPort, (x) => of(x, 'sluice_lag_events', p) === 0);
      expect(of(s, 'sluice_lag_events', p)).toBe(0);
      expect(of(s, 'sluice_lag_ms', p)).toBe(0);

      expect(sourceSeq(src)).toBeGreaterThan(0);
      for (const x of procs) x.child.kill('SIGTERM');
      for (const x of procs) expect((await x.exited).status, x.stderr()).toBe(0);
    } finally {
      for (const x of procs) if (x.child.exitCode === null) x.child.kill('SIGKILL');
      await server.dispose();
      removeDir(dir);
    }
  }, 120_000);
});
