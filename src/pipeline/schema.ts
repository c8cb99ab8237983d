import { z } from 'zod';
import { splitServers } from '../broker/connection/index.ts';
import { ownRecord } from '../sqlite/index.ts';

/*
 * The shape of a pipeline file (sluice.yml): what must exist, declared in
 * one place. This is the schema as a user writes it (shorthands included);
 * load.ts turns a valid file into the normalized Pipeline. Every object is
 * strict: an unknown key is refused with its line, never ignored, so a
 * misspelt option cannot silently fall back to a default. docs/sluice.schema.json
 * is generated from it (scripts/pipeline-schema.ts) for editor completion.
 */

const nonEmpty = z.string().min(1);

export const captureModeSchema = z
  .enum(['images', 'keys', 'counter'])
  .describe('images: before and after images; keys: keys only; counter: only that the table changed');

/** One captured table's options: an object, so that later options (columns) add keys, not shapes. */
export const captureOptionsSchema = z.strictObject({
  mode: captureModeSchema.optional().describe('Capture mode (default images)'),
  exclude: z
    .array(nonEmpty)
    .optional()
    .describe(
      'Columns left out of capture: never journaled, so in no event, snapshot, export or target (not key columns). Absent: the table keeps the set it has; [] captures every column again',
    ),
  include: z
    .array(nonEmpty)
    .optional()
    .describe(
      'Columns new since the table was armed to capture (enable --include): while the table leaves out a column it had then, a new column may be that one renamed, so sluice run re-arms it only once each new column is named here (captured) or in exclude (left out). A column in both is refused',
    ),
});

/** `issues: keys` is shorthand for `issues: {mode: keys}`; `issues:` with no value is `{}`. (ownRecord: a table named __proto__ is kept.) */
const captureEntrySchema = z.union([captureModeSchema, captureOptionsSchema, z.null()]);

export const captureSchema = z
  .union([z.array(nonEmpty).describe('Tables, captured in images mode'), ownRecord(nonEmpty, captureEntrySchema)])
  .describe('The tables of this source to capture: a list, or a map from table to its options');

/** Bounds past which health and /healthz say a target needs action. */
export const healthBoundsSchema = z.strictObject({
  maxLagEvents: z.int().positive().optional().describe('Most events a projection may be behind its source'),
  maxLagMs: z.int().positive().optional().describe('Most milliseconds since the oldest source event not yet applied'),
  maxPassMs: z
    .int()
    .positive()
    .optional()
    .describe('Most milliseconds a pass of sluice run may go without committing before /healthz says it is stalled (default 30000)'),
});

/**
 * A projection entry: "*" (a mirror of every captured table, tables captured
 * later included), a definition file (JSON or TS, relative to the pipeline
 * file), or a definition written inline (docs/projections.md). An inline
 * definition is checked by the projection definition schema, in load.ts.
 */
export const inlineDefinitionSchema = ownRecord(z.string(), z.unknown()).describe('A projection definition (docs/projections.md)');

export const projectionEntrySchema = z.union([
  nonEmpty.describe('"*" (a mirror of every captured table) or a definition file, relative to this file'),
  inlineDefinitionSchema,
]);

export const targetSchema = z.strictObject({
  path: nonEmpty.describe('The target database, relative to this file; built when missing'),
  projections: z.array(projectionEntrySchema).min(1).describe('What the target holds'),
  health: healthBoundsSchema.optional(),
});

/** TLS with the NATS servers: files relative to this file (load.ts checks each exists). */
export const natsTlsSchema = z.strictObject({
  ca: nonEmpty.optional().describe("The CA (PEM) that signed the servers' certificates (default: the system's CAs)"),
  cert: nonEmpty.optional().describe('A client certificate (PEM), for servers that verify clients; with key'),
  key: nonEmpty.optional().describe("The client certificate's key (PEM)"),
});

/**
 * How to reach NATS (docs/broker.md, "Connecting"): the servers, one way to
 * log in (load.ts refuses two), TLS. A secret belongs in the environment:
 * `password: ${NATS_PASSWORD}`.
 */
const natsKeys = {
  nats: z
    .union([nonEmpty, z.array(nonEmpty).min(1)])
    // Each value names a server: "," or " " would connect to none (a client's default, then "Cannot connect to NATS at ").
    .refine((v) => (typeof v === 'string' ? [v] : v).every((s) => splitServers(s).length > 0), {
      message: 'names no server. Write a URL such as nats://HOST:4222, or several, comma separated or as a list',
    })
    .describe('NATS server URL, or several for a cluster'),
  creds: nonEmpty.optional().describe('A .creds file (a user JWT and its nkey seed), relative to this file'),
  user: nonEmpty.optional().describe('Log in as this user (with password)'),
  password: nonEmpty.optional().describe("The user's password: write ${NATS_PASSWORD}, not the password itself"),
  token: nonEmpty.optional().describe('Log in with this token: write ${NATS_TOKEN}, not the token itself'),
  tls: natsTlsSchema.optional().describe('TLS: a CA, and a client certificate and key'),
};

export const natsSchema = z.strictObject(natsKeys);

/** The formats a batch is published in (broker/subjects.ts BATCH_FORMATS). */
const formatSchema = z.enum(['jsonl', 'segment']);

/** A source's `publish`: how to reach NATS, and the formats to publish each batch in. */
export const publishSchema = z.strictObject({
  ...natsKeys,
  formats: z
    .array(formatSchema)
    .min(1)
    .optional()
    .describe(
      'Formats to publish each batch in, each on its own subject: jsonl (for any system), segment (for sluice subscribers). Default [jsonl]',
    ),
});

export const sourceSchema = z.strictObject({
  path: nonEmpty.describe('The source database, relative to this file'),
  capture: captureSchema,
  targets: z.array(targetSchema).optional(),
  publish: publishSchema.optional().describe('Publish this source to NATS JetStream'),
});

export const subscriptionSchema = z.strictObject({
  ...natsKeys,
  source: nonEmpty.describe('The source id the publisher announces (sluice status SRC shows it)'),
  format: formatSchema.optional().describe("The batches to apply: jsonl (default) or segment (the publisher's formats must include it)"),
  path: nonEmpty.describe('The target database, relative to this file'),
  projections: z.array(projectionEntrySchema).min(1).optional().describe('What the target holds (default ["*"])'),
  health: healthBoundsSchema.optional(),
});

export const pipelineFileSchema = z
  .strictObject({
    sources: z.array(sourceSchema).optional(),
    subscribe: z.array(subscriptionSchema).optional(),
    listen: z
      .union([nonEmpty, z.int().min(0).max(65535)])
      .optional()
      .describe('HOST:PORT for /metrics, /healthz and the status page; a bare port binds to 127.0.0.1'),
    prune: z
      .boolean()
      .optional()
      .describe('Drop projections and forget acknowledgements that are no longer declared (default false: report them)'),
  })
  .describe('A sluice pipeline: what must exist (docs/pipeline.md)');

export type PipelineFile = z.infer<typeof pipelineFileSchema>;
