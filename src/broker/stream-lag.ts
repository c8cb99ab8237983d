import { defaultStreamName, HEADER, subjectsOf } from './subjects.ts';
import { lastMessage, openBroker, streamInfo, type Broker } from './nats.ts';
import { firstBatchAfter } from './subscribe.ts';

/*
 * How far a subscriber's target is behind its stream, read from the broker
 * (a subscriber has no source to ask, as health does for sync): the seqs the
 * stream's batches reach past the target's seq, and how long ago the broker
 * stored the first batch the target has not applied (0 when caught up).
 */

export interface StreamLag {
  readonly lagEvents: number;
  readonly lagMs: number;
}

export interface StreamLagReader {
  /** The lag of a target at `seq`; undefined when the stream cannot be read. */
  lag(seq: number): Promise<StreamLag | undefined>;
  close(): Promise<void>;
}

export async function openStreamLag(url: string, options: { sourceId: string; stream?: string }): Promise<StreamLagReader> {
  const stream = options.stream ?? defaultStreamName(options.sourceId);
  const subjects = subjectsOf(options.sourceId);
  const broker: Broker = await openBroker(url, 'subscribe metrics');
  return {
    lag: async (seq) => {
      const info = await streamInfo(broker, stream);
      if (info === undefined) return undefined;
      const last = await lastMessage(broker, stream, subjects.batch);
      const lastTo = Number(last?.header.get(HEADER.toSeq) ?? 0);
      if (!(lastTo > seq)) return { lagEvents: 0, lagMs: 0 };
      const first = await firstBatchAfter(broker, stream, subjects.batch, seq, info.state.first_seq, info.state.last_seq);
      return { lagEvents: lastTo - seq, lagMs: first === undefined ? 0 : Math.max(0, Date.now() - first.time.getTime()) };
    },
    close: () => broker.close(),
  };
}
