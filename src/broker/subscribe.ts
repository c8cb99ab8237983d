import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkSameFile, heldFile, openDatabase, shellWord, type Db, type FileIdentity } from '../sqlite/index.ts';
import { InvalidInputError, SluiceError, errorCode } from '../errors.ts';
import { REASONS } from '../reasons.ts';
import { lockFollower } from '../apply/sync/index.ts';
import { readProjections } from '../apply/target/index.ts';
import type { ProjectionDefinitionInput } from '../projection/index.ts';
import { importStream, type ImportOptions, type ImportReport } from '../export/index.ts';
import { BATCH_FORMATS, defaultStreamName, HEADER, subjectsOf, type BatchFormat, type SourceSubjects } from './subjects.ts';
import type { NatsTarget } from './connection/index.ts';
import { isStoreLost, isTransient, lastMessage, openBroker, pause, requireStream, type Broker, type Log } from './nats.ts';
import { ConsumerGone, messageLines, SnapshotGone, SnapshotWanted, StreamWentBack } from './message-lines.ts';
import {
  freshConsumer,
  planFromSnapshot,
  planPastSnapshot,
  planStart,
  sourceLastSeq,
  targetPosition,
  type Plan,
  type SubscriberRebuild,
} from './subscribe-plan.ts';
import { mirrorAllAt, redefinedBy, snapshotTables, wantsSnapshot, type SubscribedSet } from './subscribe-wants.ts';
import { messageAtOrAfter } from './nats.ts';

/*
 * Applies a source's stream to a target (docs/broker.md), through import's
 * applier (importStream): the same checks as sync and import (validated
 * cursor, before-images, suspension), and the target's cursor is the truth.
 * Where to start is worked out from that cursor, not from the broker: the
 * first batch the stream holds that ends after it. A target with no
 * projections (or a --projection it does not have yet) starts from the
 * published snapshot; so does one whose cursor is older than the first batch
 * the stream still holds (SUBSCRIBER_BEHIND_STREAM). Messages come through a
 * durable consumer of the target's own, acknowledged once what they carry is
 * committed; a batch delivered twice is dropped by the cursor rules. One
 * subscriber per target: it holds the target's follower lock while it runs.
 * A consumer (or stream) that goes away under it is made again, and a
 * stream that went back under it (its store restored from an older copy:
 * stream sequences it read reused for other messages) is read again
 * (subscribe-plan.ts plans from the target's cursor again).
 */

export interface SubscribeOptions {
  /** The source id whose stream to apply. */
  readonly sourceId: string;
  /** Stream name (default SLUICE_<source id>). */
  readonly stream?: string;
  /** The format of the batches to apply (each is published on its own subject): JSONL by default, or segments. */
  readonly format?: BatchFormat;
  /** Definitions (default: the target's stored ones, else a mirror of every table of the snapshot). */
  readonly projections?: readonly ProjectionDefinitionInput[];
  /**
   * "*" (`--projection '*'`, sluice.yml `projections: ["*"]`): beside
   * `projections`, a mirror of every table the stream carries, also one the
   * source captures later (the snapshot its publisher then publishes,
   * STREAM_TABLES_ADDED). Without `projections` a target made by subscribe
   * has it by default, and keeps it (its projection set stores it).
   */
  readonly mirrorAll?: boolean;
  /** Keep applying new batches until `signal` aborts. */
  readonly follow?: boolean;
  readonly signal?: AbortSignal;
  readonly log?: Log;
  readonly onProgress?: ImportOptions['onProgress'];
  /** After each batch or snapshot the applier took (for metrics): whether it committed it or skipped it as already applied. */
  readonly onBatch?: (b: SubscribedBatch) => void;
  /** Once it knows where it starts (after the first plan, before the first message): for a follower's start line. */
  readonly onStart?: (s: SubscribeStart) => void;
}

export interface SubscribeStart {
  readonly stream: string;
  readonly started: SubscribeReport['started'];
  /** The seq it starts after: the snapshot's, or the target's. */
  readonly seq: number;
}

