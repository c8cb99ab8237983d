import type { ProjectionDefinitionInput } from '../../projection/index.ts';
import type { RearmReport } from '../../capture/index.ts';
import type { DroppedIndex, DroppedTrigger, LostProjection } from '../target/index.ts';
import type { NothingToMirrorSay, Unmirrored } from '../projections/index.ts';

/* What a Syncer takes and reports (sync.ts). */

export interface SyncOptions {
  /**
   * Definitions to sync (added to the target's projection set), and `'*'`
   * for a mirror of every captured images-mode table. Default (none): the
   * target's set, its stored definitions and "*" when it holds it; a new
   * target gets "*" (docs/projections.md, "The projection set").
   */
  readonly projections?: readonly (ProjectionDefinitionInput | '*')[];
  /**
   * Most events per target transaction. Default: DEFAULT_BATCH by kind,
   * 100,000 for mirror, map and fts5 (set-based), 10,000 for custom.
   */
  readonly batchSize?: number;
  /** Record each projection's position in the source's _sluice_consumers, as `<projection>@<target's real path>` (informational). Default true. */
  readonly acknowledge?: boolean;
  readonly onProgress?: (event: SyncProgress) => void;
  /**
   * What onProgress is told of a snapshot. 'rows' (the default): its rows
   * of the table's count, after each part of BUILD_CHUNK rows. Counting,
   * finding the parts' bounds and copying part by part cost about a fifth
   * of a large mirror's first build (a table copied in parts loses SQLite's
   * transfer of whole records). 'start': only that it starts, and the table
   * copied whole, as without onProgress (sluice run's targets, which show a
   * building phase, not rows).
   */
  readonly snapshotProgress?: 'rows' | 'start';
  /**
   * Projections the first `runOnce` rebuilds from a snapshot (RunOptions.reinit).
   * Checked by `open`: an unknown name is refused there, before anything is
   * written (a target file it made is removed again).
   */
  readonly reinit?: readonly string[];
  /**
   * Most ms to wait for another process's write lock on the target (or on
   * the source, when sync must write it: a re-arm) before failing with
   * TARGET_BUSY / SOURCE_BUSY (FileBusyError, exit 1; nothing of the batch
   * committed). Default DEFAULT_BUSY_TIMEOUT_MS (5000). CLI: --busy-timeout.
   */
  readonly busyTimeoutMs?: number;
  /**
   * Most MB (2^20 bytes) the target may grow to in this run (PRAGMA
   * max_page_count on sync's connection). A batch that would grow it past
   * that fails as on a full disk: TARGET_FULL (FileFullError, exit 1),
   * nothing of it committed. CLI: --max-target-mb.
   */
  readonly maxTargetMb?: number;
  /**
   * Notice writes of other programs to the projections' tables while this
   * Syncer is open (target-watch.ts): each run, and `noticeTargetEdits()`
   * between runs, compare a projection that another program wrote with the
   * source and suspend it when it differs (TARGET_EDITED). Default true;
   * false only to measure what it costs (bench/apply.ts).
   */
  readonly watchTarget?: boolean;
  /**
   * What the NOTHING_TO_SYNC refusal ("*" with no table to mirror and
   * nothing else to sync) says, in the caller's terms: sluice run and a
   * converging pass give the pipeline file's fix (declare a table in images
   * mode), since the `sluice enable --mode images` sync names would be
   * switched back to the declared mode. Default: sync's own message.
   */
  readonly nothingToMirror?: NothingToMirrorSay;
}

/** Options for one `runOnce`. */
export interface RunOptions {
  /**
   * Write the acknowledgement rows (SyncOptions.acknowledge) at most once
   * per this many ms. A pass within the interval keeps its positions pending
   * for a later pass or `flushAcknowledgements()`, and a throttled write does
   * not wait for the source's write lock (busy: it stays pending). For
   * follow mode, where an acknowledgement per pass would take the source's
   * write lock once per commit. Default 0: every run, as before.
   */
  readonly acknowledgeIntervalMs?: number;
  /**
   * A follower's pass: a projection this Syncer stepped within the last
   * second, whose source table has no event past its cursor, is left at its
   * cursor (checked against the source, without a target transaction)
   * instead of committing the new high-water mark (quiet-projections.ts).
   * Its report then has the cursor it stays at. Default false: every
   * projection is stepped.
   */
  readonly leaveQuiet?: boolean;
  /**
   * Stops the run between two target transactions once aborted: the batch
   * in flight commits (or rolls back) as usual, no further one starts. A
   * projection left behind is reported with `stopped: true` and continues
   * from its cursor at the next run. For follow mode's SIGINT/SIGTERM.
   */
  readonly signal?: AbortSignal;
  /**
   * Projections to rebuild from a snapshot in this run, whatever their state
   * (the way out of a suspension such as TARGET_DIVERGED once its cause is
   * fixed). Each is rebuilt in one target transaction: its old tables stay
   * readable until the new ones commit with their cursor. Reported with
   * `rebuilt: 'REINIT'`. An unknown name is refused before anything runs.
   */
  readonly reinit?: readonly string[];
}

