import fs from 'node:fs';
import type { Db } from '../sqlite/index.ts';
import { openDatabase, writeTransactionSync, quoteIdent, requireOutputPath, folderNotWritable } from '../sqlite/index.ts';
import { InvalidInputError, errorCode } from '../errors.ts';

/**
 * Writes a copy of `db` (VACUUM INTO, so the original is only read) with
 * every `_sluice_` object removed, then vacuums the copy so no journal bytes
 * linger in its free pages.
 *
 * @example
 * strip(openDatabase('app.db', { readonly: true }), 'app-clean.db');
 */
export function strip(db: Db, out: string): { readonly removed: readonly string[] } {
  requireOutputPath(out, { given: '--out', command: 'strip', example: 'copy.db' });
  if (fs.existsSync(out))
    throw new InvalidInputError(
      'OUTPUT_EXISTS',
      `${out} already exists; strip never overwrites a file. Pass a new path or remove it first.`,
    );
  try {
    db.prepare('VACUUM INTO ?').run(out);
  } catch (err) {
    throw folderNotWritable(out, 'copy', errorCode(err)) ?? err;
  }
  const copy = openDatabase(out, { role: 'copy' });
  try {
    const objects = copy
      .prepare(
        "SELECT type, name FROM main.sqlite_schema WHERE name LIKE '\\_sluice\\_%' ESCAPE '\\' AND type IN ('trigger', 'view', 'table', 'index')",
      )
      .all() as { type: string; name: string }[];
    const order = ['trigger', 'view', 'index', 'table'];
    objects.sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type));
    writeTransactionSync(copy, () => {
      for (const o of objects) {
        if (copy.prepare('SELECT 1 FROM main.sqlite_schema WHERE name = ?').get(o.name) === undefined) continue; // dropped with its table
        copy.exec(`DROP ${o.type.toUpperCase()} IF EXISTS main.${quoteIdent(o.name)}`);
      }
    });
    copy.pragma('journal_mode = DELETE');
    copy.exec('VACUUM');
    return { removed: objects.map((o) => o.name) };
  } finally {
    copy.close();
  }
}
