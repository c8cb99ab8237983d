// a target built by the default mirrors every captured table including one enabled after its first sync
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { enable, disable } from '../../../src/capture/index.ts';
import type { CaptureMode } from '../../../src/capture/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  scalar,
  expectOneLineError,
  write,
  startCli,
  waitFor,
  type Spawned,
} from '../../cli/support/cli.ts';

/*
 * `sync SRC TGT` with no --projection mirrors every captured table, and the
 * target remembers that as a member of its projection set ("*"), not as the
 * mirrors it happened to make: a table enabled after the first sync is
 * mirrored by the next one (health says it is not mirrored yet meanwhile),
 * while a target built from definitions keeps exactly its stored set.
 */

let dir: string;
let src: string;
let tgt: string;
let running: Spawned | undefined;
const at = (f: string) => path.join(dir, f);

beforeEach(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
  removeDir(dir);
});

/** Setup that is not under test goes through the library (a CLI spawn costs ~1 s). */
function capture(table: string, mode: CaptureMode = 'images'): void {
  const db = openDatabase(src);
  try {
    enable(db, [table], { mode });
  } finally {
    db.close();
  }
}
async function defaultSync(): Promise<void> {
  await sync(src, tgt);
}

const names = (r: { stdout: string; stderr: string }) =>
  parseJson(r, S.syncOutput)
    .projections.map((p) => p.name)
    .sort();
const stored = (file: string) =>
  (scalar(file, "SELECT group_concat(name, ',') FROM (SELECT name FROM _sluice_projections ORDER BY name)") as string).split(',');

