import fs from 'node:fs';
import { openDatabase, type Db } from '../sqlite/index.ts';
import { readConsumers } from '../capture/index.ts';
import type { Pipeline } from './pipeline.ts';

/*
 * plan and health --config read a pipeline's files and must leave no trace,
 * `-wal` and `-shm` included. A read-only connection to a WAL file that no
 * other connection has open makes an empty `-wal` and `-shm` beside it, and
 * cannot remove them when it closes (only a connection that can take the
 * write lock checkpoints and removes them). So, while `fn` reads, each file
 * is also held by a read-write connection that never writes: the readers
 * share its `-shm`, and when it closes last (as the last connection of a
 * WAL file does) SQLite removes the `-wal` and `-shm` it made, checkpointing
 * nothing, since nothing was written. The database file is not written.
 * A file that has a `-wal` already (another process has it open, or a
 * reader left it) is not held, nor one that has a `-journal` (a writer is in
 * a transaction, or one crashed in it: holding it would roll that back): those files stay as they are, and are not
 * this reader's to remove (SQLite's readers may still update the `-shm`,
 * its shared memory). A file that cannot be opened for writing (read-only,
 * or its folder) is read without a holder: its readers may leave the two files.
 */

/** Runs `fn` with every file of `files` that exists held so that reading it leaves nothing behind. */
export async function readQuietly<T>(files: readonly string[], fn: () => T | Promise<T>): Promise<T> {
  const holders: Db[] = [];
  try {
    for (const file of new Set(files)) {
      // A file with a -wal beside it is open elsewhere, or was left so: its -wal and -shm are not this reader's to remove.
      // One with a -journal is mid-transaction, or was left so by a crash: a read-write holder would roll that back, a write.
      if (!fs.existsSync(file) || fs.existsSync(`${file}-wal`) || fs.existsSync(`${file}-journal`)) continue;
      try {
        const db = openDatabase(file, { role: 'database' });
        // Opens the WAL (when the file is in WAL mode) now, before any reader.
        db.prepare('SELECT count(*) FROM main.sqlite_schema').get();
        holders.push(db);
      } catch {
        /* not writable, or not a database: the readers report what is wrong */
      }
    }
    return await fn();
  } finally {
    for (const db of holders.reverse()) db.close();
  }
}

/**
 * Runs `fn` with every file of `pipeline` held (readQuietly): its sources,
 * its targets, and the targets its sources acknowledge (the capture's status
 * reads each, declared or not).
 */
export async function readPipelineQuietly<T>(pipeline: Pipeline, fn: () => T | Promise<T>): Promise<T> {
  const sources = pipeline.sources.map((s) => s.path);
  const targets = [...pipeline.sources.flatMap((s) => s.targets.map((t) => t.path)), ...pipeline.subscriptions.map((s) => s.path)];
  return readQuietly([...sources, ...targets], () => readQuietly(acknowledgedTargets(sources), fn));
}

function acknowledgedTargets(sources: readonly string[]): string[] {
  const out: string[] = [];
  for (const file of sources) {
    try {
      const db = openDatabase(file, { readonly: true, role: 'source' });
      try {
        for (const c of readConsumers(db)) if (c.target !== null) out.push(c.target);
      } finally {
        db.close();
      }
    } catch {
      /* a source that cannot be read: plan and health report it */
    }
  }
  return out;
}
