// a publisher whose state file lags the stream (its last writes lost to a kill) leaves the file at the stream's position even when it finds nothing more to publish
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, runSqliteCli } from '../support/fixtures.ts';
import { decodeCursor } from '../../src/feed/index.ts';
import { defaultStreamName } from '../../src/broker/index.ts';
import { runCliOk, makeDir, removeDir, sourceSeq } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';

/*
 * A publisher SIGKILLed can have had acknowledgements the broker gave it
 * that never reached its state file (it is written behind the
 * acknowledgements). The next run goes on from the stream, which is
 * further; but when it then found nothing more to publish it wrote nothing,
 * and the state file kept saying an older seq was the last published (what
 * an operator, and the killed-publisher test, read as where publish got).
 */

const nats = natsForFile();
let dir: string;
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

test('publish finding nothing more to publish leaves its state file at the stream, not at the older seq the file said', async () => {
  const url = nats.server().url;
  const src = path.join(dir, 'app.db');
  runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');");
  await runCliOk(['enable', src, 't']);
  runSqliteCli(src, "INSERT INTO t VALUES (2, 'b'); INSERT INTO t VALUES (3, 'c');");
  await runCliOk(['publish', src, '--nats', url]);
  const stateFile = `${src}.publish-${defaultStreamName(sourceIdOf(src))}.cursor`;
  const older = fs.readFileSync(stateFile, 'utf8');
  runSqliteCli(src, "INSERT INTO t VALUES (4, 'd'); UPDATE t SET v = 'A' WHERE id = 1;");
  await runCliOk(['publish', src, '--nats', url]);
  const seqOf = () => decodeCursor(fs.readFileSync(stateFile, 'utf8').trim()).seq;
  expect(seqOf()).toBe(sourceSeq(src));
  // Its last write lost: the file says the older position, the stream holds the newer.
  fs.writeFileSync(stateFile, older);
  expect(seqOf()).toBeLessThan(sourceSeq(src));
  await runCliOk(['publish', src, '--nats', url]);
  expect(seqOf()).toBe(sourceSeq(src));
});
