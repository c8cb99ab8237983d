import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { ROOT } from './fixtures.ts';
import { openDatabase, heldFile } from '../../src/sqlite/index.ts';
import { decodeCursor, encodeCursor } from '../../src/feed/index.ts';

/**
 * A source and its targets from fixtures/<folder>, written by an older
 * sluice, copied into `tmp` (`source.db`, and each target under its own
 * file name with `.db`). A cursor binds its source file's device and inode
 * (a copied source is FILE_CHANGED), so the stored cursors are pointed at
 * the copy's, and `source_path` at the copy: the one thing the copy changed.
 * Nothing else is touched.
 */
export function copyOldFixture(folder: string, tmp: string, targets: readonly string[]): { source: string; targets: string[] } {
  const dir = path.join(ROOT, 'fixtures', folder);
  const source = path.join(tmp, 'source.db');
  fs.copyFileSync(path.join(dir, 'source.sqlite'), source);
  const src = openDatabase(source, { readonly: true });
  const file = heldFile(src);
  src.close();
  const copies = targets.map((name) => {
    const target = path.join(tmp, `${name}.db`);
    fs.copyFileSync(path.join(dir, `${name}.sqlite`), target);
    const t = openDatabase(target);
    try {
      for (const { name: p, cursor } of t.prepare('SELECT name, cursor FROM _sluice_projections').all() as {
        name: string;
        cursor: string;
      }[]) {
        const c = decodeCursor(cursor);
        expect(c.file, 'the old cursor binds its file').toBeDefined();
        t.prepare('UPDATE _sluice_projections SET cursor = ?, source_path = ? WHERE name = ?').run(
          encodeCursor({ ...c, ...(file === undefined ? {} : { file }) }),
          source,
          p,
        );
      }
      t.pragma('journal_mode = DELETE');
    } finally {
      t.close();
    }
    return target;
  });
  return { source, targets: copies };
}
