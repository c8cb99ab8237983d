// an fts5 index over title and body is untouched by updates that change only another column, and updated by a title change
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { test, expect } from '../../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../../src/sqlite/index.ts';
import { enable, openSource } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import { skipUnread } from '../../../../src/apply/projections/index.ts';
import type { ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { PythonWriter } from '../../../support/python-writer.ts';
import { tableCells } from '../../../apply/support/target.ts';
import { exportOnce, LineSink, importFile } from '../../../../src/export/index.ts';

/*
 * Issue 22, item 3. `issues` has an fts5 index over title and body (one
 * with external content, one contentless). A workload that only increments
 * comment_count, written by better-sqlite3, Python's sqlite3 and the
 * sqlite3 shell, leaves the index untouched: every page of its tables (the
 * FTS5 shadow tables and the key table), read from the checkpointed file,
 * has the same bytes; and it equals an index built from scratch. The same
 * workload with the skip turned off (the code as it was) rewrites them:
 * the check can tell. Then a title change updates it.
 */

const SCHEMA = `CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, body TEXT, comment_count INTEGER NOT NULL DEFAULT 0, state TEXT)`;
const PROJECTIONS: ProjectionDefinitionInput[] = [
  { name: 'search', source: 'issues', kind: 'fts5', columns: ['title', 'body'], content: 'external' },
  { name: 'bare', source: 'issues', kind: 'fts5', columns: ['title', 'body'], content: 'none' },
];
const FTS_TABLES = ['search', 'bare'].flatMap((t) => ['_src', '_data', '_idx', '_docsize', '_config'].map((x) => `${t}${x}`));
const TERMS = ['alpha', 'beta', 'gamma', 'delta', 'renamed', 'w1', 'w7', 'alpha OR w3'];

function seed(db: Db): void {
  const ins = db.prepare('INSERT INTO issues (id, title, body, state) VALUES (?, ?, ?, ?)');
  const words = ['alpha', 'beta', 'gamma', 'delta'];
  for (let i = 1; i <= 60; i++) {
    const body = Array.from({ length: 300 }, (_, j) => `${words[(i + j) % 4] as string} w${(i * j) % 97}`).join(' ');
    ins.run(i, `issue ${words[i % 4] as string} ${i}`, body, i % 3 === 0 ? 'closed' : 'open');
  }
}

/** Each page of the fts5 tables, by table and page number, as a hash of its bytes in the checkpointed file. */
function ftsPages(file: string): Record<string, string> {
  const db = openDatabase(file);
  let pages: { name: string; pageno: number; pgoffset: number }[];
  let size: number;
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    size = Number(db.pragma('page_size', { simple: true }));
    pages = db
      .prepare(
        `SELECT name, pageno, pgoffset FROM dbstat WHERE name IN (${FTS_TABLES.map(() => '?').join(', ')}) OR name IN (SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name IN (${FTS_TABLES.map(() => '?').join(', ')})) ORDER BY name, pageno`,
      )
      .all(...FTS_TABLES, ...FTS_TABLES)
      .map((r) => {
        const x = r as { name: string; pageno: bigint; pgoffset: bigint };
        return { name: x.name, pageno: Number(x.pageno), pgoffset: Number(x.pgoffset) };
      });
  } finally {
    db.close();
  }
  const bytes = fs.readFileSync(file);
  expect(pages.length).toBeGreaterThan(10);
  return Object.fromEntries(
    pages.map((p) => [
      `${p.name}#${p.pageno}`,
      createHash('sha256')
        .update(bytes.subarray(p.pgoffset, p.pgoffset + size))
        .digest('hex'),
    ]),
  );
}

/** What a reader sees of each index: its key table's rows, and the keys each query matches. */
function seen(file: string): unknown {
  const db = openDatabase(file);
  try {
    const out: Record<string, unknown> = {};
    for (const t of ['search', 'bare']) {
      out[`${t}_src`] = tableCells(db, 'main', `${t}_src`).map((r) => r.slice(1));
      for (const q of TERMS)
        out[`${t} MATCH ${q}`] = db
          .prepare(`SELECT s._k0 FROM ${t} f JOIN ${t}_src s ON s.rowid = f.rowid WHERE ${t} MATCH ? ORDER BY 1`)
          .pluck()
          .all(q)
          .map(Number);
    }
    db.exec(`INSERT INTO search (search, rank) VALUES ('integrity-check', 1)`);
    db.exec(`INSERT INTO bare (bare) VALUES ('integrity-check')`);
    return out;
  } finally {
    db.close();
  }
}

async function syncActive(source: string, target: string): Promise<void> {
  const r = await sync(source, target, { projections: PROJECTIONS });
  for (const p of r.projections) expect(p, p.name).toMatchObject({ state: 'active' });
}

