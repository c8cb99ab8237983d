// health of a subscribed target reads its lag from the url and stream subscribe recorded
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { freePort, NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, sourceSeq } from '../cli/support/cli.ts';
import { readRecordedStreamLags } from '../../src/broker/index.ts';
import { COMMENT_WRITER, defaultStreamName, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * A subscribed target records how it is fed: the broker URL (without
 * credentials), the stream and the source id. health reads the lag there
 * when no --nats is given, so a subscribed target can be green without
 * flags; a broker that cannot be reached at the recorded URL, or a stream
 * that is gone, is a lag that cannot be known, which needs action (exit 3),
 * as before. --nats still overrides the recorded URL.
 */

async function health(tgt: string, ...flags: string[]) {
  const r = await runCliAsync(['health', tgt, '--json', ...flags]);
  return { status: r.status, stderr: r.stderr, stdout: r.stdout, h: parseJson(r, S.healthOutput) };
}

/** A tracker source (comments captured), its source id, a target path beside it and a nats-server, for `fn`; all gone after. */
async function withBroker(fn: (s: { server: NatsServer; src: string; sid: string; tgt: string }) => Promise<void>): Promise<void> {
  const dir = makeDir();
  const server = await NatsServer.start();
  try {
    const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
    await fn({ server, src, sid: sourceIdOf(src), tgt: path.join(dir, 'cache.db') });
  } finally {
    await server.dispose();
    removeDir(dir);
  }
}

describe('health of a subscribed target', () => {
  test('reads the lag from the URL and stream subscribe recorded; unreachable there, it needs action', async () => {
    await withBroker(async ({ server, src, sid, tgt }) => {
      // The publisher is this test's setup: the library the CLI runs (`sluice publish SRC --nats URL --batch 10`).
      const publish = () => publishOnce(src, server.url, { batchSeqs: 10 });
      await publish();
      // Credentials in the URL (nats-server without auth ignores them) are never stored in the target.
      const withSecret = server.url.replace('nats://', 'nats://sluice:s3cret@');
      const sub = await runCliAsync(['subscribe', tgt, '--nats', withSecret, '--source', sid]);
      expect(sub.status, sub.stderr).toBe(0);
      for (const f of [tgt, `${tgt}-wal`]) if (fs.existsSync(f)) expect(fs.readFileSync(f).includes('s3cret'), f).toBe(false);

      const current = await health(tgt);
      expect(current.status, current.stdout).toBe(0);
      expect(current.h.projections[0]).toMatchObject({
        name: 'comments',
        lagEvents: 0,
        sourceSeq: sourceSeq(src),
        needsAction: false,
        fedBy: { via: 'subscribe', url: server.url, stream: defaultStreamName(sid), sourceId: sid },
      });

      runPython(COMMENT_WRITER, [src, '12']);
      await publish();
      const behind = await health(tgt, '--max-lag-events', '5');
      expect(behind.status, behind.stdout).toBe(3);
      expect(behind.h.projections[0]).toMatchObject({ lagEvents: 12, sourceSeq: sourceSeq(src) });

      // An explicit --nats wins over the recorded URL, even where nothing listens.
      const nowhere = `nats://127.0.0.1:${await freePort()}`;
      const elsewhere = await health(tgt, '--nats', nowhere);
      expect(elsewhere.status, elsewhere.stdout).toBe(3);
      expect(elsewhere.h.projections[0]?.problems.join('\n')).toContain(`cannot be read from NATS at ${nowhere} (`);

      await server.kill();
      const away = await health(tgt);
      expect(away.status, away.stdout).toBe(3);
      expect(away.h.projections[0]?.lagEvents).toBeNull();
      expect(away.h.projections[0]?.problems.join('\n')).toContain(`cannot be read from NATS at ${server.url}`);
    });
  }, 120_000);

  test('of a stream published in segments only, counts the segment batches it has not applied (it read the JSONL subject, empty, and said lag 0)', async () => {
    await withBroker(async ({ server, src, sid, tgt }) => {
      const publish = () => publishOnce(src, server.url, { batchSeqs: 10, formats: ['segment'] });
      await publish();
      const sub = await runCliAsync(['subscribe', tgt, '--nats', server.url, '--source', sid, '--format', 'segment']);
      expect(sub.status, sub.stderr).toBe(0);
      const current = await health(tgt);
      expect(current.status, current.stdout).toBe(0);
      expect(current.h.projections[0]).toMatchObject({ name: 'comments', lagEvents: 0, sourceSeq: sourceSeq(src) });

      // The subscriber stopped; the source goes on, and the publisher publishes it (in segments).
      runPython(COMMENT_WRITER, [src, '12']);
      await publish();
      const behind = await health(tgt, '--max-lag-events', '5');
      expect(behind.status, behind.stdout).toBe(3);
      expect(behind.h.projections[0]).toMatchObject({ lagEvents: 12, sourceSeq: sourceSeq(src) });
      expect(behind.h.projections[0]?.lagMs).toBeGreaterThanOrEqual(0);
    });
  }, 120_000);

  test('read with a subscribe entry whose login is in its URL, sends that login to the recorded servers only when they are its own', async () => {
    await withBroker(async ({ server, src, sid, tgt }) => {
      await publishOnce(src, server.url);
      const sub = await runCliAsync(['subscribe', tgt, '--nats', server.url, '--source', sid]);
      expect(sub.status, sub.stderr).toBe(0);
      // The recorded server is now one that writes down how clients log in (and refuses them).
      const port = Number(new URL(server.url).port);
      await server.kill();
      const connects: string[] = [];
      const listener = net.createServer((socket) => {
        let got = '';
        socket.write('INFO {"server_id":"LOGGER","version":"2.10.0","proto":1,"max_payload":1048576,"auth_required":true}\r\n');
        socket.on('data', (d: Buffer) => {
          got += d.toString();
          const line = got.split('\r\n').find((l) => l.startsWith('CONNECT '));
          if (line === undefined) return;
          connects.push(line);
          socket.end("-ERR 'Authorization Violation'\r\n");
        });
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => listener.listen(port, '127.0.0.1', resolve));
      try {
        const secret = 'url-pw-77c2';
        const other = `nats://app:${secret}@127.0.0.1:${await freePort()}`;
        const elsewhere = await readRecordedStreamLags(tgt, { servers: [other] });
        expect(JSON.stringify([...elsewhere])).not.toContain(secret);
        expect(connects.length).toBeGreaterThan(0);
        expect(connects.join('\n')).not.toContain(secret);

        connects.length = 0;
        const same = await readRecordedStreamLags(tgt, { servers: [server.url.replace('nats://', `nats://app:${secret}@`)] });
        expect(JSON.stringify([...same])).not.toContain(secret);
        expect(connects.join('\n')).toContain(`"pass":"${secret}"`);
      } finally {
        await new Promise((resolve) => listener.close(resolve));
      }
    });
  }, 120_000);
});
