import fs from 'node:fs';
import path from 'node:path';
import {
  openDatabase,
  useWal,
  closeDatabase,
  useCatchUpCaches,
  matchTargetEncoding,
  IMPORT_CHECKPOINT_PAGES,
  removeMadeDatabase,
  type Db,
} from '../sqlite/index.ts';
import { InvalidInputError, SluiceError, errorCode, refuseEmptyPath } from '../errors.ts';
import {
  dropEmptyTargetMeta,
  ensureTargetMeta,
  hasTargetMeta,
  allowProjectionWrites,
  guardProjectionTables,
  readProjections,
  recordSubscribed,
  brokenTriggerProblem,
} from '../apply/target/index.ts';
import { ownedTables } from '../projection/index.ts';
import { MIRROR_ALL, streamMirrorAll } from '../apply/projections/index.ts';
import { lastMarkerCursor, peekEncoding, readExportFile } from './checked-reader.ts';
import { Importer } from './importer.ts';
import { recordRefusal } from './import-refusal.ts';
import type { ImportOptions, ImportReport, ItemStream } from './import-types.ts';
import { checkSegment, looksLikeSegment, refuseJournal, type CheckedSegment } from './segment-check.ts';
import { segmentItems } from './segment-read.ts';
import { noSegmentsIn, segmentFiles } from './segment-files.ts';
import { cursorFileFor } from './resume-point.ts';
import { fileMarkers, refuseGoingBack, segmentMarkers } from './stream-markers.ts';
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
  const stat = fs.statSync(file);
  if (stat.isDirectory()) return importSegments(targetPath, file, options);
  refuseNotRegular(file, stat);
  // Before any read of its bytes: a database in use (a -wal or -journal beside it) is no export, and closing a
  // descriptor of it would release the locks this process's own connections to it hold (sqlite/shm-files.ts).
  refuseJournal(file);
  // A segment (it starts as every SQLite file does), or a folder of them: docs/segment.md.
  if (looksLikeSegment(file)) return importSegments(targetPath, file, options);
  // One file holds one history: a snapshot below a marker before it is refused before a target is opened.
  const markers = fileMarkers(file);
  refuseGoingBack(markers, file);
  const encoding = await peekEncoding(file);
  const fedBy = { via: 'import', file: path.resolve(file), ms: Date.now() } as const;
  return importInto(
    targetPath,
    {
      label: file,
      size: () => fs.statSync(file).size,
      ...(encoding === undefined ? {} : { encoding }),
      read: (o) => readExportFile(file, o),
      lastCursor: () => lastMarkerCursor(file),
      markers: () => markers,
      atHand: true,
    },
    { fedBy, ...options },
    true,
  );
}

/**
 * A pipe (`/dev/stdin` fed by `cat`, bash's `<(zcat e.jsonl.gz)`), a device
 * or a socket: import reads a file more than once and at positions (its
 * header, its first marker, then its lines, then its last byte), which a
 * pipe cannot give. Refused before the target is opened.
 */
function refuseNotRegular(file: string, stat: fs.Stats): void {
  if (stat.isFile()) return;
  const what = stat.isFIFO()
    ? 'a pipe'
    : stat.isSocket()
      ? 'a socket'
      : stat.isCharacterDevice() || stat.isBlockDevice()
        ? 'a device'
        : 'not a regular file';
  throw new InvalidInputError(
    'IMPORT_NOT_A_FILE',
    `${file} is ${what}; import reads a regular file (or a folder of segments), which it reads more than once. Write it to a file first (e.g. zcat e.jsonl.gz > e.jsonl), then import that file. Nothing was written.`,
  );
}

/** importFile over any stream of checked export items, with the same rules. */
export async function importStream(targetPath: string, stream: ItemStream, options: ImportOptions = {}): Promise<ImportReport> {
  return importInto(targetPath, stream, options, false);
}

