import { openDatabase, type Db, type OpenOptions } from '../sqlite/connection.ts';
import { hasCapture } from './catalog.ts';
import { enable } from './enable.ts';
import { verifyCapture } from './verify.ts';

/**
 * Opens a source database. A writable open re-arms an enabled capture whose
 * triggers were removed or altered (advancing the generation, so readers
 * rebuild once). The open never fails because that repair failed: readers
 * detect unarmed tables on their own.
 */
export function openSource(path: string, options: Omit<OpenOptions, 'create'> = {}): Db {
  const db = openDatabase(path, { role: 'source', ...options });
  if (!(options.readonly ?? false)) {
    try {
      const v = hasCapture(db) ? verifyCapture(db) : undefined;
      if (v !== undefined && v.problem === undefined && !v.ok) enable(db, []);
    } catch {
      /* best effort: see above */
    }
  }
  return db;
}
