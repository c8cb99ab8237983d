import type { FedBy, DroppedIndex, DroppedTrigger } from '../apply/target/index.ts';
import type { DefinitionInput, MirrorAll } from '../apply/projections/index.ts';
import type { ExportItem, ReadOptions, ReadTotals } from './checked-reader.ts';
import type { Db, TextEncoding } from '../sqlite/index.ts';
import type { ReasonCode } from '../reasons.ts';
import type { StreamMarker } from './stream-markers.ts';

/* What import takes and reports (import.ts), apart from it so that the Importer (importer.ts) reads them without a circle. */

export interface ImportOptions {
  /**
   * Definitions (default: the target's projection set, as sync runs it: on
   * a new target "*", a mirror of every table in the file and of one a
   * later file's snapshot holds, which importFile stores in the set).
   * `"*"` among them (MIRROR_ALL) asks for that mirror beside the others, as
   * sync takes it: importInto turns it into `mirrorAll`, and the Importer
   * never sees it.
   */
  readonly projections?: readonly DefinitionInput[];
  /**
   * How the target's projections are fed, recorded in their rows for health
   * (apply/target/fed-by.ts): importFile records the file and the time, subscribe
   * its broker and stream. Default: nothing recorded. With `import`, a file
   * refused (or an import that failed) is recorded on the projections it
   * concerns for health, and the next import that succeeds clears it
   * (import-refusal.ts).
   */
  readonly fedBy?: FedBy;
  /**
   * What a BATCH_GAP error says to do for projection `projection`: a
   * subscriber's repair (run it again, and what the publisher lacks). Default:
   * for an import, the file's repair; else apply the batch that holds the
   * missing events first, or sync from the stored cursor.
   */
  readonly gapFix?: (projection: string) => string;
  /**
   * A projection the target holds of another source is rebuilt from the
   * stream's snapshot, and follows the stream's source from then on, instead
   * of refused with SOURCE_CHANGED: a subscriber told the new id of a source
   * whose capture was enabled again (broker/subscribe-plan.ts decides).
   */
  readonly replaceSource?: boolean;
  /**
   * The stream's first snapshot does not continue the target's projections
   * of its source, though it lies below their seq (a subscriber whose source
   * was restored from an older copy: broker/subscribe-plan.ts decides, and
   * says why): it is installed over each of them, with this reason, where
   * their seq alone would have them hold it.
   */
  readonly rebuildBelow?: ReasonCode;
  /**
   * The error for projection `projection`, of table `table`, that neither
   * the stream's snapshot (at seq `seq`, holding `tables`) nor the target
   * has a shape for: a subscriber names its stream and the source's capture
   * (BROKER_TABLE_NOT_PUBLISHED). Default: IMPORT_NO_SHAPE, naming the file.
   */
  readonly noShape?: (
    projection: string,
    table: string,
    snapshot: { readonly seq: number; readonly tables: readonly string[] } | undefined,
  ) => Error;
  /**
   * "*": beside the definitions (given, else the target's stored ones), a
   * mirror of every table a snapshot of the stream holds that none of them
   * takes (projection-set.ts streamMirrors), as sync makes the mirror of a
   * table enabled since; stored in the target's projection set unless it
   * is stored there already. A subscriber decides (broker/subscribe-wants.ts).
   */
  readonly mirrorAll?: MirrorAll;
  /**
   * When a custom handler's failure fails its projection (recorded in the
   * target as sync records it; the others go on): its name, and the code and
   * message recorded. The report also carries it (`error`).
   */
  readonly onFailure?: (projection: string, failure: { readonly code: string; readonly message: string }) => void;
  /**
   * Called with the target's connection once it is opened, before anything
   * is written, then before each batch and snapshot is applied, before a
   * snapshot or a group of batches commits, and before the run's last
   * writes: throws to stop the import with nothing more committed (a
   * subscriber's TARGET_GONE, when the file at the target's path is no
   * longer the one it opened: sqlite/file-identity.ts).
   */
  readonly checkTarget?: (db: Db) => void;
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
    /** Its custom handler failed in this run (its throw, or a statement sluice refused it): what was recorded, as sync records it. */
    readonly error?: { readonly code: string; readonly message: string };
    /**
     * Why a snapshot of the stream rebuilt it over what it held: the stream
     * does not continue its cursor (the reason sync gives: HISTORY_DIVERGED,
     * TABLE_REARMED, GENERATION_CHANGED, FILE_CHANGED, ...). Absent when
     * the snapshot was simply newer, or none was installed.
     */
    readonly rebuilt?: string;
    /** What to do, for a mirror "*" asks for that the target does not hold (state `pending`, MIRROR_NOT_BUILT). */
    readonly action?: string;
    readonly droppedTriggers?: readonly DroppedTrigger[];
  }[];
}

/** A stream of checked export items (a file, or batches from a broker): what import applies. */
export interface ItemStream {
  /** Names the stream in errors (`<label>:<line>`). */
  readonly label: string;
  /** The stream is a segment file's (import.ts): its items are numbered in their order, not by lines, so errors name the file alone. */
  readonly segment?: boolean;
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
  /**
   * A live stream that hands over what is already delivered without waiting
   * (a subscriber's buffered messages): consecutive batches share one target
   * transaction while the next one is already there, and it commits as soon
   * as the next one is not (or at the kinds' batch size, as atHand). A batch
   * never waits in an open transaction for the network.
   */
  readonly groupDelivered?: boolean;
  /**
   * After each commit on the target: what the stream handed over until then
   * is durable (a subscriber acks its messages). Called after the onProgress
   * of the batches it commits.
   */
  readonly committed?: () => void;
  /**
   * The cursor of the furthest marker the stream is known to reach before it
   * is read (a file's last batch or snapshot, a segment folder's last
   * segment's, the snapshot a subscriber starts from), or undefined. A
   * snapshot the target holds at or past its seq is installed again when
   * that cursor does not continue the target's (cursorContinues), since the
   * stream's batches would not: the snapshot's own cursor comes only after
   * its rows. A hint: what is applied is checked as it is read.
   */
  readonly lastCursor?: () => string | undefined;
  /**
   * The stream's `snapshot` and `batch` markers, in order, when known
   * before it is read (a file's or a folder's: stream-markers.ts; not a
   * live stream's). Given, a projection past the stream's snapshot is
   * continued by it only through a batch ending exactly at its seq that
   * continues its cursor, else rebuilt from the snapshot; and a stream
   * whose marker continues a history the projection was rebuilt away from
   * changes nothing for it. A hint as lastCursor is.
   */
  readonly markers?: () => readonly StreamMarker[];
  /** Reads the stream once, checked (see checked-reader.ts). */
  read(options: ReadOptions): AsyncGenerator<ExportItem, ReadTotals>;
}
