// a target deleted with projections given by file makes the next plain sync exit 3 naming them until built again or forgotten
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { CONSUMERS_TABLE_SQL, LEGACY_CONSUMERS_TABLE_SQL } from '../../../src/capture/index.ts';
import { copyOldFixture } from '../../support/old-fixture.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  scalar,
  expectOneLineError,
  sha256,
  write,
} from '../../cli/support/cli.ts';

/*
 * The source knows its consumers: a sync acknowledges each projection it
 * runs as `<projection>@<target's real path>`. Deleting a target loses the
 * projections it held from --projection files, and a plain sync into that
 * path rebuilds only the mirrors "*" makes: it says so, names each one the
 * source acknowledges and it does not build (CONSUMER_NOT_BUILT), and exits
 * 3, as health does, until the projection is built again or forgotten
 * (`sluice forget`). `sluice drop` records the drop, so the next sync
 * forgets the acknowledgement instead.
 */

let dir: string;
let src: string;
let tgt: string;
let real: string;
const at = (f: string) => path.join(dir, f);

const OPEN = { name: 'open', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number' }, filter: "state = 'open'" };

beforeEach(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
  fs.writeFileSync(at('open.json'), JSON.stringify(OPEN));
  // A target built by the default, then given a definition of its own.
  await sync(src, tgt);
  await sync(src, tgt, { projections: [OPEN as never] });
  real = fs.realpathSync(tgt);
});
afterEach(() => removeDir(dir));