/**
 * importStream; `files`: the stream is a file's (importFile), whose run
 * takes the target's projection set as a subscriber's does
 * (streamMirrorAll), unless the caller says (ImportOptions.mirrorAll): with
 * no definitions given, "*", a mirror of every table the file carries and
 * of one a later file's snapshot holds, stored in the target's set as sync
 * stores its own (a new target, or one made by an import before the set
 * was stored); a target built from definitions runs them.
 */
async function importInto(targetPath: string, stream: ItemStream, given: ImportOptions, files: boolean): Promise<ImportReport> {
  let options = given;
  const encoding = stream.encoding;
  refuseEmptyPath(targetPath, 'target');
  const made = !fs.existsSync(targetPath);
  const db = openDatabase(targetPath, { create: true, role: 'target' });
  let importer: Importer | undefined;
  let before: { readonly target: boolean; readonly journalMode: string } | undefined;
  let undo = false;
  try {
    options.checkTarget?.(db); // before anything is written (a subscriber's target replaced since its last import)
    before = { target: hasTargetMeta(db, SCHEMA), journalMode: String(db.pragma('journal_mode', { simple: true })) };
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
    useCatchUpCaches(db, SCHEMA, { checkpoint: true, ...(stream.atHand === true ? { checkpointPages: IMPORT_CHECKPOINT_PAGES } : {}) });
    ensureTargetMeta(db, SCHEMA);
    allowProjectionWrites(db); // a protected target's projections (apply/edits/protect.ts)
    // A custom handler's statement that writes another projection's table is refused (CUSTOM_WROTE_PROJECTION), as in a sync.
    guardProjectionTables(db);
    // A subscriber feeds the projections of its source from its first message on: health reads their lag there while it waits for one.
    if (options.fedBy?.via === 'subscribe') await recordSubscribed(db, SCHEMA, options.fedBy);
    // "*" given (--projection '*'): the mirror of every table, beside the definitions given with it, as sync takes it.
    const star = options.projections?.includes(MIRROR_ALL) === true;
    if (star) options = { ...options, projections: options.projections?.filter((d) => d !== MIRROR_ALL) };
    if ((files || star) && options.mirrorAll === undefined) {
      const mirrorAll = streamMirrorAll(db, SCHEMA, readProjections(db, SCHEMA), {
        projections: options.projections,
        ...(star ? { mirrorAll: true } : {}),
      });
      if (mirrorAll !== undefined) options = { ...options, mirrorAll };
    }
    importer = new Importer(db, options);
    return await importer.run(stream);
  } catch (thrown) {
    const err = brokenTriggerError(db, targetPath, thrown, options) ?? thrown;
    // A file refused (or one that failed) is recorded on the projections it concerns, for health, as sync records a failed pass.
    // A subscriber's run that stopped fail-closed too, so that health does not call the target fine after a follower stopped.
    if (options.fedBy !== undefined) recordRefusal(db, SCHEMA, err, options.fedBy, importer?.concerned());
    // A database that was no target, and that this import of a file committed no projection to, is left as it was found.
    if (options.fedBy?.via === 'import' && before !== undefined && !before.target) undo = undoTarget(db, before.journalMode);
    throw err;
  } finally {
    closeDatabase(db);
    if (undo && made) removeMadeDatabase(targetPath);
  }
}

/**
 * SQLite's bare "no such table" when a user's trigger on a projection's
 * table in the target no longer fits it (TARGET_TRIGGER_BROKEN): which
 * trigger, of which table, in which file, and the fix; undefined for any
 * other error.
 */
function brokenTriggerError(db: Db, targetPath: string, err: unknown, options: ImportOptions): SluiceError | undefined {
  if (err instanceof SluiceError || errorCode(err) !== 'SQLITE_ERROR') return undefined;
  let projections: { readonly name: string; readonly tables: readonly string[] }[];
  try {
    projections = readProjections(db, SCHEMA).map((r) => ({ name: r.name, tables: ownedTables(r) }));
  } catch {
    return undefined;
  }
  const fed = options.fedBy;
  const again =
    fed?.via === 'subscribe' ? 'sluice subscribe' : fed?.via === 'import' ? `sluice import ${targetPath} ${fed.file}` : 'the import';
  const problem = brokenTriggerProblem(db, SCHEMA, projections, targetPath, again);
  return problem === undefined ? undefined : new SluiceError('TARGET_TRIGGER_BROKEN', problem, { cause: err });
}

