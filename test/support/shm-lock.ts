import { runPython } from './fixtures.ts';

/**
 * Whether another process can take the wal-index's "DMS" lock of `dbFile`
 * exclusively (byte 128 of its `-shm`): SQLite's first connection does,
 * then truncates the file and starts the index again. While a connection of
 * this process has the database open, it holds that byte shared, and the
 * answer must be 'held'; 'taken' means this process lost its locks (and
 * another process would start the index again under it).
 */
export function shmDmsLock(dbFile: string): 'held' | 'taken' {
  const out = runPython(
    `import fcntl, os, sys
fd = os.open(sys.argv[1] + "-shm", os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128, 0)
    print("taken")
except OSError:
    print("held")
os.close(fd)`,
    [dbFile],
  ).trim();
  if (out !== 'held' && out !== 'taken') throw new Error(`unexpected answer from the lock probe: ${out}`);
  return out;
}
