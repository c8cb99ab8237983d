import { openDatabase, type Db, type OpenOptions } from '../sqlite/index.ts';

/**
 * Opens a source database. Opening writes nothing: it neither re-arms
 * capture (see rearmCapture, which `sync` calls and reports) nor changes
 * the journal mode (only `enable` switches a source to WAL).
 */
export function openSource(path: string, options: Omit<OpenOptions, 'create' | 'wal'> = {}): Db {
  return openDatabase(path, { role: 'source', ...options });
}
