/*
 * Names on the broker (docs/broker.md). One stream per source by default,
 * and every subject carries the source id as one subject token:
 *   sluice.<source>.batch           a batch: its event lines and its batch marker
 *   sluice.<source>.segment         the same batch as a segment (docs/segment.md), for sluice subscribers
 *   sluice.<source>.snapshot.part   a piece of a snapshot: table and row lines
 *   sluice.<source>.snapshot.end    the snapshot's marker (its high-water mark)
 * NATS forbids `.`, `*`, `>` and whitespace in a token (and a stream name
 * may not hold `/` or `\` either): `encodeToken` writes every character but
 * [A-Za-z0-9_-] as `=` and its UTF-8 bytes in hex, so any source id is one
 * valid token and two ids never share one (a lone surrogate, which has no
 * UTF-8 form, is `==` and its code unit in hex).
 */

export function encodeToken(text: string): string {
  if (text === '') return '=';
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0) as number;
    if (/^[A-Za-z0-9_-]$/.test(ch)) out += ch;
    // A lone surrogate has no UTF-8 form: `==` and its code unit in hex (`=` alone is always followed by a hex pair).
    else if (cp >= 0xd800 && cp <= 0xdfff) out += `==${cp.toString(16).toUpperCase()}`;
    else for (const b of Buffer.from(ch, 'utf8')) out += `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The formats a batch is published in, each on its own subject (a snapshot is JSONL on the snapshot subjects, for all). */
export const BATCH_FORMATS = ['jsonl', 'segment'] as const;
export type BatchFormat = (typeof BATCH_FORMATS)[number];

export interface SourceSubjects {
  /** The batches of the format these subjects are for (subjectsOf's `format`). */
  readonly batch: string;
  readonly part: string;
  readonly end: string;
  /** Every subject of the source (a stream's subject and a consumer's filter). */
  readonly all: string;
}

/** A source's subjects, its batches in `format`. */
export function subjectsOf(sourceId: string, format: BatchFormat = 'jsonl'): SourceSubjects {
  const base = `sluice.${encodeToken(sourceId)}`;
  return {
    batch: `${base}.${format === 'segment' ? 'segment' : 'batch'}`,
    part: `${base}.snapshot.part`,
    end: `${base}.snapshot.end`,
    all: `${base}.>`,
  };
}

/** The default stream of a source. */
export function defaultStreamName(sourceId: string): string {
  return `SLUICE_${encodeToken(sourceId)}`;
}

/**
 * A batch's message id: the source, its seq range and the history it
 * belongs to (`history`: the digest of the journal event its end cursor
 * anchors on, feed/anchor.ts). Batch boundaries are deterministic
 * (publish.ts), so a batch published again gets the same id and the
 * broker's dedup window drops the copy; a batch of the same range of
 * another history (the source restored from an older copy and written
 * again) has another event there, so another id, and is stored.
 */
export function batchMsgId(sourceId: string, fromSeq: number, toSeq: number, format: BatchFormat = 'jsonl', history?: string): string {
  return `${sourceId}:${fromSeq}-${toSeq}${history === undefined ? '' : `:${history}`}${format === 'jsonl' ? '' : `:${format}`}`;
}

/** Headers sluice sets on its messages (what a reader needs without parsing the body). */
export const HEADER = {
  /** The source id. */
  source: 'Sluice-Source',
  /** A batch's (fromSeq, toSeq], or a snapshot's seq as `toSeq`. */
  fromSeq: 'Sluice-From-Seq',
  toSeq: 'Sluice-To-Seq',
  /** The cursor to continue from after this batch or snapshot. */
  cursor: 'Sluice-Cursor',
  /** Which snapshot a part or end belongs to (one publisher run's id). */
  snapshot: 'Sluice-Snapshot',
  /** On a segment batch: its events (a JSONL batch counts its lines). */
  events: 'Sluice-Events',
  /** On a segment batch: its source's text encoding (a JSONL batch's marker says it). */
  encoding: 'Sluice-Encoding',
  /** On a snapshot's end: the stream sequence of its first part. */
  snapshotStart: 'Sluice-Snapshot-Start',
  /** On a snapshot's end: how many parts it has (numbered from 0 in their Nats-Msg-Id): a reader tells one missing. */
  snapshotParts: 'Sluice-Snapshot-Parts',
  /**
   * On the end of a snapshot that starts a new position (the old one could
   * not be continued, publish.ts): the seq the history before it had reached
   * on the stream, the publisher's position then. A subscriber past the
   * snapshot's seq and not past this one followed the history it replaces
   * (a source restored from an older copy), also once those batches are gone
   * (purged, dropped by retention).
   */
  replacesSeq: 'Sluice-Replaces-Seq',
} as const;

/**
 * A whole number a header holds, or NaN when the message lacks it: NATS
 * answers a header a message does not carry with '' (which Number reads as
 * 0), and messages of an earlier release lack the newer headers.
 */
export function headerCount(h: { get(name: string): string } | undefined, name: string): number {
  const v = h?.get(name) ?? '';
  return /^[0-9]+$/.test(v) ? Number(v) : NaN;
}
