// a target whose every mirror of "*" was dropped syncs with nothing to do, says why, and forgets the dropped acknowledgements
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test, expect } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { parseJson, runCliAsync } from '../../cli/support/cli.ts';

/*
 * Review round 6. After `sluice drop TGT t` on a "*" target whose only
 * mirror was t, every later `sluice sync SRC TGT` failed with
 * NOTHING_TO_SYNC "captures no table in images mode ... Run sluice enable
 * SRC t --mode images": t is captured in images mode, and that command
 * changed nothing. The sync stopped before it ran, so the dropped
 * projection's acknowledgement was never forgotten (status said "the next
 * sync of the target forgets it" for good). A target whose mirrors the
 * user dropped is a legitimate state: its sync has nothing to do, exits 0,
 * says each table is left out because it was dropped and how to mirror it
 * again (`--projection '*'`), and forgets the acknowledgement.
 */

test('sync of a "*" target whose only mirror was dropped exits 0, names the drop and the way back, and forgets the acknowledgement', async ({
  tmp,
}) => {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  execFileSync('sqlite3', [src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');"]);
  for (const args of [
    ['enable', src, 't'],
    ['sync', src, tgt],
    ['drop', tgt, 't'],
  ]) {
    const r = await runCliAsync(args);
    expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  }
  const dropped = parseJson(await runCliAsync(['status', src, '--json']), S.statusOutput);
  expect(dropped.consumers.map((c) => c.targetState)).toEqual(['dropped']);

  const json = await runCliAsync(['sync', src, tgt, '--json']);
  expect(json.status, json.stderr).toBe(0);
  const out = parseJson(json, S.syncOutput);
  expect(out.projections).toEqual([]);
  expect(out.forgotten).toEqual([dropped.consumers[0]?.name]);
  expect(out.unmirrored).toHaveLength(1);
  expect(out.unmirrored?.[0]).toMatchObject({ table: 't', mode: 'images' });
  expect(out.unmirrored?.[0]?.why).toMatch(/dropped.*sluice drop.*--projection '\*'/);

  // Forgotten: status lists no consumer, and a sync again says the same without forgetting anything.
  const after = parseJson(await runCliAsync(['status', src, '--json']), S.statusOutput);
  expect(after.consumers).toEqual([]);
  const text = await runCliAsync(['sync', src, tgt]);
  expect(text.status, text.stderr).toBe(0);
  expect(`${text.stdout}${text.stderr}`).toMatch(/t: not mirrored \(.*dropped.*--projection '\*'/);
  expect(`${text.stdout}${text.stderr}`).not.toContain('--mode images');

  // The way back the message names builds the mirror again.
  const back = await runCliAsync(['sync', src, tgt, '--projection', '*', '--json']);
  expect(back.status, back.stderr).toBe(0);
  expect(parseJson(back, S.syncOutput).projections.map((p) => [p.name, p.state, p.snapshotRows])).toEqual([['t', 'active', 2]]);
});
