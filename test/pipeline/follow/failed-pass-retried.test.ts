// a follower whose pass failed tries it again by itself, though the source commits nothing more
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect } from '../../support/fixtures.ts';
import { scalar, startCli, syncByLibrary, trackerSource, waitFor, write, type Spawned } from '../../cli/support/cli.ts';

/*
 * A custom handler that feeds a service throws while the service is down:
 * that projection's pass fails, nothing of its batch committed, "retried
 * at the next pass". Then the source stays idle (the day's last write). The
 * follower used to pass only on a source commit, so the projection stayed
 * behind the source until the application happened to write again, for
 * hours, with nothing said after the one error. It now tries a failed pass
 * again by itself (failed-pass-retry.ts), and the projection catches up
 * once the service is back.
 */

let follower: Spawned | undefined;
afterEach(() => {
  follower?.child.kill('SIGKILL');
  follower = undefined;
});

interface Pass {
  readonly projections: readonly { readonly name: string; readonly applied: number; readonly error?: { readonly code: string } }[];
}

test('a pass that failed while a handler could not reach its service is retried once the service is back, with no further commit on the source', async ({
  tmp,
}) => {
  const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
  const tgt = path.join(tmp, 'cache.db');
  const down = path.join(tmp, 'service-down');
  fs.writeFileSync(
    path.join(tmp, 'titles.mjs'),
    `import fs from 'node:fs';
export default {
  version: '1',
  async init(rows, { db, tables }) {
    await db.schema.createTable(tables.titles).addColumn('repo_id', 'integer').addColumn('number', 'integer').addColumn('title', 'text')
      .addPrimaryKeyConstraint('titles_pk', ['repo_id', 'number']).execute();
    for (const r of rows) await db.insertInto(tables.titles).values({ repo_id: r.repo_id, number: r.number, title: r.title }).execute();
  },
  async apply(event, { db, tables }) {
    if (fs.existsSync(${JSON.stringify(down)})) throw new Error('the title service is down');
    if (event.after !== null)
      await db.updateTable(tables.titles).set({ title: event.after.title })
        .where('repo_id', '=', event.after.repo_id).where('number', '=', event.after.number).execute();
  },
};
`,
  );
  const def = path.join(tmp, 'titles.json');
  fs.writeFileSync(def, JSON.stringify({ name: 'titles', source: 'issues', kind: 'custom', module: './titles.mjs', tables: ['titles'] }));
  expect(await syncByLibrary(src, tgt, [def])).toBe(0);
  const title = () => scalar(tgt, 'SELECT title FROM titles WHERE repo_id = 1 AND number = 1');
  const f = startCli(['sync', src, tgt, '--follow', '--json', '--projection', def]);
  follower = f;
  const passes = (): Pass[] =>
    f
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Pass);
  await waitFor("the follower's first pass", () => passes().length >= 1);

  fs.writeFileSync(down, '');
  write(src, "UPDATE issues SET title = 'the last write of the day' WHERE repo_id = 1 AND number = 1");
  await waitFor('the pass failed', () => passes().some((p) => p.projections.some((x) => x.error?.code !== undefined)));
  expect(title()).not.toBe('the last write of the day');
  const failed = passes().length;

  // The service is back; nothing more is written to the source.
  fs.rmSync(down);
  await waitFor('the update applied', () => title() === 'the last write of the day', 15_000);
  // The pass commits before it prints its line: wait for the line too.
  await waitFor("the retried pass's line", () => passes().length > failed);
  const after = passes().slice(failed);
  expect(after.length).toBeGreaterThanOrEqual(1);
  expect(after.at(-1)?.projections).toEqual([expect.objectContaining({ name: 'titles', applied: 1 })]);
  expect(after.at(-1)?.projections[0]?.error).toBeUndefined();
}, 60_000);