export interface SyncProgress {
  readonly projection: string;
  readonly phase: 'snapshot' | 'catch-up' | 'current' | 'suspended';
  /** The projection's seq after this step. */
  readonly seq: number;
  /** The source's high-water mark as last read in this run (at least `seq`): what the projection catches up to. */
  readonly sourceSeq: number;
  /** Events applied to this projection in this run so far (row changes: a key change is two in a mirror). */
  readonly events: number;
  /**
   * Events of the source's journal handed over to this projection in this
   * run so far: what the source committed, each event once (projections of
   * one table each read the same ones).
   */
  readonly sourceEvents?: number;
  /** The projection's source table. */
  readonly sourceTable?: string;
  /**
   * Source rows a snapshot of this run has read so far (a protected
   * rebuild: copied so far); kept on the events after it in the run.
   */
  readonly rows?: number;
  /** The rows the snapshot reads in all (the source table's count in its read transaction), when counted. */
  readonly rowsTotal?: number;
  /**
   * The projection's seq when this run started on it (0 before its first
   * snapshot): the share done is (seq - startSeq) / (sourceSeq - startSeq).
   */
  readonly startSeq?: number;
  /** Milliseconds since this run started on the projection (events / elapsedMs is its rate). */
  readonly elapsedMs?: number;
}

export interface ProjectionReport {
  readonly name: string;
  readonly state: 'active' | 'suspended' | 'building';
  readonly reason?: string;
  readonly detail?: Record<string, unknown>;
  /** Events (transitions, for mirror/map) applied in this run. */
  readonly applied: number;
  /** Rows copied by a snapshot in this run (first run or rebuild). */
  readonly snapshotRows?: number;
  /**
   * Why this run rebuilt the projection from a snapshot, if it did.
   * CAPTURE_REARMED: opening the source re-armed its capture (SyncReport.rearmed).
   */
  readonly rebuilt?: string;
  readonly cursor: string | null;
  readonly seq: number;
  /** Set when this projection's run failed (nothing of the failed batch was committed). */
  readonly error?: { readonly code: string; readonly message: string };
  /** Set when RunOptions.signal stopped the run before this projection caught up. */
  readonly stopped?: true;
  /** The rebuild was built beside the live projection in bounded transactions and swapped in (a protected rebuild). */
  readonly swapped?: true;
  /** Indexes a user had added to the projection's tables that its rebuild could not make again (the others were). */
  readonly droppedIndexes?: readonly DroppedIndex[];
  /** Triggers a user had added to the projection's tables that its rebuild could not make again (the others were), each with its SQL. */
  readonly droppedTriggers?: readonly DroppedTrigger[];
  /** Target transactions this run committed for the projection (a snapshot, or a batch of events); 0 when absent. */
  readonly batches?: number;
  /** When the last of them committed (ms since the epoch); absent when this run committed none. */
  readonly lastCommitMs?: number;
}

export interface SyncReport {
  readonly sourceSeq: number;
  readonly projections: readonly ProjectionReport[];
  /**
   * What opening the source re-armed (tables whose triggers were missing or
   * altered, or whose schema changed), each with its reason; the generation
   * moved, so cursors made before rebuild once (rebuilt: CAPTURE_REARMED).
   * In the first run after the open only.
   */
  readonly rearmed?: RearmReport;
  /** When "*" runs: the captured tables it does not mirror, and why (a table captured in keys or counter mode, or one whose table a definition writes). */
  readonly unmirrored?: readonly Unmirrored[];
  /**
   * Projections the source acknowledges for this target (its consumers,
   * `<projection>@<target's real path>`) that the target does not hold and
   * this run does not build: the target was deleted and made again, or one
   * was removed without `sluice drop` (CONSUMER_NOT_BUILT; the CLI exits 3).
   * Not looked for with `acknowledge: false`.
   */
  readonly lost?: readonly LostProjection[];
  /** Acknowledgements this run forgot on the source: of projections `sluice drop` removed from the target. */
  readonly forgotten?: readonly string[];
}