describe('a target built by the default', () => {
  test('mirrors a table enabled after its first sync: health exits 3 until the next sync mirrors it, then sync, health and verify agree with the source', async () => {
    const first = await runCliAsync(['sync', src, tgt, '--json']);
    expect(first.status, first.stderr).toBe(0);
    expect(names(first)).toEqual(['issues', 'labels']);

    capture('comments');
    const pending = await runCliAsync(['health', tgt, '--json']);
    expect(pending.status, pending.stdout).toBe(3);
    const comments = parseJson(pending, S.healthOutput).projections.find((p) => p.name === 'comments');
    expect(comments).toMatchObject({ kind: 'mirror', state: 'pending', needsAction: true });
    expect(comments?.action).toContain(`sluice sync ${src} ${tgt}`);

    const second = await runCliAsync(['sync', src, tgt, '--json']);
    expect(second.status, second.stderr).toBe(0);
    expect(names(second)).toEqual(['comments', 'issues', 'labels']);
    expect(dumpTables(tgt, ['comments'])).toEqual(dumpTables(src, ['comments']));
    const health = await runCliAsync(['health', tgt]);
    expect(health.status, health.stdout).toBe(0);
    const verify = await runCliAsync(['verify', src, tgt, '--json']);
    expect(verify.status, verify.stdout).toBe(0);
    expect(
      parseJson(verify, S.verifyOutput)
        .projections.map((p) => p.name)
        .sort(),
    ).toEqual(['comments', 'issues', 'labels']);
  });

  test('under sync --follow: a table enabled while it runs is mirrored, and followed', async () => {
    running = startCli(['sync', src, tgt, '--follow', '--json']);
    const f = running;
    await waitFor('the first pass', () => f.stdout().includes('\n'));
    capture('comments');
    const same = () => JSON.stringify(dumpTables(tgt, ['comments'])) === JSON.stringify(dumpTables(src, ['comments']));
    await waitFor('comments mirrored', same, 20_000);
    write(src, "UPDATE comments SET body = 'followed' WHERE id = 1");
    await waitFor('the update followed', () => scalar(tgt, 'SELECT body FROM comments WHERE id = 1') === 'followed', 20_000);
    f.child.kill('SIGTERM');
    expect((await f.exited).status, f.stderr()).toBe(0);
  });

  test('verify does not call ok a target that lacks the mirror of a captured table', async () => {
    await defaultSync();
    capture('comments');
    const verify = await runCliAsync(['verify', src, tgt, '--json']);
    expect(verify.status, verify.stdout).toBe(3);
    expect(parseJson(verify, S.verifyOutput).projections.find((p) => p.name === 'comments')).toMatchObject({ ok: false });
  });

  test('a definition given beside "*" is added to the set: a later plain sync runs both, and still mirrors new tables', async () => {
    await defaultSync();
    fs.writeFileSync(
      at('open.json'),
      JSON.stringify({
        name: 'open',
        source: 'issues',
        kind: 'map',
        columns: { repo_id: 'repo_id', number: 'number' },
        filter: "state = 'open'",
      }),
    );
    const add = await runCliAsync(['sync', src, tgt, '--projection', at('open.json'), '--json']);
    expect(add.status, add.stderr).toBe(0);
    expect(names(add)).toEqual(['open']);
    capture('comments');
    const plain = await runCliAsync(['sync', src, tgt, '--json']);
    expect(plain.status, plain.stderr).toBe(0);
    expect(names(plain)).toEqual(['comments', 'issues', 'labels', 'open']);
  });

  test("a definition named like a table's mirror takes its place, and one that writes a mirror's table under another name is refused", async () => {
    await defaultSync();
    fs.writeFileSync(
      at('labels.json'),
      JSON.stringify({ name: 'labels', source: 'labels', kind: 'map', columns: { repo_id: 'repo_id', name: 'name' } }),
    );
    const replaced = await runCliAsync(['sync', src, tgt, '--projection', at('labels.json'), '--json']);
    expect(replaced.status, replaced.stderr).toBe(0);
    expect(parseJson(replaced, S.syncOutput).projections[0]).toMatchObject({ name: 'labels', rebuilt: 'DEFINITION_CHANGED' });
    const plain = await runCliAsync(['sync', src, tgt, '--json']);
    expect(plain.status, plain.stderr).toBe(0);
    expect(names(plain)).toEqual(['issues', 'labels']);
    expect(JSON.parse(String(scalar(tgt, "SELECT definition FROM _sluice_projections WHERE name = 'labels'")))).toMatchObject({
      kind: 'map',
    });

    fs.writeFileSync(at('copy.json'), JSON.stringify({ name: 'issues_copy', source: 'issues', kind: 'mirror', target: 'issues' }));
    const collide = await runCliAsync(['sync', src, tgt, '--projection', at('copy.json')]);
    expect(collide.status).toBe(1);
    expectOneLineError(collide, 'TARGET_COLLISION');

    // A definition of another table that holds the name of a table enabled later: that table is not mirrored, and sync says why.
    await sync(src, tgt, {
      projections: [{ name: 'comments', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number', c: 'title' } }],
    });
    capture('comments');
    const held = await runCliAsync(['sync', src, tgt, '--json']);
    expect(held.status, held.stderr).toBe(0);
    expect(parseJson(held, S.syncOutput).unmirrored).toEqual([
      { table: 'comments', mode: 'images', why: 'projection comments, of table issues, has the name of its mirror' },
    ]);
  });

  test('a table captured in keys mode is not mirrored, and sync says so', async () => {
    capture('comments', 'keys');
    const r = await runCliAsync(['sync', src, tgt]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`comments: not mirrored (captured in keys mode: a mirror needs images mode`);
    expect(r.stdout).toContain(`sluice enable ${src} comments --mode images`);
    expect(stored(tgt)).toEqual(['issues', 'labels']);
    const health = await runCliAsync(['health', tgt]);
    expect(health.status, health.stdout).toBe(0);
  });

  test('a table no longer captured keeps its mirror, reported by health (exit 3), not left green', async () => {
    await defaultSync();
    const db = openDatabase(src);
    try {
      disable(db);
      enable(db, ['issues']);
    } finally {
      db.close();
    }
    const r = await runCliAsync(['sync', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    expect(parseJson(r, S.syncOutput).projections.find((p) => p.name === 'labels')).toMatchObject({
      state: 'suspended',
      reason: 'TABLE_UNTRACKED',
    });
    const health = await runCliAsync(['health', tgt, '--json']);
    expect(health.status).toBe(3);
    const labels = parseJson(health, S.healthOutput).projections.find((p) => p.name === 'labels');
    expect(labels?.problems.join('\n')).toContain(
      `the source no longer captures labels, so labels is not synced: capture it again (sluice enable ${src} labels) and run sluice sync, or remove the projection and its tables (sluice drop ${tgt} labels)`,
    );
  });

  test('`--projection "*"` adds the default to a target built from definitions', async () => {
    fs.writeFileSync(
      at('open.json'),
      JSON.stringify({ name: 'open', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number' } }),
    );
    await sync(src, tgt, { projections: [JSON.parse(fs.readFileSync(at('open.json'), 'utf8')) as ProjectionDefinitionInput] });
    const both = await runCliAsync(['sync', src, tgt, '--projection', '*', '--json']);
    expect(both.status, both.stderr).toBe(0);
    expect(names(both)).toEqual(['issues', 'labels']);
    capture('comments');
    const plain = await runCliAsync(['sync', src, tgt, '--json']);
    expect(names(plain)).toEqual(['comments', 'issues', 'labels', 'open']);
  });
});

describe('a target built from definitions', () => {
  test('keeps its stored set: a table enabled later is not mirrored, and health stays green', async () => {
    fs.writeFileSync(at('issues.json'), JSON.stringify({ name: 'issues', source: 'issues', kind: 'mirror' }));
    fs.writeFileSync(
      at('open.json'),
      JSON.stringify({ name: 'open', source: 'issues', kind: 'map', columns: { repo_id: 'repo_id', number: 'number' } }),
    );
    const first = await runCliAsync(['sync', src, tgt, '--projection', at('issues.json'), '--projection', at('open.json')]);
    expect(first.status, first.stderr).toBe(0);
    capture('comments');
    const plain = await runCliAsync(['sync', src, tgt, '--json']);
    expect(plain.status, plain.stderr).toBe(0);
    expect(names(plain)).toEqual(['issues', 'open']);
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });
});
