import fs from 'node:fs';
import { openDatabase } from '../sqlite/index.ts';
import { readProjections, type ProjectionRecord } from '../apply/target/index.ts';
import type { FedLag } from '../apply/check/index.ts';
import { SluiceError } from '../errors.ts';
import type { StoredMsg } from '@nats-io/jetstream';
import { BATCH_FORMATS, defaultStreamName, HEADER, subjectsOf } from './subjects.ts';
import { connectionLabel, splitServers, type NatsConnection, type NatsTarget } from './connection/index.ts';
import { lastMessage, openBroker, streamInfo, type Broker } from './nats.ts';
import { firstBatchAfter, planStart, targetPosition, type SubscriberRebuild, type TargetPosition } from './subscribe-plan.ts';

/*
 * How far a subscriber's target is behind its stream, read from the broker
 * (a subscriber has no source to ask, as health does for sync): the seqs the
 * stream reaches past the target's seq (its last batch, or a snapshot
 * published after it), and how long ago the broker stored the first message
 * the target has not applied (0 when caught up). A snapshot stored after the
 * last batch is where the stream reaches, also below that batch: the source
 * went back (restored from an older copy, SEQ_REGRESSED) and its publisher
 * published it at the restored seq; the batches before it are of the
 * history it replaced, which no target rebuilt from it lacks. Given the
 * target's position, also whether its next subscribe rebuilds it from the
 * stream's snapshot, and why, as the subscriber decides it (planStart).
 */

export interface StreamLag {
  /** The seq the stream reaches: its last batch's, or its last snapshot's if that is further. */
  readonly sourceSeq: number;
  readonly lagEvents: number;
  readonly lagMs: number;
  /** The next subscribe rebuilds the target from the stream's snapshot (asked with its position): why, and at which seqs. */
  readonly rebuild?: SubscriberRebuild;
}

export interface StreamLagReader {
  /** The stream read. */
  readonly stream: string;
  /**
   * The lag of a target at `seq`; undefined when the stream does not exist.
   * With `position` (targetPosition: the target's projections of the
   * source), also whether its next subscribe rebuilds it (`rebuild`).
   */
  lag(seq: number, position?: TargetPosition): Promise<StreamLag | undefined>;
  close(): Promise<void>;
}

