// a stream whose snapshot's end carries no Sluice-Snapshot-Parts header (published by the previous release) is read as before
import path from 'node:path';
import { connect, headers } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, scalar } from '../cli/support/cli.ts';
import { defaultStreamName, natsForFile, publishOnce, sourceIdOf, streamMessages } from './support/broker.ts';

/*
 * The snapshot's end message now says how many parts came before it
 * (Sluice-Snapshot-Parts), so that a reader can tell a part gone missing.
 * A stream published by the release before has no such header, and NATS
 * answers a missing header with an empty string: read as "0 parts", every
 * new subscriber of such a stream took its snapshot for gone and failed
 * BROKER_NO_SNAPSHOT, leaving an empty target, and publishing again did not
 * help. A missing header counts nothing.
 */

const nats = natsForFile();

describe('a stream published before snapshots counted their parts', () => {
  test('a new subscriber builds from its snapshot and ends with the source', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      runSqliteCli(
        src,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50) INSERT INTO t SELECT i, 'v' || i FROM c;",
      );
      expect((await runCliAsync(['enable', src, 't'])).status).toBe(0);
      await publishOnce(src, url);
      runSqliteCli(src, "UPDATE t SET v = 'later' WHERE id = 7; INSERT INTO t VALUES (51, 'new');");
      await publishOnce(src, url);

      // The same messages, in a stream made again, without the header (as the release before published them).
      const stream = defaultStreamName(sourceIdOf(src));
      const messages = await streamMessages(url, stream);
      expect(messages.some((m) => m.header.has('Sluice-Snapshot-Parts'))).toBe(true);
      const nc = await connect({ servers: url });
      try {
        const jsm = await jetstreamManager(nc);
        const { config } = await jsm.streams.info(stream);
        await jsm.streams.delete(stream);
        await jsm.streams.add(config);
        const js = jetstream(nc);
        for (const m of messages) {
          const h = headers();
          for (const [k, vs] of m.header) if (k !== 'Sluice-Snapshot-Parts') for (const v of vs) h.append(k, v);
          await js.publish(m.subject, m.data, { headers: h });
        }
      } finally {
        await nc.close();
      }
      expect((await streamMessages(url, stream)).some((m) => m.header.has('Sluice-Snapshot-Parts'))).toBe(false);

      const tgt = path.join(dir, 'T.db');
      const r = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sourceIdOf(src)]);
      expect(r.status, r.stderr).toBe(0);
      expect(scalar(tgt, 'SELECT count(*) FROM t')).toBe(51n);
      expect(scalar(tgt, 'SELECT v FROM t WHERE id = 7')).toBe('later');
    } finally {
      removeDir(dir);
    }
  }, 60_000);
});
