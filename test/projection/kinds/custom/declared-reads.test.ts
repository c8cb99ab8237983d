// a custom handler that declares reads is not called for updates that change none of them; one that does not is called for all
import path from 'node:path';
import { test, expect } from '../../../support/fixtures.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import type { ChangeEvent } from '../../../../src/feed/index.ts';
import type { CustomHandler, ProjectionDefinitionInput } from '../../../../src/projection/index.ts';

function recorder(): { seen: ChangeEvent[]; handler: CustomHandler } {
  const seen: ChangeEvent[] = [];
  return {
    seen,
    handler: {
      version: '1',
      apply(e) {
        seen.push(e);
      },
    },
  };
}

test('a handler declaring reads: [title] gets inserts, deletes, key changes and title changes, not counter-only updates; without reads it gets every event; an unknown name is refused', async ({
  tmp,
}) => {
  const source = path.join(tmp, 'source.db');
  const target = path.join(tmp, 'target.db');
  const db = openDatabase(source, { create: true, wal: true });
  try {
    db.exec(`CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, comment_count INTEGER NOT NULL DEFAULT 0);
      INSERT INTO issues (id, title) VALUES (1, 'one'), (2, 'two');`);
    enable(db, ['issues']);
    const titled = recorder();
    const every = recorder();
    const defs: ProjectionDefinitionInput[] = [
      { name: 'titled', source: 'issues', kind: 'custom', handler: titled.handler, reads: ['TITLE'] },
      { name: 'every', source: 'issues', kind: 'custom', handler: every.handler },
    ];
    await sync(source, target, { projections: defs });
    db.exec(`UPDATE issues SET comment_count = comment_count + 1;
      UPDATE issues SET title = 'uno', comment_count = 9 WHERE id = 1;
      INSERT INTO issues (id, title) VALUES (3, 'three');
      UPDATE issues SET comment_count = 4 WHERE id = 3;
      UPDATE issues SET id = 4 WHERE id = 2;
      DELETE FROM issues WHERE id = 1;`);
    const r = await sync(source, target, { projections: defs });
    for (const p of r.projections) expect(p, p.name).toMatchObject({ state: 'active' });
    const ops = (s: ChangeEvent[]) => s.map((e) => [e.op, Number(e.key[0]), e.op === 'update' ? e.changed : undefined]);
    expect(ops(every.seen)).toEqual([
      ['update', 1, ['comment_count']],
      ['update', 2, ['comment_count']],
      ['update', 1, ['title', 'comment_count']],
      ['insert', 3, undefined],
      ['update', 3, ['comment_count']],
      ['update', 4, ['id']],
      ['delete', 1, undefined],
    ]);
    expect(ops(titled.seen)).toEqual([
      ['update', 1, ['title', 'comment_count']],
      ['insert', 3, undefined],
      ['update', 4, ['id']],
      ['delete', 1, undefined],
    ]);
    // Both moved their cursor to the same seq.
    const t = openDatabase(target);
    try {
      const seqs = t.prepare('SELECT name, seq FROM _sluice_projections ORDER BY name').raw().all();
      expect(new Set(seqs.map((x) => Number((x as unknown[])[1]))).size).toBe(1);
    } finally {
      t.close();
    }
    const bad = await sync(source, path.join(tmp, 'other.db'), {
      projections: [{ name: 'bad', source: 'issues', kind: 'custom', handler: recorder().handler, reads: ['titel'] }],
    }).catch((err: unknown) => err);
    expect(String(bad)).toMatch(/bad: source table issues has no column titel/);
  } finally {
    db.close();
  }
});