export async function openStreamLag(
  url: NatsTarget,
  options: { sourceId: string; stream?: string; who?: string },
): Promise<StreamLagReader> {
  const stream = options.stream ?? defaultStreamName(options.sourceId);
  const subjects = subjectsOf(options.sourceId);
  // A publisher writes its batches in the formats it is told to, each on its own subject (JSONL, segments, or both, of the
  // same seqs): the stream reaches the furthest of them. Reading the JSONL subject alone, a stream of segments only said lag 0.
  const batchSubjects = BATCH_FORMATS.map((f) => subjectsOf(options.sourceId, f).batch);
  const broker: Broker = await openBroker(url, options.who ?? 'subscribe metrics');
  return {
    stream,
    lag: async (seq, position) => {
      const info = await streamInfo(broker, stream);
      if (info === undefined) return undefined;
      const lasts = await Promise.all(batchSubjects.map((s) => lastMessage(broker, stream, s)));
      const end = await lastMessage(broker, stream, subjects.end);
      const lastTo = Math.max(0, ...lasts.map((m) => Number(m?.header.get(HEADER.toSeq) ?? 0)));
      const snapTo = Number(end?.header.get(HEADER.toSeq) ?? 0);
      // The last snapshot stored after every batch: the batches before it reach no further than it but in a history it replaced.
      const snapLast = end !== undefined && lasts.every((m) => m === undefined || m.seq < end.seq);
      const sourceSeq = snapLast ? snapTo : Math.max(lastTo, snapTo);
      const rebuild = position === undefined ? undefined : await nextRebuild(position);
      if (!(sourceSeq > seq)) return { sourceSeq, lagEvents: 0, lagMs: 0, ...(rebuild === undefined ? {} : { rebuild }) };
      // Past the last snapshot, the stream's history is the target's from it on: a batch before it may be of one it replaced.
      const from = end !== undefined && snapTo <= seq ? end.seq + 1 : info.state.first_seq;
      // The first batch past it in any format: the earliest stored (one format's copy of a range may be later than the other's).
      const firsts = await Promise.all(
        batchSubjects
          .filter((_, i) => lasts[i] !== undefined)
          .map((s) => firstBatchAfter(broker, stream, s, seq, from, info.state.last_seq)),
      );
      const first = firsts.reduce<StoredMsg | undefined>(
        (a, m) => (m === undefined || (a !== undefined && a.time.getTime() <= m.time.getTime()) ? a : m),
        undefined,
      );
      // No batch after it: the snapshot past it is what it has not applied.
      const oldest = first ?? end;
      return {
        sourceSeq,
        lagEvents: sourceSeq - seq,
        lagMs: oldest === undefined ? 0 : Math.max(0, Date.now() - oldest.time.getTime()),
        ...(rebuild === undefined ? {} : { rebuild }),
      };
    },
    close: () => broker.close(),
  };

  /**
   * Whether the next subscribe of a target at `position` rebuilds it from
   * the stream's snapshot, planned as the subscriber plans its start (in
   * the format whose batches the stream holds: JSONL, else segments). A
   * plan that fails (no snapshot the target could start from) is left to
   * that subscribe to say: the lag is all this tells.
   */
  async function nextRebuild(position: TargetPosition): Promise<SubscriberRebuild | undefined> {
    try {
      const info = await streamInfo(broker, stream);
      if (info === undefined) return undefined;
      let planned = subjectsOf(options.sourceId, 'jsonl');
      for (const f of BATCH_FORMATS) {
        const s = subjectsOf(options.sourceId, f);
        if ((await lastMessage(broker, stream, s.batch)) !== undefined) {
          planned = s;
          break;
        }
      }
      const plan = await planStart(broker, stream, planned, position, info.state.first_seq, info.state.last_seq);
      return plan.rebuilt;
    } catch (err) {
      if (err instanceof SluiceError) return undefined;
      throw err;
    }
  }
}

/**
 * The lag of every projection of a target that has no source path and is
 * not imported (fed by subscribe, or by what the target does not record),
 * read from each source's stream at `url` (the stream `options.stream`, else
 * the one subscribe recorded, else the source's default), for health
 * (`fedLag`): a projection whose stream is missing, or whose broker cannot be
 * reached, gets why, which health reports as a problem.
 *
 * @example
 * const fedLag = await readStreamLags('cache.db', 'nats://127.0.0.1:4222');
 * const h = health('cache.db', { fedLag });
 */
export async function readStreamLags(targetPath: string, url: NatsTarget, options: { stream?: string } = {}): Promise<Map<string, FedLag>> {
  return readLags(
    targetPath,
    fedProjections(targetPath).map((p) => ({
      p,
      url,
      stream: options.stream ?? (p.fedBy?.via === 'subscribe' ? p.fedBy.stream : undefined),
      recorded: false,
    })),
  );
}

/**
 * readStreamLags where each subscribed projection's subscriber reads: the
 * broker URL and stream the target recorded (apply/target/fed-by.ts). Health
 * without --nats; a projection that records neither is left out (its lag
 * stays unknown). The target records no credentials: `access` is how to log
 * in to those servers and trust them (health's --nats-creds, --nats-tls-ca...,
 * or a pipeline file's subscribe entry). When `access` names servers too (a
 * subscribe entry's) and they are the recorded ones, it is used as it is:
 * a login written in their URL (`nats://app:${NATS_PASSWORD}@host:4222`)
 * logs in there as it does for the subscriber. Such a login is never sent
 * to other servers than the ones it was written for.
 */
