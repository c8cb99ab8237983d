import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';

/**
 * A copy of a source taken now (after a checkpoint, so the file holds
 * everything), to be written back later over the same path, as `.restore`
 * or `cp` would: the same inode, older bytes. Close every connection to the
 * file before `restore()`; it returns a new one.
 */
export function takeCopy(db: Db, file: string, dir: string): { restore(): Db } {
  db.pragma('wal_checkpoint(TRUNCATE)');
  const backup = path.join(dir, `${path.basename(file)}.copy`);
  fs.copyFileSync(file, backup);
  return {
    restore(): Db {
      for (const suffix of ['-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
      fs.writeFileSync(file, fs.readFileSync(backup));
      return openDatabase(file);
    },
  };
}
