import type { Db } from '../sqlite/index.ts';
import { quoteIdent, shellWord } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { enableCommand } from './enable-hint.ts';

/*
 * The tables a sync target keeps its metadata in. apply/target/target-meta.ts makes
 * and owns them; they are named here, in the lower layer, because enable
 * must recognize a target (sluice's own file of another kind) before its
 * namespace gate takes these tables for a user's that borrow the prefix.
 */
export const TARGET_INFO_TABLE = '_sluice_target';
export const PROJECTIONS_TABLE = '_sluice_projections';
/** What `sluice drop` removed, until a sync forgets its acknowledgement (apply/target/dropped.ts); read by status too. */
export const DROPPED_TABLE = '_sluice_dropped';

/**
 * The sync target metadata tables the database `schema` holds (none: it is
 * no sluice target): how enable, status and the commands that read a
 * source tell a target given where a source is expected. Reads only.
 */
export function targetTables(db: Db, schema = 'main'): string[] {
  return db
    .prepare(`SELECT name FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name IN (?, ?)`)
    .pluck()
    .all(TARGET_INFO_TABLE, PROJECTIONS_TABLE) as string[];
}

/**
 * What was asked of a file that turned out to be a sync target, for the
 * fix TARGET_NOT_SOURCE names: `does` the same on its source ("Read the
 * capture of"), and `command` that command on a source file.
 */
export interface TargetUse {
  readonly does: string;
  readonly command: (source: string) => string;
}

/** Any other command's use of a source (export, changes, publish, disable): its fix is the same command on the file the target is synced from. */
export const RUN_ON_SOURCE: TargetUse = { does: 'Run the command on', command: (source) => shellWord(source) };

/** status's use of a source: what its TARGET_NOT_SOURCE names. */
const STATUS: TargetUse = { does: 'Read the capture of', command: (source) => `sluice status ${shellWord(source)}` };

/**
 * TARGET_NOT_SOURCE for a sync target given as a source (undefined: the
 * file is no target), naming the source it is synced from when its
 * metadata records one, and the target as `file` (default: the
 * connection's file; a copy read in memory has none). Reads only. `use` is
 * what was asked of it: capture (enable, and the commands that would make
 * a capture), or a command that reads or keeps a source's capture (status,
 * sync, prune, bump), whose fix is that command on the source.
 */
export function targetNotSource(
  db: Db,
  file: string = db.name,
  use: 'capture' | 'status' | TargetUse = 'capture',
): InvalidInputError | undefined {
  const found = targetTables(db);
  if (found.length === 0) return undefined;
  // Each source it is synced from, with the tables its projections read there.
  const sources = new Map<string, string[]>();
  if (found.includes(PROJECTIONS_TABLE)) {
    try {
      const rows = db
        .prepare(
          `SELECT DISTINCT source_path, source_table FROM main.${PROJECTIONS_TABLE} WHERE source_path IS NOT NULL ORDER BY source_path, source_table`,
        )
        .raw()
        .all() as [string, string][];
      for (const [file, table] of rows) sources.set(file, [...(sources.get(file) ?? []), table]);
    } catch {
      /* an older or damaged metadata table: the message goes without the source's name */
    }
  }
  const what = `${file} is a sluice target (it holds sluice's target metadata, ${found.join(' and ')}, written by sync or import), not a source.`;
  if (use !== 'capture') {
    const { does, command } = use === 'status' ? STATUS : use;
    const read =
      sources.size > 0
        ? `${does} the file it is synced from: ${[...sources.keys()].map(command).join(', or ')}`
        : `${does} the database it is synced from (sluice health on this file names it)`;
    return new InvalidInputError('TARGET_NOT_SOURCE', `${what} ${read}; sluice health ${shellWord(file)} reads this target.`);
  }
  const where =
    sources.size > 0
      ? `on ${[...sources].map(([file, tables]) => `the file it is synced from: ${enableCommand(file, tables)}`).join(', or ')}`
      : 'on the database it is synced from (sluice health on this file names it)';
  return new InvalidInputError(
    'TARGET_NOT_SOURCE',
    `${what} Capture belongs ${where}. A target with capture enabled could no longer be synced into.`,
  );
}

/** Throws targetNotSource's TARGET_NOT_SOURCE when the file is a sync target. */
export function refuseTarget(db: Db, file: string = db.name, use: 'capture' | 'status' | TargetUse = 'capture'): void {
  const refused = targetNotSource(db, file, use);
  if (refused !== undefined) throw refused;
}