function deleteTarget(): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${tgt}${suffix}`, { force: true });
}
const consumer = () => `open@${real}`;

describe('a target deleted and synced again', () => {
  test('the plain sync rebuilds the mirrors, names the lost map with both fixes and exits 3; health and status say it too; forget clears it', async () => {
    deleteTarget();
    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const out = parseJson(r, S.syncOutput);
    expect(out.projections.map((p) => [p.name, p.state]).sort()).toEqual([
      ['issues', 'active'],
      ['labels', 'active'],
    ]);
    expect(out.lost).toEqual([
      expect.objectContaining({ consumer: consumer(), projection: 'open', kind: 'map', why: 'replaced', code: 'CONSUMER_NOT_BUILT' }),
    ]);
    const message = out.lost?.[0]?.message ?? '';
    expect(message).toContain(`sluice sync ${src} ${real} --projection FILE`);
    expect(message).toContain(`sluice forget ${src} ${consumer()}`);

    const text = await runCliAsync(['sync', src, tgt]);
    expect(text.status).toBe(3);
    expect(text.stdout).toContain('open: CONSUMER_NOT_BUILT: ');

    const health = await runCliAsync(['health', tgt, '--json']);
    expect(health.status, health.stdout).toBe(3);
    const open = parseJson(health, S.healthOutput).projections.find((p) => p.name === 'open');
    expect(open).toMatchObject({ state: 'lost', kind: 'map', reason: 'CONSUMER_NOT_BUILT', needsAction: true });
    expect(open?.action).toContain(`sluice forget ${src} ${consumer()}`);

    const status = await runCliAsync(['status', src, '--json']);
    const c = parseJson(status, S.statusOutput).consumers.find((x) => x.name === consumer());
    expect(c).toMatchObject({ projection: 'open', kind: 'map', target: real, targetState: 'lost' });
    expect(c?.fix).toContain(`sluice forget ${src} ${consumer()}`);
    expect((await runCliAsync(['status', src])).stdout).toContain(`sluice forget ${src} ${consumer()}`);

    const forget = await runCliAsync(['forget', src, consumer(), '--json']);
    expect(forget.status, forget.stderr).toBe(0);
    expect(parseJson(forget, S.forgetOutput)).toMatchObject({ consumer: consumer(), projection: 'open', target: real });
    expect(scalar(src, 'SELECT count(*) FROM _sluice_consumers WHERE name = ?', consumer())).toBe(0n);

    const after = await runCliAsync(['sync', src, tgt, '--json']);
    expect(after.status, after.stderr).toBe(0);
    expect(parseJson(after, S.syncOutput).lost).toBeUndefined();
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });

  test('building it again from its file clears it: that sync and every later plain one exit 0', async () => {
    deleteTarget();
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(3);
    const again = await runCliAsync(['sync', src, tgt, '--projection', at('open.json'), '--json']);
    expect(again.status, again.stderr).toBe(0);
    expect(parseJson(again, S.syncOutput).lost).toBeUndefined();
    const plain = await runCliAsync(['sync', src, tgt, '--json']);
    expect(plain.status, plain.stderr).toBe(0);
    expect(
      parseJson(plain, S.syncOutput)
        .projections.map((p) => p.name)
        .sort(),
    ).toEqual(['issues', 'labels', 'open']);
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });

  test('status prints the forget command beside a consumer whose target is gone', async () => {
    deleteTarget();
    const r = await runCliAsync(['status', src, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const consumers = parseJson(r, S.statusOutput).consumers;
    expect(consumers.map((x) => [x.name, x.targetState]).sort()).toEqual([
      [`issues@${real}`, 'gone'],
      [`labels@${real}`, 'gone'],
      [consumer(), 'gone'],
    ]);
    const text = await runCliAsync(['status', src]);
    expect(text.stdout).toContain(`consumer ${consumer()} at seq`);
    expect(text.stdout).toContain(`its target is gone (no file at that path); forget it: sluice forget ${src} ${consumer()}`);
  });
});

describe('sluice drop', () => {
  test('records the drop: health stays green, and the next sync forgets the acknowledgement instead of exiting 3', async () => {
    const drop = await runCliAsync(['drop', tgt, 'open']);
    expect(drop.status, drop.stderr).toBe(0);
    expect(scalar(tgt, "SELECT count(*) FROM _sluice_dropped WHERE name = 'open'")).toBe(1n);
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
    const status = parseJson(await runCliAsync(['status', src, '--json']), S.statusOutput);
    expect(status.consumers.find((x) => x.name === consumer())?.targetState).toBe('dropped');

    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const out = parseJson(r, S.syncOutput);
    expect(out.lost).toBeUndefined();
    expect(out.forgotten).toEqual([consumer()]);
    expect(scalar(src, 'SELECT count(*) FROM _sluice_consumers WHERE name = ?', consumer())).toBe(0n);
    expect(scalar(tgt, 'SELECT count(*) FROM _sluice_dropped')).toBe(0n);
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
  });

  test('a projection removed by other means than drop is reported (removed), not forgotten', async () => {
    write(tgt, "DELETE FROM _sluice_projections WHERE name = 'open'; DROP TABLE open");
    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    expect(parseJson(r, S.syncOutput).lost).toEqual([expect.objectContaining({ projection: 'open', why: 'removed' })]);
  });
});

describe('sluice forget', () => {
  test('a name the source does not acknowledge is refused, naming those it does; nothing changes', async () => {
    const before = sha256(src);
    const r = await runCliAsync(['forget', src, 'nosuch@/nowhere.db', '--json']);
    expect(r.status).toBe(1);
    expectOneLineError(r, 'CONSUMER_NOT_FOUND');
    expect(r.stderr).toContain(consumer());
    expect(sha256(src)).toBe(before);
  });

  test("a source made by round 2 gains the consumers table's new columns in place at its first acknowledgement; its readers go on, enable accepts it, and forget removes an old row", async ({
    tmp,
  }) => {
    const { source } = copyOldFixture('round2', tmp, []);
    const ddl = () => scalar(source, "SELECT sql FROM sqlite_schema WHERE name = '_sluice_consumers'");
    expect(ddl()).toBe(LEGACY_CONSUMERS_TABLE_SQL);
    const before = await runCliAsync(['changes', source, '--table', 'notes']);
    expect(before.status, before.stderr).toBe(0);
    const cursor = (JSON.parse(before.stdout.trim().split('\n').at(-1) as string) as { cursor: string }).cursor;

    const target = path.join(tmp, 'fresh.db');
    const r = await runCliAsync(['sync', source, target, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(ddl()).toBe(CONSUMERS_TABLE_SQL);
    expect(scalar(source, 'SELECT kind FROM _sluice_consumers WHERE name = ?', `notes@${fs.realpathSync(target)}`)).toBe('mirror');
    // sluice's own DDL: a change-stream reader goes on from its cursor.
    expect((await runCliAsync(['changes', source, '--since', cursor])).status).toBe(0);
    // The namespace gate takes the upgraded table for sluice's own.
    const enable = await runCliAsync(['enable', source, 'notes']);
    expect(enable.status, enable.stderr).toBe(0);

    const old = 'tagged@/work/main/fixtures/round2/defined.sqlite';
    const forget = await runCliAsync(['forget', source, old, '--json']);
    expect(forget.status, forget.stderr).toBe(0);
    expect(parseJson(forget, S.forgetOutput)).toMatchObject({
      consumer: old,
      projection: 'tagged',
      target: '/work/main/fixtures/round2/defined.sqlite',
    });
    expect(scalar(source, 'SELECT count(*) FROM _sluice_consumers WHERE name = ?', old)).toBe(0n);
  });
});
