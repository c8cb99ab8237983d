// verify of a lagging target finds a write to the source that capture did not see, on a key changed after its cursor
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, runCliOk, parseJson, scalar } from '../../cli/support/cli.ts';

/*
 * docs/journal.md: a writer with triggers off (the sqlite3 shell's
 * `.dbconfig enable_trigger off`) writes no events, and "verify finds the
 * difference". For a target behind its source, verify compares each key the
 * journal changed after the cursor as it was at the cursor (its first later
 * event's before image), and so looked at nothing the source did to such a
 * key afterwards: captured writes UPDATE id=1 / DELETE id=2, then the same
 * keys written with triggers off (id=1 'C', id=2 inserted again), and verify
 * said "ok (3 keys at seq 0, 2 changed since and skipped)", exit 0; the next
 * sync applied the journal's images (1='B', 2 absent), exit 0, health green,
 * the target [1=B,3=c] against the source [1=C,2=w,3=c]. A changed key's
 * source row is now also compared with the key's last journaled image (or
 * its absence, after a delete or a key moved away), at the source row
 * itself, before any projection reads it: a difference is a write capture
 * did not see (UNCAPTURED_WRITE), not ok, and nothing is suspended (the
 * target holds what the journal says).
 */

function sh(file: string, sql: string): void {
  const r = spawnSync('sqlite3', [file], { encoding: 'utf8', input: sql });
  if (r.status !== 0 || r.stderr !== '') throw new Error(`sqlite3 ${file}: ${r.stderr}`);
}

/** Writes with the sqlite3 shell's triggers off: writes capture does not see. */
function unseenWrite(file: string, sql: string): void {
  sh(file, `.dbconfig enable_trigger off\n${sql};\n`);
}

async function verifyJson(src: string, tgt: string) {
  const r = await runCliAsync(['verify', src, tgt, '--json']);
  const out = parseJson(r, S.verifyOutput);
  return { status: r.status, stderr: r.stderr, out, byName: Object.fromEntries(out.projections.map((p) => [p.name, p])) };
}

const rows = (file: string, table: string) =>
  scalar(file, `SELECT group_concat(id || '=' || v, ',') FROM (SELECT * FROM ${table} ORDER BY id)`);

async function syncedSource(tmp: string, projections: string[] = []) {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  sh(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER); INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);");
  await runCliOk(['enable', src, 't']);
  await runCliOk(['sync', src, tgt, ...projections.flatMap((p) => ['--projection', p])]);
  return { src, tgt };
}

describe('verify of a target behind its source, whose changed keys were written again with triggers off', () => {
  test('mirror: not ok (exit 3) with UNCAPTURED_WRITE naming the keys, nothing suspended; the repair it names makes verify pass', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedSource(tmp);
    sh(src, "UPDATE t SET v = 'B' WHERE id = 1; DELETE FROM t WHERE id = 2;");
    unseenWrite(src, "UPDATE t SET v = 'C' WHERE id = 1; INSERT INTO t VALUES (2, 'w', 2)");

    const v = await verifyJson(src, tgt);
    expect(v.status, JSON.stringify(v.out)).toBe(3);
    expect(v.byName.t).toMatchObject({ ok: false, reason: 'UNCAPTURED_WRITE', diffs: [] });
    expect(v.byName.t?.skipped).toMatch(/\[1\]/);
    expect(v.byName.t?.skipped).toMatch(/\[2\]/);
    expect(v.byName.t?.repair).toMatch(/sluice bump/);
    // The target holds what the journal says: no hand edit, nothing suspended.
    expect(scalar(tgt, 'SELECT state FROM _sluice_projections')).toBe('active');

    // The text output names it too.
    const text = await runCliAsync(['verify', src, tgt]);
    expect(text.status).toBe(3);
    expect(text.stdout).toMatch(/t: NOT VERIFIED UNCAPTURED_WRITE/);

    // The repair: every reader of the source rebuilt from its rows as they are.
    await runCliOk(['bump', src, '--reason', 'wrote t with triggers off']);
    await runCliOk(['sync', src, tgt]);
    const after = await verifyJson(src, tgt);
    expect(after.status, JSON.stringify(after.out)).toBe(0);
    expect(rows(tgt, 't')).toBe(rows(src, 't'));
  });

  test('map with a filter: found at the source row, before the map reads it (a column it does not read, a row its filter drops)', async ({
    tmp,
  }) => {
    const def = path.join(tmp, 'm.json');
    fs.writeFileSync(
      def,
      JSON.stringify({ name: 'm', source: 't', kind: 'map', target: 'tm', columns: { id: 'id', v: 'v' }, filter: 'n > 0' }),
    );
    const { src, tgt } = await syncedSource(tmp, [def]);
    sh(src, "UPDATE t SET v = 'B' WHERE id = 1; UPDATE t SET v = 'D' WHERE id = 3;");
    // id=1: a column the map does not read; id=3: the filter now drops the row.
    unseenWrite(src, 'UPDATE t SET n = 10 WHERE id = 1; UPDATE t SET n = 0 WHERE id = 3');

    const v = await verifyJson(src, tgt);
    expect(v.status, JSON.stringify(v.out)).toBe(3);
    expect(v.byName.m).toMatchObject({ ok: false, reason: 'UNCAPTURED_WRITE', diffs: [] });
    expect(v.byName.m?.skipped).toMatch(/\[1\]/);
    expect(v.byName.m?.skipped).toMatch(/\[3\]/);
  });

  test('captured writes only (updates, a key moved, deleted and made again, made and deleted): ok, exit 0', async ({ tmp }) => {
    const { src, tgt } = await syncedSource(tmp);
    sh(
      src,
      [
        "UPDATE t SET v = 'B' WHERE id = 1",
        "UPDATE t SET v = 'BB', n = 1.5 WHERE id = 1",
        'UPDATE t SET id = 20 WHERE id = 2',
        'DELETE FROM t WHERE id = 3',
        "INSERT INTO t VALUES (3, 'again', '7')",
        "INSERT INTO t VALUES (4, 'gone', NULL)",
        'DELETE FROM t WHERE id = 4',
        "INSERT OR REPLACE INTO t VALUES (20, 'replaced', 0)",
      ].join('; ') + ';',
    );
    const v = await verifyJson(src, tgt);
    expect(v.status, JSON.stringify(v.out)).toBe(0);
    expect(v.byName.t).toMatchObject({ ok: true });
    expect(v.byName.t?.inFlight).toBeGreaterThan(0);
  });
});
