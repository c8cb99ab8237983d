import fs from 'node:fs';
import path from 'node:path';
import { runSqliteCli } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';

/*
 * A custom projection in a module file, for a CLI run: note_count keeps the
 * number of notes in its declared table. `fails` makes its handler throw:
 * in init (its build from a snapshot), or in apply (a batch's event); a
 * new `version` makes it another definition, which is built again.
 */

export const MESSAGE = { init: 'boom: the handler refuses this snapshot', apply: 'boom: the handler refuses this event' } as const;

/** Writes the module to `file` (again: a handler fixed, or broken). */
export function writeCountingHandler(file: string, fails?: 'init' | 'apply', version = '1'): string {
  const thrown = (when: 'init' | 'apply') => (fails === when ? `throw new Error(${JSON.stringify(MESSAGE[when])});` : '');
  fs.writeFileSync(
    file,
    `export default [{ name: 'note_count', source: 'notes', kind: 'custom', tables: ['note_count'], handler: { version: ${JSON.stringify(version)},
  async init(rows, { db, tables }) {
    await db.schema.createTable(tables.note_count).ifNotExists().addColumn('n', 'integer').execute();
    ${thrown('init')}
    let n = 0;
    for (const _ of rows) n++;
    await db.insertInto(tables.note_count).values({ n }).execute();
  },
  async apply(event, { db, tables }) {
    ${thrown('apply')}
    const delta = (event.after === null ? 0 : 1) - (event.before === null ? 0 : 1);
    await db.updateTable(tables.note_count).set((eb) => ({ n: eb('n', '+', delta) })).execute();
  } } }];
`,
  );
  return file;
}

/** A source with notes (2 rows) and tags (1 row), both captured; and the definition of a mirror of tags beside it. */
export function notesAndTags(dir: string): { readonly src: string; readonly tags: string } {
  const src = path.join(dir, 'app.db');
  runSqliteCli(
    src,
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'a'), (2, 'b'); CREATE TABLE tags (id INTEGER PRIMARY KEY, t TEXT); INSERT INTO tags VALUES (1, 'x');",
  );
  const db = openDatabase(src);
  try {
    enable(db, ['notes', 'tags']);
  } finally {
    db.close();
  }
  const tags = path.join(dir, 'tags.json');
  fs.writeFileSync(tags, JSON.stringify({ name: 'tags', source: 'tags', kind: 'mirror' }));
  return { src, tags };
}

/** What the target records of a projection's attempts: its state, whether it has a cursor, its seq and its failure. */
export function recorded(target: string, name: string): unknown {
  const db = openDatabase(target, { readonly: true });
  try {
    const row = db
      .prepare(
        'SELECT state, cursor IS NOT NULL AS built, seq, last_error_code AS code, last_error AS message, failures FROM _sluice_projections WHERE name = ?',
      )
      .get(name) as Record<string, unknown> | undefined;
    return row === undefined
      ? undefined
      : Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]));
  } finally {
    db.close();
  }
}
