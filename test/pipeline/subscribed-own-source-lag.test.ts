// a pipeline file's replica of its own source: its lag is read against the source too, not only the stream
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { NatsServer } from '../support/nats-server.ts';
import { makeDir, removeDir, trackerSource, runCliAsync, parseJson, sourceSeq } from '../cli/support/cli.ts';
import { COMMENT_WRITER, publishOnce, sourceIdOf } from '../broker/support/broker.ts';

/*
 * One file declares a source and a subscription of that same source (a
 * replica fed through the broker). A stream tells only what was published
 * into it: when the publisher no longer writes it (its URL moved to another
 * server, the publisher stopped), the replica reaches the stream's end and
 * the stream says lag 0, while the source, declared in the same file and
 * read right there, goes on. health --config (and /healthz, which runs the
 * same code) said ok, lag 0; it now reads the lag against the source too.
 */

describe('health --config of a replica of the file’s own source', () => {
  test('counts the events the source has and the stream was never given', async () => {
    const dir = makeDir();
    const server = await NatsServer.start();
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['comments']);
      const sid = sourceIdOf(src);
      const replica = path.join(dir, 'replica.db');
      await publishOnce(src, server.url, { batchSeqs: 10 });
      const sub = await runCliAsync(['subscribe', replica, '--nats', server.url, '--source', sid]);
      expect(sub.status, sub.stderr).toBe(0);
      const file = path.join(dir, 'sluice.yml');
      fs.writeFileSync(
        file,
        [
          'sources:',
          '  - path: app.db',
          '    capture: [comments]',
          'subscribe:',
          `  - {nats: "${server.url}", source: ${sid}, path: replica.db, projections: ["*"], health: {maxLagEvents: 5}}`,
          '',
        ].join('\n'),
      );
      const health = async () => {
        const r = await runCliAsync(['health', '--config', file, '--json']);
        const h = parseJson(r, S.pipelineHealthOutput);
        const t = h.targets.find((x) => x.path === replica);
        return { status: r.status, stdout: r.stdout, p: t?.projections.find((x) => x.name === 'comments') };
      };
      const current = await health();
      expect(current.status, current.stdout).toBe(0);
      expect(current.p).toMatchObject({ lagEvents: 0, needsAction: false });

      // The source goes on; nothing publishes it (the stream ends where the replica is).
      runPython(COMMENT_WRITER, [src, '12']);
      const behind = await health();
      expect(behind.status, behind.stdout).toBe(3);
      expect(behind.p).toMatchObject({ lagEvents: 12, sourceSeq: sourceSeq(src), needsAction: true });
      expect(behind.p?.lagMs ?? 0).toBeGreaterThan(0);
      expect(behind.p?.problems.join('\n')).toMatch(/a lag of 12 events is past/);

      // Published: the stream and the source agree again once the replica has it.
      await publishOnce(src, server.url, { batchSeqs: 10 });
      const caught = await runCliAsync(['subscribe', replica, '--nats', server.url, '--source', sid]);
      expect(caught.status, caught.stderr).toBe(0);
      const again = await health();
      expect(again.status, again.stdout).toBe(0);
      expect(again.p).toMatchObject({ lagEvents: 0, sourceSeq: sourceSeq(src) });
    } finally {
      await server.dispose();
      removeDir(dir);
    }
  }, 120_000);
});
