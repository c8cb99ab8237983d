import { JetStreamApiError, type StreamConfig } from '@nats-io/jetstream';
import { InvalidInputError } from '../errors.ts';

/*
 * A stream made beforehand with limits (docs/broker.md invites max_msgs,
 * max_age...) that cannot hold one snapshot of the source: with the default
 * discard policy (old) the stream drops the snapshot's first parts as its
 * last ones go in, so it never holds a whole one, and every subscriber that
 * needs one fails with BROKER_NO_SNAPSHOT, whose fix (publish again) cannot
 * help; with discard new the server refuses a message ("maximum messages
 * exceeded"), which was an INTERNAL error. The publisher checks the limits
 * before it sends a snapshot, and after (a limit it could not foresee: the
 * stream already dropped its first part), and a refusal for a full stream
 * names the stream and its limits: BROKER_STREAM_LIMITS.
 *
 * A stream's max_msg_size (headers and data of one message) below the
 * server's max_payload: the publisher reads it when it opens the stream and
 * at each snapshot check, and cuts every message to it (lineBudget); the
 * server's refusal of one over it ("message size exceeds maximum allowed",
 * a limit lowered under a running publisher) makes it read the limit again
 * and cut again, and an event or snapshot row no message under it can carry
 * names the stream and the limit (tooLargeForStream).
 */

/** What one snapshot takes in the stream: messages (its parts and its end), and bytes (of its lines; the stream counts headers too). */
export interface SnapshotSize {
  readonly messages: number;
  /** Its part messages: all on one subject (max_msgs_per_subject). */
  readonly parts: number;
  readonly bytes: number;
}

/** The stream's limits, as `name value` words (only those set), for an error. */
function limitsOf(c: Pick<StreamConfig, 'max_msgs' | 'max_bytes' | 'max_msgs_per_subject' | 'max_age' | 'discard'>): string {
  const set: string[] = [];
  if (c.max_msgs > 0) set.push(`max_msgs ${c.max_msgs}`);
  if (c.max_bytes > 0) set.push(`max_bytes ${c.max_bytes}`);
  if (c.max_msgs_per_subject > 0) set.push(`max_msgs_per_subject ${c.max_msgs_per_subject}`);
  if (c.max_age > 0) set.push(`max_age ${c.max_age / 1e9} s`);
  set.push(`discard ${c.discard}`);
  return set.join(', ');
}

const FIX = (stream: string) =>
  `Raise the stream's limits to hold a snapshot and the batches after it (nats stream edit ${stream}), or delete the stream (nats stream rm ${stream}): sluice publish makes it again without limits. Then publish again.`;

/** BROKER_STREAM_LIMITS when the stream's limits cannot hold a snapshot of `size` (checked before it is sent). */
export function checkSnapshotFits(stream: string, config: StreamConfig, size: SnapshotSize): void {
  const over =
    config.max_msgs > 0 && size.messages > config.max_msgs
      ? `max_msgs ${config.max_msgs}, but one snapshot of the source is ${size.messages} messages`
      : config.max_bytes > 0 && size.bytes > config.max_bytes
        ? `max_bytes ${config.max_bytes}, but one snapshot of the source is more than ${size.bytes} bytes`
        : config.max_msgs_per_subject > 0 && size.parts > config.max_msgs_per_subject
          ? `max_msgs_per_subject ${config.max_msgs_per_subject}, but one snapshot of the source is ${size.parts} messages on its part subject`
          : undefined;
  if (over === undefined) return;
  throw new InvalidInputError(
    'BROKER_STREAM_LIMITS',
    `Stream ${stream} holds at most ${over} (${size.messages} messages, ${size.bytes} bytes of lines): ${config.discard === 'new' ? 'the server would refuse its last parts' : 'the stream would drop its first parts as the last ones go in'}, so no subscriber could start from it. Nothing of it was published. ${FIX(stream)}`,
  );
}

/**
 * BROKER_STREAM_LIMITS for a stream with max_msgs_per_subject. Every batch of
 * a format goes on one subject and the snapshot on subjects of its own: the
 * limit drops the oldest batches while the stream keeps the snapshot before
 * them, so its first message stays the snapshot's and nothing says a new one
 * is needed. Every subscriber that starts from the snapshot would stop where
 * the dropped batches were (BATCH_GAP), run after run. Checked when publish
 * opens the stream and at each snapshot check (a limit set on a stream
 * publish already publishes to).
 */
