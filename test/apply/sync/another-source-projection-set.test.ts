// a plain sync of one source leaves alone the projections a target holds of another source file that is still there
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { expectOneLineError, parseJson, runCliAsync, sha256 } from '../../cli/support/cli.ts';

/*
 * One target fed by two sources: "*" (mirror t) of A.db, and a map m of
 * B.db given with --projection. A plain `sluice sync A.db T.db` ran every
 * projection the target stores, m included: it compiled m against A, found
 * its cursor of another capture and rebuilt it from A's rows
 * (SOURCE_CHANGED, exit 0, health green), silently replacing the rows of
 * B. SOURCE_CHANGED is for a source file replaced or enabled again at the
 * same path (or moved), not for another file that is still there.
 *
 * A plain sync runs the target's projections of its source, by the rule
 * verify uses to decide which projections are the source's business: those
 * of its capture, of its file, or of no file that is still there. m is left
 * to `sync B.db T.db`, and health still reads its lag from B.db. An explicit
 * `--projection m.json` on a sync of A.db still builds m from A.db.
 */

const sql = (db: string, q: string) => execFileSync('sqlite3', [db, q], { encoding: 'utf8' }).trim();

async function run(args: string[], status = 0) {
  const r = await runCliAsync(args);
  expect(r.status, `sluice ${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(status);
  return r;
}

/** Sources A.db and B.db, each t(id, v), captured; T.db holds A's "*" mirror t and B's map m (m.json). */
async function twoSources(tmp: string): Promise<{ a: string; b: string; t: string; map: string }> {
  const at = (f: string) => path.join(tmp, f);
  const a = at('A.db');
  const b = at('B.db');
  const t = at('T.db');
  const map = at('m.json');
  sql(a, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'A1');");
  sql(b, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'B1'),(2,'B2');");
  fs.writeFileSync(map, JSON.stringify({ name: 'm', source: 't', kind: 'map', columns: { id: 'id', v: 'v' } }));
  await run(['enable', a, 't']);
  await run(['enable', b, 't']);
  await run(['sync', a, t]);
  await run(['sync', b, t, '--projection', map]);
  return { a, b, t, map };
}

describe('a target fed by two source files', () => {
  test("a plain sync of one leaves the other source's map as it is, and health reads its lag from that source", async ({ tmp }) => {
    const { a, b, t, map } = await twoSources(tmp);
    sql(b, "INSERT INTO t VALUES(3,'B3')");
    sql(a, "INSERT INTO t VALUES(5,'A5')");

    const s = parseJson(await run(['sync', a, t, '--json']), S.syncOutput);
    expect(s.projections.map((p) => p.name)).toEqual(['t']);
    expect(s.projections[0]).not.toHaveProperty('rebuilt');
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM t ORDER BY id)")).toBe('1A1 5A5');
    // m is B's: as sync B left it.
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM m ORDER BY id)")).toBe('1B1 2B2');
    const text = await run(['sync', a, t]);
    expect(text.stdout).not.toMatch(/\bm\b.*rebuilt/);

    // health reads m's lag from B (one event behind), and t's from A (caught up).
    const h = parseJson(await runCliAsync(['health', t, '--json']), S.healthOutput);
    const byName = Object.fromEntries(h.projections.map((p) => [p.name, p]));
    expect(byName.m, JSON.stringify(h)).toMatchObject({ sourcePath: b, lagEvents: 1 });
    expect(byName.t, JSON.stringify(h)).toMatchObject({ sourcePath: a, lagEvents: 0 });

    // A plain sync of B feeds m, and leaves A's mirror t as it is.
    const sb = parseJson(await run(['sync', b, t, '--json']), S.syncOutput);
    expect(sb.projections.map((p) => p.name)).toEqual(['m']);
    expect(sb.projections[0]).not.toHaveProperty('rebuilt');
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM m ORDER BY id)")).toBe('1B1 2B2 3B3');
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM t ORDER BY id)")).toBe('1A1 5A5');
    // "*" is still A's: a table A captures later is mirrored by sync A, not by sync B.
    expect(sql(t, "SELECT source_path FROM _sluice_projection_set WHERE member = '*'")).toBe(a);

    // explain says what those plain syncs do, and verify answers for the same projections.
    const ea = parseJson(await run(['explain', a, t, '--json']), S.explainOutput);
    expect(ea.projections.map((p) => p.name)).toEqual(['t']);
    const eb = parseJson(await run(['explain', b, t, '--json']), S.explainOutput);
    expect(eb.projections.map((p) => p.name)).toEqual(['m']);
    const va = parseJson(await run(['verify', a, t, '--json']), S.verifyOutput);
    expect(va.projections.map((p) => p.name)).toEqual(['t']);
    const vb = parseJson(await run(['verify', b, t, '--json']), S.verifyOutput);
    expect(vb.projections.map((p) => p.name)).toEqual(['m']);
    await run(['health', t]);
  });

  test("an explicit --projection of the other source's map on a sync of A builds it from A", async ({ tmp }) => {
    const { a, b, t, map } = await twoSources(tmp);

    const s = parseJson(await run(['sync', a, t, '--projection', map, '--json']), S.syncOutput);
    expect(s.projections.map((p) => [p.name, p.rebuilt])).toEqual([['m', 'SOURCE_CHANGED']]);
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM m ORDER BY id)")).toBe('1A1');
    // From now on m is A's: a plain sync of A runs it, one of B leaves it.
    sql(a, "INSERT INTO t VALUES(5,'A5')");
    const again = parseJson(await run(['sync', a, t, '--json']), S.syncOutput);
    expect(again.projections.map((p) => p.name).sort()).toEqual(['m', 't']);
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM m ORDER BY id)")).toBe('1A1 5A5');
  });

  test("B.db moved away for a while: a plain sync of A leaves B's map as it is, and a sync of B feeds it again once it is back", async ({
    tmp,
  }) => {
    const { a, b, t } = await twoSources(tmp);
    const away = path.join(tmp, 'away');
    fs.mkdirSync(away);
    sql(b, 'PRAGMA wal_checkpoint(TRUNCATE)');
    const moved = fs.readdirSync(tmp).filter((f) => f.startsWith('B.db'));
    for (const f of moved) fs.renameSync(path.join(tmp, f), path.join(away, f));
    sql(a, "INSERT INTO t VALUES(5,'A5')");

    // m's recorded source is B.db (its capture and its file): not A's, though B.db is not there now.
    const s = parseJson(await run(['sync', a, t, '--json']), S.syncOutput);
    expect(s.projections.map((p) => p.name)).toEqual(['t']);
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM m ORDER BY id)")).toBe('1B1 2B2');
    expect(sql(t, "SELECT source_path FROM _sluice_projections WHERE name = 'm'")).toBe(b);
    expect(parseJson(await run(['explain', a, t, '--json']), S.explainOutput).projections.map((p) => p.name)).toEqual(['t']);
    expect(parseJson(await run(['verify', a, t, '--json']), S.verifyOutput).projections.map((p) => p.name)).toEqual(['t']);

    for (const f of moved) fs.renameSync(path.join(away, f), path.join(tmp, f));
    sql(b, "UPDATE t SET v = 'B1new' WHERE id = 1");
    const sb = parseJson(await run(['sync', b, t, '--json']), S.syncOutput);
    expect(sb.projections.map((p) => p.name)).toEqual(['m']);
    expect(sb.projections[0]).not.toHaveProperty('rebuilt');
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM m ORDER BY id)")).toBe('1B1new 2B2');
    const vb = parseJson(await run(['verify', b, t, '--json']), S.verifyOutput);
    expect(vb.projections.map((p) => [p.name, p.ok])).toEqual([['m', true]]);
    await run(['health', t]);
  });

  test('a plain sync (and explain, verify, sync --follow) of a third source that the target holds nothing of is refused, NO_PROJECTIONS_OF_SOURCE, writing nothing', async ({
    tmp,
  }) => {
    const { t } = await twoSources(tmp);
    const c = path.join(tmp, 'C.db');
    sql(c, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'C1');");
    await run(['enable', c, 't']);
    sql(t, 'PRAGMA wal_checkpoint(TRUNCATE)');
    const before = sha256(t);

    for (const args of [
      ['sync', c, t],
      ['sync', c, t, '--json'],
      ['sync', c, t, '--follow'],
      ['explain', c, t],
      ['verify', c, t],
    ]) {
      const r = await run(args, 1);
      expectOneLineError(r, 'NO_PROJECTIONS_OF_SOURCE');
      // With --json, the same error as the one object on stdout.
      if (args.includes('--json'))
        expect(JSON.parse(r.stdout), args.join(' ')).toMatchObject({ error: { code: 'NO_PROJECTIONS_OF_SOURCE' } });
      else expect(r.stdout, args.join(' ')).toBe('');
      // It names the target, the source, whose projections the target holds, and the way to build some of this source's.
      expect(r.stderr).toContain(`Target ${t} holds no projection of source ${c}`);
      expect(r.stderr).toContain(path.join(tmp, 'A.db'));
      expect(r.stderr).toContain(path.join(tmp, 'B.db'));
      expect(r.stderr).toContain(`sluice sync ${c} ${t} --projection`);
    }
    expect(sha256(t)).toBe(before);
    expect(sql(c, 'SELECT count(*) FROM _sluice_consumers')).toBe('0');

    // A definition given with it builds from C, beside A's and B's.
    const mc = path.join(tmp, 'mc.json');
    fs.writeFileSync(mc, JSON.stringify({ name: 'mc', source: 't', kind: 'map', columns: { id: 'id', v: 'v' } }));
    await run(['sync', c, t, '--projection', mc]);
    expect(sql(t, "SELECT group_concat(id || v, ' ') FROM (SELECT * FROM mc ORDER BY id)")).toBe('1C1');
    const sc = parseJson(await run(['sync', c, t, '--json']), S.syncOutput);
    expect(sc.projections.map((p) => p.name)).toEqual(['mc']);
    // A new target still gets "*" of the source.
    const fresh = path.join(tmp, 'T2.db');
    const s2 = parseJson(await run(['sync', c, fresh, '--json']), S.syncOutput);
    expect(s2.projections.map((p) => p.name)).toEqual(['t']);
  });
});