/**
 * A refused import must not leave a target behind where there was none: a
 * new file, made and left empty, read in health as a target with no
 * projections, which is healthy (an empty and ok target), and a user's
 * own database took sluice's tables. So when the import committed no
 * projection, sluice's tables are dropped and the journal mode put back;
 * the caller removes a file it made. Best effort: a database that cannot
 * take it (busy, damaged) keeps what it has. Returns whether it was undone.
 */
function undoTarget(db: Db, journalMode: string): boolean {
  try {
    if (db.inTransaction || !dropEmptyTargetMeta(db, SCHEMA)) return false;
    if (journalMode !== 'wal') db.pragma(`journal_mode = ${journalMode}`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Imports a segment, or a folder of them in name order (docs/segment.md):
 * every one is checked first (segment-check.ts), so a bad one refuses the
 * import before anything is committed; then each is attached and applied
 * like a file, with the same cursor rules.
 */
async function importSegments(targetPath: string, fileOrDir: string, options: ImportOptions): Promise<ImportReport> {
  const files = segmentFiles(fileOrDir);
  const checked: CheckedSegment[] = [];
  for (const f of files) {
    const c = checkSegment(f);
    const first = checked[0];
    if (first !== undefined && c.meta.sourceId !== first.meta.sourceId)
      throw new InvalidInputError(
        'IMPORT_MIXED_SOURCES',
        `Segment ${f} is of source ${c.meta.sourceId}, but ${first.file} of ${first.meta.sourceId}. One folder must hold one source's segments; nothing was committed. Import them into separate targets.`,
      );
    checked.push(c);
  }
  // One folder holds one history: a snapshot below a segment before it is refused before anything is applied.
  const markers = segmentMarkers(checked);
  refuseGoingBack(markers, fileOrDir);
  const fedBy = { via: 'import', file: path.resolve(fileOrDir), ms: Date.now() } as const;
  let total: ImportReport | undefined;
  // How far the folder reaches: its last segment's cursor (ItemStream.lastCursor), for each of them.
  const last = checked.at(-1)?.meta.cursor;
  for (const c of checked) {
    const r = await importInto(
      targetPath,
      {
        label: c.file,
        segment: true,
        size: () => c.size,
        encoding: c.meta.encoding,
        atHand: true,
        read: (o) => segmentItems(c, o),
        lastCursor: () => last,
        markers: () => markers,
      },
      { fedBy, ...options },
      true,
    );
    total =
      total === undefined
        ? r
        : {
            lines: total.lines + r.lines,
            batchesApplied: total.batchesApplied + r.batchesApplied,
            batchesSkipped: total.batchesSkipped + r.batchesSkipped,
            incompleteTail: 0,
            // A projection an earlier segment's snapshot rebuilt says so (ImportReport `rebuilt`), unless a later one did again.
            projections: r.projections.map((p) => {
              const before = total?.projections.find((q) => q.name === p.name)?.rebuilt;
              return p.rebuilt !== undefined || before === undefined ? p : { ...p, rebuilt: before };
            }),
          };
  }
  if (total !== undefined) return total;
  // A segment export's folder whose runs wrote nothing new since its segments were imported and removed: nothing to do.
  const cursor = cursorFileFor(path.resolve(fileOrDir));
  if (fs.existsSync(cursor)) return await importInto(targetPath, { label: fileOrDir, read: emptyItems }, { fedBy, ...options }, true);
  // Any other folder with no segment (of JSONL exports, the wrong one): refused before a target is made.
  throw noSegmentsIn(fileOrDir, targetPath, cursor);
}

// eslint-disable-next-line require-yield
async function* emptyItems(): AsyncGenerator<never, { lines: number; incompleteTail: number }> {
  return { lines: 0, incompleteTail: 0 };
}