/** The comment_count workload, from three writers that know nothing of sluice. */
async function countersOnly(db: Db, source: string, py: PythonWriter): Promise<void> {
  for (let i = 1; i <= 60; i += 2) db.prepare('UPDATE issues SET comment_count = comment_count + 1 WHERE id = ?').run(i);
  db.exec('UPDATE issues SET comment_count = comment_count + 2 WHERE id % 5 = 0');
  expect(await py.send({ open: source })).toMatchObject({ ok: true });
  expect(await py.send({ sql: 'UPDATE issues SET comment_count = comment_count + 1 WHERE id > 40' })).toMatchObject({ ok: true });
  // An upsert that lands on its conflict branch, changing only the counter.
  expect(
    await py.send({
      sql: `INSERT INTO issues (id, title) VALUES (3, 'x') ON CONFLICT (id) DO UPDATE SET comment_count = comment_count + 1`,
    }),
  ).toMatchObject({ ok: true });
  await py.send({ close: true });
  const shell = spawnSync('sqlite3', [source, 'UPDATE issues SET comment_count = comment_count * 2 WHERE id < 10;'], { encoding: 'utf8' });
  expect(shell.stderr).toBe('');
  expect(shell.status).toBe(0);
}

test('an fts5 index over title and body: a workload that only increments comment_count leaves its pages as they were and equal to a fresh index; a title change updates it', async ({
  tmp,
}) => {
  const source = path.join(tmp, 'source.db');
  const target = path.join(tmp, 'target.db');
  const control = path.join(tmp, 'control.db');
  const db = openDatabase(source, { create: true, wal: true });
  const py = PythonWriter.start();
  try {
    db.exec(SCHEMA);
    seed(db);
    enable(db, ['issues']);
    await syncActive(source, target);
    fs.copyFileSync(target, control);
    const before = ftsPages(target);
    const seenBefore = seen(target);

    await countersOnly(db, source, py);
    const journal = db.prepare(`SELECT count(*) FROM _sluice_journal WHERE op = 2`).pluck().get();
    expect(Number(journal)).toBeGreaterThan(60);
    await syncActive(source, target);
    // Untouched, page for page, and as a reader sees it; and what a fresh index built now holds.
    expect(ftsPages(target)).toEqual(before);
    expect(seen(target)).toEqual(seenBefore);
    await syncActive(source, path.join(tmp, 'fresh1.db'));
    expect(seen(target)).toEqual(seen(path.join(tmp, 'fresh1.db')));

    // The control: the same events with the skip off rewrite the index (so the page check can see a rewrite).
    skipUnread.on = false;
    try {
      await syncActive(source, control);
    } finally {
      skipUnread.on = true;
    }
    expect(ftsPages(control)).not.toEqual(before);
    expect(seen(control)).toEqual(seenBefore);

    // A title change is applied: the index moves, and matches a fresh one.
    db.exec(`UPDATE issues SET title = 'renamed epsilon', comment_count = comment_count + 1 WHERE id = 7`);
    await syncActive(source, target);
    expect(ftsPages(target)).not.toEqual(before);
    const after = seen(target) as Record<string, unknown>;
    expect(after['search MATCH renamed']).toEqual([7]);
    expect(after['bare MATCH renamed']).toEqual([7]);
    await syncActive(source, path.join(tmp, 'fresh2.db'));
    expect(after).toEqual(seen(path.join(tmp, 'fresh2.db')));
  } finally {
    await py.stop();
    db.close();
  }
});

/** Appends what export writes after `since` (a snapshot first when it is undefined) to `file`; the cursor it reached. */
function exportTo(source: string, file: string, since?: string): string {
  const db = openSource(source, { readonly: true });
  const fd = fs.openSync(file, 'a');
  try {
    return exportOnce(db, new LineSink(fd), since === undefined ? {} : { since }, () => {}).cursor;
  } finally {
    fs.closeSync(fd);
    db.close();
  }
}

test('fed by import from JSONL, whose update lines carry their changed columns, the index is untouched by counter-only updates too, and takes a title change', async ({
  tmp,
}) => {
  const source = path.join(tmp, 'source.db');
  const target = path.join(tmp, 'target.db');
  const db = openDatabase(source, { create: true, wal: true });
  try {
    db.exec(SCHEMA);
    seed(db);
    enable(db, ['issues']);
    const first = path.join(tmp, 'first.jsonl');
    let cursor = exportTo(source, first);
    const built = await importFile(target, first, { projections: PROJECTIONS });
    expect(built.projections.map((p) => p.state)).toEqual(['active', 'active']);
    const before = ftsPages(target);
    const seenBefore = seen(target);

    db.exec('UPDATE issues SET comment_count = comment_count + 1 WHERE id % 2 = 0');
    const counters = path.join(tmp, 'counters.jsonl');
    cursor = exportTo(source, counters, cursor);
    expect(fs.readFileSync(counters, 'utf8')).toContain('"changed":["comment_count"]');
    const r = await importFile(target, counters);
    expect(r.projections.map((p) => p.state)).toEqual(['active', 'active']);
    expect(ftsPages(target)).toEqual(before);
    expect(seen(target)).toEqual(seenBefore);

    db.exec(`UPDATE issues SET title = 'renamed', comment_count = 0 WHERE id = 8`);
    const titled = path.join(tmp, 'titled.jsonl');
    exportTo(source, titled, cursor);
    await importFile(target, titled);
    expect(ftsPages(target)).not.toEqual(before);
    await syncActive(source, path.join(tmp, 'fresh.db'));
    const after = seen(target) as Record<string, unknown>;
    expect(after['search MATCH renamed']).toEqual([8]);
    expect(after).toEqual(seen(path.join(tmp, 'fresh.db')));
  } finally {
    db.close();
  }
});