export interface SubscribedBatch {
  readonly applied: boolean;
  readonly snapshot: boolean;
  /** Event lines the batch carried. */
  readonly events: number;
  /** When the broker stored its message (ms since the epoch). */
  readonly storedMs: number;
  /** The seq it reaches: a batch's last, a snapshot's high-water mark. */
  readonly toSeq: number;
  /** Messages of the stream the subscriber had not been delivered yet when it got this one. */
  readonly pending: number;
}

export interface SubscribeReport extends ImportReport {
  readonly stream: string;
  /** Where it started: the published snapshot, a batch, or the stream's end (nothing new). */
  readonly started: 'snapshot' | 'batch' | 'end';
  /** Why it rebuilt from the snapshot: its cursor was behind the stream, or the target followed another source (a source enabled again). */
  readonly rebuilt?: SubscriberRebuild;
  /** Messages read from the stream. */
  readonly messages: number;
}

/**
 * Applies the stream of `options.sourceId` at `to` (a URL, a comma list of
 * them, or a NatsConnection with its login and TLS) to the target at
 * `targetPath`. The target records the servers without credentials (fed-by).
 */
export async function subscribe(targetPath: string, to: NatsTarget, options: SubscribeOptions): Promise<SubscribeReport> {
  // Connected first: a login or TLS refused leaves no file behind (not even the follower lock beside the target).
  const broker = await openBroker(to, 'subscribe', options.log);
  try {
    // Before anything touches the stream: a second subscriber would make the first one's consumer again under it.
    const lock = lockFollower(targetPath, options.follow === true ? 'subscribe --follow' : 'subscribe');
    try {
      return await new Run(broker, targetPath, options).run();
    } finally {
      lock.release();
    }
  } finally {
    await broker.close();
  }
}

interface Planned {
  readonly plan: Plan;
  /** The stream sequence of the source's last message when planned (sourceLastSeq): where a one-shot run stops. */
  readonly lastSeq: number;
  readonly consumer: Awaited<ReturnType<typeof freshConsumer>>;
}

/** A pause between tries while a follower waits for its stream (or a snapshot in it) to come back. */
const RETRY_MS = 500;

/** How often a subscriber looks at its target's path while no message comes (TARGET_GONE), as sync --follow does while its source is quiet. */
const IDLE_CHECK_MS = 1000;

/**
 * One subscribe: plan from the target's cursor, make the consumer, apply. If
 * the consumer (or its stream) goes away under it (a server that came back
 * on an empty store), it plans again from the target's cursor, which may
 * rebuild from the new stream's snapshot; a follower waits for the stream,
 * and for a snapshot in it, to be published again.
 */
class Run {
  readonly #broker: Broker;
  readonly #target: string;
  /** The servers without credentials (what the target records, and messages name). */
  readonly #url: string;
  readonly #options: SubscribeOptions;
  readonly #log: Log;
  readonly #stream: string;
  readonly #subjects: SourceSubjects;
  /** Counts of the runs of importStream a lost consumer cut short. */
  readonly #done = { lines: 0, batchesApplied: 0, batchesSkipped: 0, messages: 0 };
  #started: SubscribeReport['started'] | undefined;
  /** A temp folder for segment messages while they are applied (each removed once committed). */
  #segments: string | undefined;
  #rebuilt: SubscribeReport['rebuilt'];
  /** The stream sequence of the end of a snapshot met while following that the target wants (SnapshotWanted): the next plan starts from it. */
  #wantedEnd: number | undefined;
  /**
   * The target file this run opened first (#checkTarget): a file at the
   * target's path that is not that one (deleted, or an older copy restored)
   * stops the run with TARGET_GONE, as sync --follow stops, and nothing
   * more is written to either.
   */
  #targetFile: FileIdentity | undefined;
  /** TARGET_GONE, found by the look while the stream was idle: the run throws it once the applier has stopped. */
  #gone: unknown;
  /** The last snapshot this run found not whole in the stream (SnapshotGone): a plan that starts from it again is refused (#notWhole). */
  #broken: SnapshotGone | undefined;

  constructor(broker: Broker, targetPath: string, options: SubscribeOptions) {
    this.#broker = broker;
    this.#target = targetPath;
    this.#url = broker.url;
    this.#options = options;
    this.#log = options.log ?? (() => {});
    this.#stream = options.stream ?? defaultStreamName(options.sourceId);
    this.#subjects = subjectsOf(options.sourceId, options.format ?? 'jsonl');
  }

