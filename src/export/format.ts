import { z } from 'zod';
import { jsonValueSchema, ownRecord, TEXT_ENCODINGS } from '../sqlite/index.ts';
import { eventLineSchema } from '../feed/index.ts';

/*
 * The export file (docs/jsonl.md). Every line is one JSON object carrying
 * `sourceId` and `seq`. Event lines are exactly those of `sluice changes`;
 * the other lines carry a `type`:
 *   table    the shape of a table (before its snapshot rows)
 *   row      one snapshot row, at the snapshot's seq
 *   snapshot the end of a snapshot: everything up to `seq` is in the file
 *   batch    the end of a batch of events (fromSeq, seq]: an importer applies
 *            a batch only when it has read this line, so a truncated tail is
 *            never half-applied
 * Markers (table, snapshot, batch) carry the line format version `v`. Since
 * version 2 a snapshot carries its row count per table and a batch its event
 * count, each with the digest of its lines (line-digest.ts): an importer
 * refuses a snapshot or batch that does not match. Version 1 markers had no
 * `v`; an importer refuses them (FORMAT_VERSION). Version 3 event lines
 * may carry `changed` (an update's changed columns): a file of version 2
 * (none) is read as before, every column of its updates changed.
 */

export const FORMAT_VERSION = 3;
/** The marker versions this sluice reads. */
export const READABLE_FORMAT_VERSIONS: readonly number[] = [2, 3];
const version = z.union([z.literal(2), z.literal(3)]);
/** The source's text encoding (docs/jsonl.md, "Text"): an importer refuses a target in another. */
const encoding = z.enum(TEXT_ENCODINGS);
/** sha256 of a section's lines, in hex (line-digest.ts). */
const digest = z.string().regex(/^[0-9a-f]{64}$/);

export const tableLineSchema = z.strictObject({
  type: z.literal('table'),
  v: version,
  encoding,
  sourceId: z.string(),
  seq: z.number().int().nonnegative(),
  table: z.string(),
  // anyNumeric: declared ANY in an ordinary table (NUMERIC affinity); absent otherwise, and in files made before it.
  columns: z.array(z.strictObject({ name: z.string(), type: z.string(), collate: z.string(), anyNumeric: z.literal(true).optional() })),
  keyColumns: z.array(z.string()).min(1),
  withoutRowid: z.boolean(),
  rowidAlias: z.boolean(),
});

export const rowLineSchema = z.strictObject({
  type: z.literal('row'),
  sourceId: z.string(),
  seq: z.number().int().nonnegative(),
  table: z.string(),
  /** ownRecord: a column named __proto__ is kept (z.record drops it). */
  row: ownRecord(z.string(), jsonValueSchema),
});

export const snapshotLineSchema = z.strictObject({
  type: z.literal('snapshot'),
  v: version,
  encoding,
  sourceId: z.string(),
  seq: z.number().int().nonnegative(),
  cursor: z.string(),
  tables: z.array(z.string()),
  /** Row lines per table in this snapshot (ownRecord: a table named __proto__ is kept). */
  rows: ownRecord(z.string(), z.number().int().nonnegative()),
  /** Digest of the snapshot's table and row lines. */
  digest,
});

export const batchLineSchema = z.strictObject({
  type: z.literal('batch'),
  v: version,
  encoding,
  sourceId: z.string(),
  seq: z.number().int().nonnegative(),
  fromSeq: z.number().int().nonnegative(),
  cursor: z.string(),
  /** Event lines in this batch. */
  count: z.number().int().nonnegative(),
  /** Digest of the batch's event lines. */
  digest,
});

/** Any line of an export file. */
export const exportLineSchema = z.union([tableLineSchema, rowLineSchema, snapshotLineSchema, batchLineSchema, eventLineSchema]);
export type ExportLine = z.infer<typeof exportLineSchema>;
export type TableLine = z.infer<typeof tableLineSchema>;
export type RowLine = z.infer<typeof rowLineSchema>;
export type SnapshotLine = z.infer<typeof snapshotLineSchema>;
export type BatchLine = z.infer<typeof batchLineSchema>;