export async function readRecordedStreamLags(targetPath: string, access: Partial<NatsConnection> = {}): Promise<Map<string, FedLag>> {
  const { auth, tls } = access;
  const login = { ...(auth === undefined ? {} : { auth }), ...(tls === undefined ? {} : { tls }) };
  const connectionTo = (recorded: string): NatsConnection => {
    const servers = splitServers(recorded);
    return access.servers !== undefined && sameServers(servers, splitServers(connectionLabel({ servers: access.servers })))
      ? { ...login, servers: access.servers }
      : { ...login, servers };
  };
  return readLags(
    targetPath,
    fedProjections(targetPath).flatMap((p) =>
      p.fedBy?.via === 'subscribe' ? [{ p, url: connectionTo(p.fedBy.url), stream: p.fedBy.stream, recorded: true }] : [],
    ),
  );
}

/** Whether two lists of servers (each without credentials) name the same servers, in any order. */
function sameServers(a: readonly string[], b: readonly string[]): boolean {
  const key = (l: readonly string[]) => JSON.stringify([...new Set(l)].sort());
  return key(a) === key(b);
}

/** The target's projections with no source path, not suspended and not imported. */
function fedProjections(targetPath: string): ProjectionRecord[] {
  if (!fs.existsSync(targetPath)) return []; // health says so itself
  const db = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    return readProjections(db, 'main').filter((p) => p.sourcePath === null && p.state !== 'suspended' && p.fedBy?.via !== 'import');
  } catch {
    return []; // a target health cannot read: health reports it
  } finally {
    db.close();
  }
}

/** The target's position for its next subscribe of source `sourceId` (targetPosition); undefined when it cannot be read (health says why). */
function positionOf(targetPath: string, sourceId: string): TargetPosition | undefined {
  try {
    return fs.existsSync(targetPath) ? targetPosition(targetPath, { sourceId }) : undefined;
  } catch {
    return undefined;
  }
}

interface LagRead {
  readonly p: ProjectionRecord;
  readonly url: NatsTarget;
  readonly stream: string | undefined;
  /** The URL is the one subscribe recorded (not given with --nats). */
  readonly recorded: boolean;
}

async function readLags(targetPath: string, reads: readonly LagRead[]): Promise<Map<string, FedLag>> {
  const out = new Map<string, FedLag>();
  const groups = new Map<string, LagRead[]>();
  for (const r of reads) {
    const key = JSON.stringify([connectionLabel(r.url), r.stream ?? null, r.p.sourceId]);
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  for (const mine of groups.values()) {
    const { url, stream, recorded, p: first } = mine[0] as LagRead;
    const shown = connectionLabel(url);
    const where = recorded ? `NATS at ${shown} (where sluice subscribe reads it)` : `NATS at ${shown}`;
    let reader: StreamLagReader | undefined;
    try {
      reader = await openStreamLag(url, { sourceId: first.sourceId, ...(stream === undefined ? {} : { stream }), who: 'health' });
      // The target as its next subscribe of this source finds it (a target no longer there: no plan).
      const position = positionOf(targetPath, first.sourceId);
      for (const { p } of mine) {
        const lag = await reader.lag(p.seq, position);
        out.set(
          p.name,
          lag ?? {
            unknown: `stream ${reader.stream} does not exist on ${where} (the server lost it, or nothing was published to it yet), so how far ${p.name} is behind cannot be known: run sluice publish on the source with --nats ${shown}, and keep sluice subscribe --follow running`,
          },
        );
      }
    } catch (err) {
      const why = err instanceof SluiceError ? `${err.code}: ${err.message}` : (err as Error).message;
      for (const { p } of mine)
        out.set(p.name, {
          unknown: `the lag of ${p.name} cannot be read from ${where} (${why}); check the broker, or pass its URL with --nats`,
        });
    } finally {
      await reader?.close();
    }
  }
  return out;
}
