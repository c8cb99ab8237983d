import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, useWal } from '../sqlite/connection.ts';
import { closeDatabase } from '../sqlite/connection-state.ts';
import { InvalidInputError } from '../errors.ts';
import type { ProjectionDefinitionInput } from '../projection/definition.ts';
import { ensureTargetMeta } from '../apply/target-meta.ts';
import { allowProjectionWrites } from '../apply/protect.ts';
import { recordSubscribed, type FedBy } from '../apply/fed-by.ts';
import type { DroppedIndex } from '../apply/user-indexes.ts';
import { peekEncoding, readExportFile, type ExportItem, type ReadOptions, type ReadTotals } from './checked-reader.ts';
import { useCatchUpCaches } from '../sqlite/catch-up-caches.ts';
import { matchTargetEncoding, type TextEncoding } from '../sqlite/text-encoding.ts';
import { Importer } from './importer.ts';

export interface ImportOptions {
  /** Definitions (default: the target's stored ones, else a mirror of every table in the file). */
  readonly projections?: readonly ProjectionDefinitionInput[];
  /**
   * How the target's projections are fed, recorded in their rows for health
   * (apply/fed-by.ts): importFile records the file and the time, subscribe
   * its broker and stream. Default: nothing recorded.
   */
  readonly fedBy?: FedBy;
  /** After each snapshot or batch read: the bytes of the file read so far, of `size` (for a progress bar). */
  readonly onProgress?: (p: {
    readonly bytes: number;
    readonly size: number;
    readonly batchesApplied: number;
    readonly batchesSkipped: number;
  }) => void;
}

export interface ImportReport {
  readonly lines: number;
  readonly batchesApplied: number;
  readonly batchesSkipped: number;
  /** Lines after the last complete batch (a truncated tail): read, not applied. */
  readonly incompleteTail: number;
  readonly projections: readonly {
    readonly name: string;
    readonly state: string;
    readonly reason?: string;
    readonly seq: number;
    readonly droppedIndexes?: readonly DroppedIndex[];
  }[];
}

const SCHEMA = 'main';

/**
 * Applies an export file to a target with the same cursor rules as `sync`:
 * a batch already applied is skipped, an overlap applies only the new part,
 * a gap stops the import. Importing a file twice, or a truncated file and
 * then the full one, gives the same target. A malformed line stops the
 * import with its line number; the batch it belongs to is not committed.
 *
 * @example
 * await importFile('cache.db', 'changes.jsonl');
 */
export async function importFile(targetPath: string, file: string, options: ImportOptions = {}): Promise<ImportReport> {
  if (!fs.existsSync(file))
    throw new InvalidInputError('IMPORT_NOT_FOUND', `Import file ${file} does not exist. Pass a file written by \`sluice export\`.`);
  const encoding = await peekEncoding(file);
  const fedBy = { via: 'import', file: path.resolve(file), ms: Date.now() } as const;
  return importStream(
    targetPath,
    {
      label: file,
      size: () => fs.statSync(file).size,
      ...(encoding === undefined ? {} : { encoding }),
      read: (o) => readExportFile(file, o),
      atHand: true,
    },
    { fedBy, ...options },
  );
}

/** A stream of checked export items (a file, or batches from a broker): what import applies. */
export interface ItemStream {
  /** Names the stream in errors (`<label>:<line>`). */
  readonly label: string;
  /** The text encoding the stream's source declares, when known before reading (a new target takes it). */
  readonly encoding?: TextEncoding;
  /** Bytes in the whole stream, for progress (called only when progress is asked for). */
  readonly size?: () => number;
  /**
   * The whole stream is at hand (a file), so the next batch follows at once:
   * consecutive batches may share one target transaction. Not for a live
   * stream, where each batch must commit before waiting for the next.
   */
  readonly atHand?: boolean;
  /** Reads the stream once, checked (see checked-reader.ts). */
  read(options: ReadOptions): AsyncGenerator<ExportItem, ReadTotals>;
}

/** importFile over any stream of checked export items, with the same rules. */
export async function importStream(targetPath: string, stream: ItemStream, options: ImportOptions = {}): Promise<ImportReport> {
  const encoding = stream.encoding;
  const db = openDatabase(targetPath, { create: true, role: 'target' });
  try {
    if (db.prepare("SELECT 1 FROM main.sqlite_schema WHERE name = '_sluice_state'").get() !== undefined) {
      throw new InvalidInputError(
        'TARGET_IS_SOURCE',
        `The target ${targetPath} has sluice capture enabled: it is a source. Import into a separate database.`,
      );
    }
    // Up front, before anything is written: a new target takes the file's text encoding, another one is refused.
    if (encoding !== undefined) matchTargetEncoding(db, targetPath, encoding);
    // A target is sluice's own file: WAL, like sync's (session.ts).
    useWal(db);
    db.pragma('temp_store = MEMORY');
    useCatchUpCaches(db, SCHEMA, { checkpoint: true });
    ensureTargetMeta(db, SCHEMA);
    allowProjectionWrites(db); // a protected target's projections (apply/protect.ts)
    // A subscriber feeds the projections of its source from its first message on: health reads their lag there while it waits for one.
    if (options.fedBy?.via === 'subscribe') await recordSubscribed(db, SCHEMA, options.fedBy);
    return await new Importer(db, options).run(stream);
  } finally {
    closeDatabase(db);
  }
}