export function checkNoPerSubjectLimit(stream: string, config: StreamConfig): void {
  if (!(config.max_msgs_per_subject > 0)) return;
  throw new InvalidInputError(
    'BROKER_STREAM_LIMITS',
    `Stream ${stream} has max_msgs_per_subject ${config.max_msgs_per_subject}: it would drop the oldest batches (all on one subject) and keep the snapshot before them (on subjects of its own), so every subscriber that starts from the snapshot would stop at the batches dropped. Nothing more was published. Remove the limit (nats stream edit ${stream} --max-msgs-per-subject=-1) and bound the stream with max_msgs, max_bytes or max_age, which drop its oldest messages first (publish then publishes a new snapshot as needed), or delete the stream (nats stream rm ${stream}): sluice publish makes it again without limits. Then publish again.`,
  );
}

/** BROKER_STREAM_LIMITS for a snapshot the stream dropped the first part of as soon as it was published. */
export function snapshotDropped(
  stream: string,
  config: StreamConfig,
  size: SnapshotSize,
  start: number,
  firstSeq: number,
): InvalidInputError {
  return new InvalidInputError(
    'BROKER_STREAM_LIMITS',
    `Stream ${stream} dropped the snapshot just published (${size.messages} messages, ${size.bytes} bytes of lines, from stream seq ${start}) at once: its first message is now seq ${firstSeq}. Its limits (${limitsOf(config)}) do not hold a snapshot of the source, so no subscriber could start from it. ${FIX(stream)}`,
  );
}

/** Whether `err` is the server refusing a message because the stream is full (discard new). */
export function isStreamFull(err: unknown): boolean {
  return err instanceof JetStreamApiError && /^maximum (messages|bytes|messages per subject) exceeded/i.test(err.message);
}

/** BROKER_STREAM_LIMITS for a message the server refused because stream `stream` is full (isStreamFull). */
export function streamFull(stream: string, config: StreamConfig | undefined, err: unknown): InvalidInputError {
  return new InvalidInputError(
    'BROKER_STREAM_LIMITS',
    `Stream ${stream} refused a message: ${(err as Error).message}${config === undefined ? '' : ` (its limits: ${limitsOf(config)})`}. With discard new a full stream takes nothing more, so its subscribers would never get the source's next changes. ${FIX(stream)}`,
    { cause: err },
  );
}

/** Bytes of headers a message is given room for under a limit of `limit` bytes: 16 KiB, or a quarter of a smaller limit. */
function headroom(limit: number): number {
  return Math.min(16 * 1024, Math.floor(limit / 4));
}

/**
 * Bytes of lines one message may carry: under the server's max_payload
 * (less 16 KiB for headers, at least 1 KiB) and, when the stream has one
 * (above 0), under its max_msg_size (less its headroom).
 */
export function lineBudget(maxPayload: number, maxMsgSize: number): number {
  const payload = Math.max(1024, maxPayload - 16 * 1024);
  return maxMsgSize > 0 ? Math.min(payload, maxMsgSize - headroom(maxMsgSize)) : payload;
}

/** Whether the stream's max_msg_size is what bounds a message (lineBudget), not the server's max_payload. */
export function boundByStream(maxPayload: number, maxMsgSize: number): boolean {
  return maxMsgSize > 0 && lineBudget(maxPayload, maxMsgSize) < lineBudget(maxPayload, -1);
}

const MSG_SIZE_FIX = (stream: string) =>
  `Raise the stream's limit (nats stream edit ${stream} --max-msg-size=-1, or a size that holds it), or delete the stream (nats stream rm ${stream}): sluice publish makes it again without limits. Then publish again.`;

/** BROKER_STREAM_LIMITS for one line (`what`: an event, a snapshot row) larger than a message under the stream's max_msg_size may carry. */
export function tooLargeForStream(stream: string, maxMsgSize: number, what: string, bytes: number, budget: number): InvalidInputError {
  return new InvalidInputError(
    'BROKER_STREAM_LIMITS',
    `Stream ${stream} takes messages of at most max_msg_size ${maxMsgSize} bytes, headers included: ${what} alone is ${bytes} bytes of a message, more than one may carry there (${budget} bytes, with room for its headers), and it cannot be cut. Nothing more was published. ${MSG_SIZE_FIX(stream)}`,
  );
}

/** Whether `err` is the server refusing a message over the stream's max_msg_size. */
export function isOverMaxMsgSize(err: unknown): boolean {
  return err instanceof JetStreamApiError && /^message size exceeds maximum allowed/i.test(err.message);
}

/** BROKER_STREAM_LIMITS for a message of `bytes` bytes of data the server refused as over the stream's max_msg_size (isOverMaxMsgSize). */
export function overMaxMsgSize(stream: string, maxMsgSize: number | undefined, bytes: number, err: unknown): InvalidInputError {
  return new InvalidInputError(
    'BROKER_STREAM_LIMITS',
    `Stream ${stream} refused a message of ${bytes} bytes of data and its headers: ${(err as Error).message}${maxMsgSize === undefined ? '' : ` (max_msg_size ${maxMsgSize})`}. Nothing more was published. ${MSG_SIZE_FIX(stream)}`,
    { cause: err },
  );
}