  async run(): Promise<SubscribeReport> {
    try {
      return await this.#run();
    } finally {
      if (this.#segments !== undefined) fs.rmSync(this.#segments, { recursive: true, force: true });
    }
  }

  async #run(): Promise<SubscribeReport> {
    for (let again = false; ; again = true) {
      const wantedEnd = this.#wantedEnd;
      this.#wantedEnd = undefined;
      const planned =
        wantedEnd !== undefined ? await this.#planWanted(wantedEnd) : again ? await this.#planAfterLoss() : await this.#plan();
      if (planned === undefined) return this.#report(undefined); // stopped while waiting
      const { plan, lastSeq, consumer } = planned;
      if (plan.rebuilt !== undefined) {
        this.#rebuilt = plan.rebuilt;
        const r = plan.rebuilt;
        this.#log(
          r.reason === 'SOURCE_CHANGED'
            ? `sluice subscribe: SOURCE_CHANGED: target ${this.#target} follows source ${r.previousSourceId ?? '(another)'} (at seq ${r.targetSeq}), not ${this.#options.sourceId} (its capture was enabled again, or it is another database); rebuilding from the snapshot of source ${this.#options.sourceId} at seq ${r.snapshotSeq}`
            : r.reason === 'SUBSCRIBER_BEHIND_STREAM'
              ? `sluice subscribe: SUBSCRIBER_BEHIND_STREAM: target ${this.#target} is at seq ${r.targetSeq}, and stream ${this.#stream} holds no batch that continues from there: rebuilding from the snapshot at seq ${r.snapshotSeq}`
              : `sluice subscribe: ${r.reason}: the last snapshot of stream ${this.#stream} does not continue the cursor of target ${this.#target} (at seq ${r.targetSeq}): rebuilding from the snapshot at seq ${r.snapshotSeq}. ${REASONS[r.reason].explain}`,
        );
      }
      const started = plan.start.snapshot !== undefined ? 'snapshot' : plan.start.streamSeq > lastSeq ? 'end' : 'batch';
      if (this.#started === undefined) {
        this.#started = started;
        this.#options.onStart?.({ stream: this.#stream, started, seq: plan.seq });
      }
      const label = `${this.#url} stream ${this.#stream}`;
      const source = messageLines(this.#broker, consumer, {
        subjects: this.#subjects,
        start: plan.start,
        endSeq: this.#options.follow === true ? undefined : lastSeq,
        signal: this.#options.signal,
        label,
        format: this.#options.format ?? 'jsonl',
        // The seq the target has reached in this run: where the plan started, or the last batch handed to the applier since
        // (what it applied may not be committed yet: batches delivered together share a transaction).
        wanted: (toSeq, cursor) => this.#wants(toSeq, cursor, Math.max(plan.seq, source.last()?.toSeq ?? 0)),
        segmentFile: (seq, data) => {
          this.#segments ??= fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-subscribe-'));
          const f = path.join(this.#segments, `${this.#stream}-message-${seq}.segment`);
          fs.writeFileSync(f, data);
          return f;
        },
      });
      let applied = 0;
      let skipped = 0;
      // Told to onBatch once committed: batches already delivered share a transaction (importer.ts).
      const uncommitted: SubscribedBatch[] = [];
      const report = () => {
        for (const b of uncommitted.splice(0)) this.#options.onBatch?.(b);
      };
      const onProgress: ImportOptions['onProgress'] = (p) => {
        this.#options.onProgress?.(p);
        const last = source.last();
        // A snapshot is committed whenever it is reported (batchesApplied counts batches only).
        if (this.#options.onBatch !== undefined && last !== undefined)
          uncommitted.push({ ...last, applied: last.snapshot || p.batchesApplied > applied });
        applied = p.batchesApplied;
        skipped = p.batchesSkipped;
      };
      let result: ImportReport;
      // While no message comes the applier waits on the broker: the target's path is looked at meanwhile, and a target
      // gone stops the reader, so that the applier ends (committing nothing more: its own checks throw TARGET_GONE).
      const idle = setInterval(() => {
        try {
          this.#checkTarget();
        } catch (err) {
          this.#gone ??= err;
          source.close();
        }
      }, IDLE_CHECK_MS);
      try {
        result = await importStream(
          this.#target,
          {
            label,
            ...(plan.encoding === undefined ? {} : { encoding: plan.encoding }),
            read: (o) => source.read(this.#options.sourceId, o),
            ...(plan.cursor === undefined ? {} : { lastCursor: () => plan.cursor }),
            // Batches already delivered share a transaction (fewer commits while it catches up); acked once committed.
            // Not segments: each is attached to the target to be applied, and SQLite cannot ATTACH inside a transaction.
            groupDelivered: (this.#options.format ?? 'jsonl') === 'jsonl',
            committed: () => {
              source.committed();
              report();
            },
          },
          {
            ...(this.#options.projections === undefined ? {} : { projections: this.#options.projections }),
            ...this.#mirrorAll(),
            onProgress,
            checkTarget: (db) => this.#checkTarget(db),
            ...(plan.rebuilt?.reason === 'SOURCE_CHANGED' ? { replaceSource: true } : {}),
            ...(plan.rebuildBelow === undefined ? {} : { rebuildBelow: plan.rebuildBelow }),
            fedBy: { via: 'subscribe', url: this.#url, stream: this.#stream, sourceId: this.#options.sourceId },
            gapFix: (name) => this.#gapFix(name),
            // A follower says it at once (a one-shot run's report says it at its end).
            ...(this.#options.follow === true
              ? {
                  onFailure: (name: string, f: { readonly code: string; readonly message: string }) =>
                    this.#log(
                      `sluice subscribe: ${f.code}: projection ${name}: ${f.message} (nothing of it was committed, and it takes no more batches in this run; the other projections go on. Fix the cause and start sluice subscribe again: it goes on with ${name} from where it failed)`,
                    ),
                }
              : {}),
            noShape: (projection, table, snapshot) => this.#notPublished(projection, table, snapshot),
          },
        );
      } catch (err) {
        if (this.#gone !== undefined) throw this.#gone;
        if (
          !(err instanceof ConsumerGone) &&
          !(err instanceof SnapshotWanted) &&
          !(err instanceof StreamWentBack) &&
          !(err instanceof SnapshotGone)
        )
          throw err;
        // Nothing of the batch in flight was committed: what the target holds is where the next plan starts.
        this.#done.lines += source.lines();
        this.#done.batchesApplied += applied;
        this.#done.batchesSkipped += skipped;
        this.#done.messages += source.messages();
        if (err instanceof SnapshotWanted) {
          this.#wantedEnd = err.endSeq;
          this.#log(`sluice subscribe: ${err.message}; applying it`);
        } else if (err instanceof SnapshotGone) {
          this.#broken = err;
          this.#log(
            `sluice subscribe: ${err.message}; planning again from target ${this.#target}'s cursor (nothing of that snapshot was applied: it starts from the stream's newest snapshot)`,
          );
        } else if (err instanceof StreamWentBack)
          this.#log(
            `sluice subscribe: ${err.message}; planning again from target ${this.#target}'s cursor (it goes on from the batches the stream holds now, or rebuilds from its snapshot when they do not continue it)`,
          );
        else this.#log(`sluice subscribe: ${err.message}; making it again from target ${this.#target}'s cursor`);
        continue;
      } finally {
        clearInterval(idle);
        source.close();
        report(); // batches committed before an error (the one that failed was never reported)
      }
      if (this.#gone !== undefined) throw this.#gone;
      return this.#report({ ...result, messages: source.messages() });
    }
  }

  /**
   * Throws TARGET_GONE when the file at the target's path is not the one
   * this run opened first (sqlite/file-identity.ts): the applier calls it
   * with its connection when it opens the target and before each write, the
   * idle look without one. Nothing is checked before the target is opened.
   */
  #checkTarget(db?: Db): void {
    if (db !== undefined) this.#targetFile ??= heldFile(db);
    checkSameFile(this.#target, this.#targetFile, 'target', 'subscribe');
  }

  /**
   * Throws BROKER_FORMAT_NOT_PUBLISHED when the stream holds the source's
   * last batches only in another format than this subscriber's: two or more
   * of them after its format's last batch (or with none of it). One alone
   * may be a window whose message in this format is still on its way (a
   * publisher of both sends them one after the other), or was cut off by a
   * publisher killed between them, which publishes it again when it starts.
   * Before, such a subscriber applied the snapshot, then nothing: exit 0 on
   * every run, its target never moving, and nothing said why.
   */
  async #checkFormat(): Promise<void> {
    const format = this.#options.format ?? 'jsonl';
    const other = BATCH_FORMATS.find((f) => f !== format) as BatchFormat;
    const otherSubject = subjectsOf(this.#options.sourceId, other).batch;
    const mine = await lastMessage(this.#broker, this.#stream, this.#subjects.batch);
    const first = await messageAtOrAfter(this.#broker, this.#stream, (mine?.seq ?? 0) + 1, otherSubject);
    if (first === undefined) return;
    const second = await messageAtOrAfter(this.#broker, this.#stream, first.seq + 1, otherSubject);
    if (second === undefined) return;
    const since =
      mine === undefined
        ? `only as ${other} (subject ${otherSubject}), none as ${format}`
        : `after seq ${mine.header.get(HEADER.toSeq) ?? '?'} only as ${other} (subject ${otherSubject}): its last ${format} batch ends there`;
    throw new InvalidInputError(
      'BROKER_FORMAT_NOT_PUBLISHED',
      `Stream ${this.#stream} at ${this.#url} holds the batches of source ${this.#options.sourceId} ${since}, and this subscriber reads ${format} batches (subject ${this.#subjects.batch}): it would apply none of them, and target ${this.#target} would never move. Subscribe with --format ${other} (format: ${other} in a sluice.yml subscribe entry), or publish the source with ${format} among its formats (sluice publish SOURCE --format ${[format, other].sort().join(',')}; a pipeline's publish: formats: [${[format, other].sort().join(', ')}]).`,
    );
  }

  /** What a BATCH_GAP of projection `name` says to do: run subscribe again (it rebuilds from the snapshot), and, where that meets it again, what the publisher lacks. */
  #gapFix(name: string): string {
    const format = this.#options.format ?? 'jsonl';
    const other = format === 'jsonl' ? 'segment' : 'jsonl';
    return `Nothing of the batch was applied. Run sluice subscribe again: a target the stream's batches do not continue rebuilds ${name} from the stream's last snapshot. If it stops here again, stream ${this.#stream} holds no ${format} batch of these events after its last snapshot (its publisher added --format ${format} after that snapshot, and published none for it): run sluice publish on the source with --format ${format} among its formats, which then publishes a snapshot the ${format} batches start from (STREAM_FORMAT_ADDED), or subscribe with --format ${other}.`;
  }

  /** A projection of a table the stream carries in no snapshot or batch: the source does not capture it (BROKER_TABLE_NOT_PUBLISHED). */
  #notPublished(
    projection: string,
    table: string,
    snapshot: { readonly seq: number; readonly tables: readonly string[] } | undefined,
  ): Error {
    const holds =
      snapshot === undefined
        ? 'the target has no projection of it and the stream gave no snapshot of it'
        : `its snapshot at seq ${snapshot.seq} holds only ${snapshot.tables.length === 0 ? 'no table' : snapshot.tables.join(', ')}`;
    return new InvalidInputError(
      'BROKER_TABLE_NOT_PUBLISHED',
      `Projection ${projection} reads table ${table}, which stream ${this.#stream} at ${this.#url} does not carry (${holds}): source ${this.#options.sourceId} does not capture ${table} (never enabled, or disabled since), so its publisher publishes nothing of it. No projection was built in ${this.#target}. Capture the table on the source (sluice enable SOURCE ${shellWord(table)}, SOURCE being the database of source ${this.#options.sourceId}): a running publisher then publishes a snapshot that holds it (STREAM_TABLES_ADDED; else run sluice publish), then subscribe again.`,
    );
  }

  #report(last: (ImportReport & { messages: number }) | undefined): SubscribeReport {
    const d = this.#done;
    return {
      lines: d.lines + (last?.lines ?? 0),
      batchesApplied: d.batchesApplied + (last?.batchesApplied ?? 0),
      batchesSkipped: d.batchesSkipped + (last?.batchesSkipped ?? 0),
      incompleteTail: last?.incompleteTail ?? 0,
      // An import that read no line reports no projection: the stored ones are the state (a suspended one still exits 3).
      projections:
        last !== undefined && last.projections.length > 0 ? last.projections : storedProjections(this.#target, this.#options.sourceId),
      stream: this.#stream,
      started: this.#started ?? 'end',
      ...(this.#rebuilt === undefined ? {} : { rebuilt: this.#rebuilt }),
      messages: d.messages + (last?.messages ?? 0),
    };
  }

  /** What this run applies (subscribe-wants.ts). */
  #set(): SubscribedSet {
    const o = this.#options;
    return { sourceId: o.sourceId, projections: o.projections, mirrorAll: o.mirrorAll };
  }

  /** ImportOptions.mirrorAll of this run, read from the target before each import. */
  #mirrorAll(): { mirrorAll?: NonNullable<ReturnType<typeof mirrorAllAt>> } {
    const all = mirrorAllAt(this.#target, this.#set());
    return all === undefined ? {} : { mirrorAll: all };
  }

  /**
   * Whether the target wants the snapshot whose end carries these headers
   * (subscribe-wants.ts), or must weigh it as a subscriber starting then
   * would: one met past the batches that took the target to `reached`,
   * lying below that seq, was published after a history it does not
   * belong to (the source went back: #planWanted). Not asked of the
   * stream's last snapshot when planning (planStart weighs one below the
   * target itself).
   */
  #wants(toSeq: string | undefined, cursor: string | undefined, reached?: number): boolean {
    const snap = snapshotTables(toSeq, cursor);
    if (snap === undefined) return false;
    if (reached !== undefined && snap.seq < reached && snap.cursor.sourceId === this.#options.sourceId) return true;
    return wantsSnapshot(this.#target, this.#set(), snap);
  }

  /**
   * A plan from the snapshot whose end is message `endSeq` (SnapshotWanted);
   * from the target's cursor if the stream no longer holds it whole. One
   * below the target's seq (the source went back) is weighed as a
   * subscriber starting then weighs the stream's last snapshot
   * (planPastSnapshot): rebuilt from, with the reason, unless the batches
   * after it continue the target.
   */
  async #planWanted(endSeq: number): Promise<Planned> {
    const info = await requireStream(this.#broker, this.#stream, this.#options.sourceId);
    const end = await messageAtOrAfter(this.#broker, this.#stream, endSeq, this.#subjects.end);
    let plan: Plan;
    try {
      if (end === undefined || end.seq !== endSeq) return await this.#plan(true);
      const snap = snapshotTables(end.header.get(HEADER.toSeq), end.header.get(HEADER.cursor));
      // What the applier took before it stopped at the snapshot is committed: the target's cursor is where it got.
      const position = targetPosition(this.#target, this.#options);
      const below = snap !== undefined && position.seq !== undefined && snap.seq < position.seq ? snap.seq : undefined;
      plan =
        below !== undefined
          ? await planPastSnapshot(this.#broker, this.#stream, this.#subjects, position, info.state.first_seq, info.state.last_seq, end)
          : await planFromSnapshot(this.#broker, this.#stream, this.#subjects, info.state.first_seq, end);
      if (below !== undefined && plan.rebuilt === undefined)
        this.#log(
          `sluice subscribe: the snapshot at seq ${below} of stream ${this.#stream} lies below target ${this.#target}'s seq ${plan.seq}, and the batches after it continue the target's history: going on from them`,
        );
    } catch (err) {
      if (errorCode(err) !== 'BROKER_NO_SNAPSHOT') throw err;
      return this.#plan(true);
    }
    const consumer = await freshConsumer(this.#broker, this.#stream, this.#target, this.#subjects, plan.start.streamSeq);
    return { plan, lastSeq: await sourceLastSeq(this.#broker, this.#stream, this.#options.sourceId), consumer };
  }

  /**
   * Refuses a plan that starts from the snapshot this run found not whole
   * (a part of it deleted from the stream, the rest still there: reading it
   * again would meet the same hole). BROKER_NO_SNAPSHOT: a follower waits for
   * a newer one, a one-shot run fails.
   */
  #notWhole(plan: Plan): void {
    const broken = this.#broken;
    if (broken === undefined || plan.start.snapshot === undefined || plan.start.snapshot !== broken.snapshot) return;
    const all = subjectsOf(this.#options.sourceId).all;
    throw new InvalidInputError(
      'BROKER_NO_SNAPSHOT',
      `Stream ${this.#stream} at ${this.#url} holds snapshot ${broken.snapshot} of source ${this.#options.sourceId} with part of it missing (${broken.why}), and no newer one; target ${this.#target} needs a whole snapshot to start, and nothing of it was written. Purge the source's messages from the stream (nats stream purge ${this.#stream} --subject '${all}'), then run sluice publish on the source: it publishes a snapshot into a stream that has none.`,
    );
  }

  /** The first plan, and the consumer made for it: a stream or snapshot missing is an error (BROKER_NO_STREAM, BROKER_NO_SNAPSHOT). */
  async #plan(remade = false): Promise<Planned> {
    // The stream's end is read before the target's cursor and the search: a batch published meanwhile is after it, so the consumer gets it.
    const info = await requireStream(this.#broker, this.#stream, this.#options.sourceId);
    await this.#checkFormat();
    const position = targetPosition(this.#target, this.#options);
    const plan = await planStart(
      this.#broker,
      this.#stream,
      this.#subjects,
      position,
      info.state.first_seq,
      info.state.last_seq,
      remade,
      (end) => this.#wants(end.header.get(HEADER.toSeq), end.header.get(HEADER.cursor)),
      (end) => {
        const snap = snapshotTables(end.header.get(HEADER.toSeq), end.header.get(HEADER.cursor));
        return snap !== undefined && redefinedBy(this.#target, this.#set(), snap);
      },
    );
    this.#notWhole(plan);
    const consumer = await freshConsumer(this.#broker, this.#stream, this.#target, this.#subjects, plan.start.streamSeq);
    return { plan, lastSeq: await sourceLastSeq(this.#broker, this.#stream, this.#options.sourceId), consumer };
  }

  /**
   * A plan after the consumer was lost. A follower waits (one stderr line)
   * while the server does not answer, has no stream (until a publisher makes
   * it again) or no snapshot in it that the target needs; a one-shot run
   * fails as at its start. Undefined when stopped while waiting.
   */
  async #planAfterLoss(): Promise<Planned | undefined> {
    let said: string | undefined;
    // Not at once: a server that has just come back may not have its JetStream (or a publisher its stream) ready.
    await pause(RETRY_MS, this.#options.signal);
    for (;;) {
      if (this.#options.signal?.aborted === true) return undefined;
      try {
        const planned = await this.#plan(true);
        if (said !== undefined) this.#log(`sluice subscribe: stream ${this.#stream} at ${this.#url} is back; resuming`);
        return planned;
      } catch (err) {
        const code = errorCode(err);
        const waitable = code === 'BROKER_NO_STREAM' || code === 'BROKER_NO_SNAPSHOT' || isTransient(err) || isStoreLost(err);
        if (this.#options.follow !== true || !waitable) throw err;
        const why = err instanceof SluiceError ? `${err.code}: ${err.message}` : (err as Error).message;
        const key = typeof code === 'string' ? code : 'transient';
        if (said !== key) this.#log(`sluice subscribe: waiting for stream ${this.#stream} at ${this.#url} to come back (${why})`);
        said = key;
        await pause(RETRY_MS, this.#options.signal);
      }
    }
  }
}

/** The target's projections of `sourceId`, as a report lists them (a run stopped before it applied anything). */
function storedProjections(targetPath: string, sourceId: string): ImportReport['projections'] {
  if (!fs.existsSync(targetPath)) return [];
  const db = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    return readProjections(db, 'main')
      .filter((p) => p.sourceId === sourceId)
      .map((p) => ({ name: p.name, state: p.state, ...(p.reason === null ? {} : { reason: p.reason }), seq: p.seq }));
  } finally {
    db.close();
  }
}
