import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, useWal, closeDatabase, useCatchUpCaches, matchTargetEncoding } from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { ensureTargetMeta, allowProjectionWrites, recordSubscribed } from '../apply/target/index.ts';
import { peekEncoding, readExportFile } from './checked-reader.ts';
import { Importer } from './importer.ts';
import type { ImportOptions, ImportReport, ItemStream } from './import-types.ts';
export type { ImportOptions, ImportReport, ItemStream } from './import-types.ts';

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
    allowProjectionWrites(db); // a protected target's projections (apply/edits/protect.ts)
    // A subscriber feeds the projections of its source from its first message on: health reads their lag there while it waits for one.
    if (options.fedBy?.via === 'subscribe') await recordSubscribed(db, SCHEMA, options.fedBy);
    return await new Importer(db, options).run(stream);
  } finally {
    closeDatabase(db);
  }
}
