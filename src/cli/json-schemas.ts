import { z } from 'zod';
import { jsonValueSchema } from '../index.ts';

/*
 * The stable --json output of every command. `emit` validates each object
 * against its schema before printing, so the documented shape (docs/cli.md)
 * and the real one cannot drift apart. Fields may be added; none are removed.
 */
/*
 * Built once, on first use: constructing these ~350 zod schemas took about
 * 10 ms of every command's start, though only --json output reads them. Each
 * export is a z.lazy of its schema here, so a command loads them only when
 * it prints JSON (or a test parses its output).
 */
function build() {
  const reason = z.string();

  /** A table that enable or sync re-armed, and why it was not armed (an UnarmedReason, or MODE_CHANGED). */
  const rearmedTable = z.object({ table: z.string(), reason, detail: z.string().optional() });

  /** The retired names of the code beside it (src/reasons.ts `replaces`), for one release after a rename; absent when there are none. */
  const aliases = z.array(z.string()).min(1).optional();

  const errorOutput = z.object({ error: z.object({ code: z.string(), message: z.string(), aliases }) });

  const enableOutput = z.object({
    sourceId: z.string(),
    generation: z.number().int(),
    created: z.boolean(),
    added: z.array(z.string()),
    rearmed: z.array(z.string()),
    rearmedReasons: z.array(rearmedTable),
    journalMode: z.string(),
    switchedToWal: z.boolean(),
    /** Retained journal rows purged of columns newly left out of capture (--exclude); absent when none were. */
    purgedRows: z.number().int().optional(),
    /** sluice's tables made again, empty, after they were dropped outside sluice (_sluice_pending); absent when none were. */
    remade: z.array(z.string()).optional(),
  });

  const disableOutput = z.object({
    removed: z.array(z.string()),
    /** With tables (`disable SRC TABLE...`): the tables taken out of capture, the generation after, and the journal rows deleted with them. */
    tables: z.array(z.object({ table: z.string(), reason })).optional(),
    generation: z.number().int().optional(),
    purgedEvents: z.number().int().optional(),
  });
  const bumpOutput = z.object({ generation: z.number().int() });
  /** The acknowledgement row `forget` removed: its name, the seq it had acknowledged, and a sync consumer's projection and target (null for another consumer). */
  const forgetOutput = z.object({
    consumer: z.string(),
    seq: z.number().int(),
    projection: z.string().nullable(),
    target: z.string().nullable(),
  });
  const dropOutput = z.object({ projection: z.string(), dropped: z.array(z.string()) });
  const protectOutput = z.object({
    protected: z.boolean(),
    tables: z.array(z.object({ projection: z.string(), table: z.string() })),
    unguarded: z.array(z.object({ projection: z.string(), table: z.string(), why: z.string() })),
    wasUnguarded: z.array(z.object({ projection: z.string(), table: z.string() })),
  });
  const pruneOutput = z.object({ deleted: z.number().int(), prunedThrough: z.number().int() });

  const statusOutput = z.object({
    enabled: z.boolean(),
    sourceId: z.string().nullable(),
    generation: z.number().int(),
    seq: z.number().int(),
    prunedThrough: z.number().int(),
    retention: z.number().int(),
    journalRows: z.number().int(),
    lastReason: z.string().nullable(),
    problem: z.string().optional(),
    tables: z.array(
      z.object({
        name: z.string(),
        mode: z.enum(['images', 'keys', 'counter']),
        keyColumns: z.array(z.string()),
        excluded: z.array(z.string()),
        lastSeq: z.number().int(),
        armed: z.boolean(),
        reason: reason.optional(),
        detail: z.string().optional(),
        /** Unarmed until enable is told the columns to leave out (a column left out may have moved): those to name in --exclude. */
        exclude: z.array(z.string()).optional(),
        /** Held (with exclude) only by these columns, new since the table was armed: naming each in --exclude or --include arms it again. */
        newColumns: z.array(z.string()).optional(),
      }),
    ),
    consumers: z.array(
      z.object({
        name: z.string(),
        seq: z.number().int(),
        lag: z.number().int(),
        updatedMs: z.number().int(),
        projection: z.string().nullable(),
        kind: z.string().nullable(),
        target: z.string().nullable(),
        targetState: z.enum(['present', 'gone', 'lost', 'dropped', 'unknown']).nullable(),
        /** For a consumer whose projection is gone or lost: the commands that clear it (forget, or build it again). */
        fix: z.string().optional(),
      }),
    ),
  });

  const syncOutput = z.object({
    sourceSeq: z.number().int(),
    projections: z.array(
      z.object({
        name: z.string(),
        state: z.enum(['active', 'suspended', 'building']),
        reason: reason.optional(),
        detail: z.record(z.string(), z.unknown()).optional(),
        applied: z.number().int(),
        snapshotRows: z.number().int().optional(),
        rebuilt: z.string().optional(),
        swapped: z.literal(true).optional(),
        cursor: z.string().nullable(),
        seq: z.number().int(),
        error: z.object({ code: z.string(), message: z.string(), aliases }).optional(),
        stopped: z.literal(true).optional(),
        droppedIndexes: z.array(z.object({ name: z.string(), table: z.string(), why: z.string() })).optional(),
        droppedTriggers: z.array(z.object({ name: z.string(), table: z.string(), why: z.string(), sql: z.string() })).optional(),
      }),
    ),
    rearmed: z.object({ tables: z.array(rearmedTable), fromGeneration: z.number().int(), generation: z.number().int() }).optional(),
    unmirrored: z.array(z.object({ table: z.string(), mode: z.enum(['images', 'keys', 'counter']), why: z.string() })).optional(),
    /** Projections the source acknowledges for this target that it does not hold and this run does not build (CONSUMER_NOT_BUILT: exit 3). */
    lost: z
      .array(
        z.object({
          consumer: z.string(),
          projection: z.string(),
          kind: z.string().nullable(),
          seq: z.number().int(),
          updatedMs: z.number().int(),
          why: z.enum(['replaced', 'removed']),
          code: z.literal('CONSUMER_NOT_BUILT'),
          message: z.string(),
        }),
      )
      .optional(),
    /** Acknowledgements this run forgot on the source: of projections sluice drop removed from the target. */
    forgotten: z.array(z.string()).optional(),
  });

  const verifyOutput = z.object({
    ok: z.boolean(),
    sourceSeq: z.number().int(),
    projections: z.array(
      z.object({
        name: z.string(),
        ok: z.boolean(),
        seq: z.number().int(),
        checked: z.number().int(),
        inFlight: z.number().int(),
        diffs: z.array(z.object({ key: z.array(jsonValueSchema), kind: z.enum(['missing', 'extra', 'different']) })),
        reason: z.string().optional(),
        skipped: z.string().optional(),
        caveats: z.array(z.string()).optional(),
        repair: z.string().optional(),
        sourceAffinity: z
          .object({
            table: z.string(),
            columns: z.array(z.string()),
            misfits: z.array(
              z.object({
                column: z.string(),
                affinity: z.string(),
                count: z.number().int(),
                classes: z.array(z.string()),
                key: z.array(jsonValueSchema),
                value: z.string(),
              }),
            ),
            rewrite: z.string(),
            message: z.string(),
          })
          .optional(),
        suspended: z.literal(true).optional(),
        cleared: z.literal(true).optional(),
      }),
    ),
  });

  const exportOutput = z.object({
    out: z.string(),
    cursor: z.string().nullable(),
    rows: z.number().int(),
    events: z.number().int(),
    batches: z.number().int(),
  });

  const importOutput = z.object({
    lines: z.number().int(),
    batchesApplied: z.number().int(),
    batchesSkipped: z.number().int(),
    incompleteTail: z.number().int(),
    projections: z.array(
      z.object({
        name: z.string(),
        state: z.string(),
        reason: z.string().optional(),
        seq: z.number().int(),
        droppedIndexes: z.array(z.object({ name: z.string(), table: z.string(), why: z.string() })).optional(),
        error: z.object({ code: z.string(), message: z.string() }).optional(),
        rebuilt: reason.optional(),
        action: z.string().optional(),
        droppedTriggers: z.array(z.object({ name: z.string(), table: z.string(), why: z.string(), sql: z.string() })).optional(),
      }),
    ),
  });

  const publishOutput = z.object({
    sourceId: z.string(),
    stream: z.string(),
    subject: z.string(),
    cursor: z.string().nullable(),
    seq: z.number().int(),
    batches: z.number().int(),
    events: z.number().int(),
    duplicates: z.number().int(),
    snapshots: z.array(z.object({ seq: z.number().int(), rows: z.number().int(), reason, aliases: z.array(z.string()).optional() })),
  });

  const subscribeOutput = importOutput.extend({
    stream: z.string(),
    started: z.enum(['snapshot', 'batch', 'end']),
    rebuilt: z
      .object({ reason, targetSeq: z.number().int(), snapshotSeq: z.number().int(), previousSourceId: z.string().optional() })
      .optional(),
    messages: z.number().int(),
  });

  const projectionHealth = z.object({
    name: z.string(),
    kind: z.string(),
    state: z.string(),
    reason: z.string().nullable(),
    detail: z.unknown(),
    seq: z.number().int(),
    sourcePath: z.string().nullable(),
    sourceSeq: z.number().int().nullable(),
    lagEvents: z.number().int().nullable(),
    lagMs: z.number().nullable(),
    lastError: z.string().nullable(),
    failure: z
      .object({ code: z.string(), message: z.string(), ms: z.number().int().nullable(), consecutive: z.number().int().min(1) })
      .nullable(),
    rebuild: z.string().nullable(),
    needsAction: z.boolean(),
    action: z.string().optional(),
    problems: z.array(z.string()),
    /** How it is fed (absent on a pending or lost entry; null when a target made before it was recorded does not say). */
    fedBy: z
      .discriminatedUnion('via', [
        z.object({ via: z.literal('sync'), source: z.string() }),
        z.object({ via: z.literal('subscribe'), url: z.string(), stream: z.string(), sourceId: z.string() }),
        z.object({ via: z.literal('import'), file: z.string(), ms: z.number().int() }),
      ])
      .nullable()
      .optional(),
    /** Something true that needs no action: an imported projection's lag is not tracked. */
    note: z.string().optional(),
  });

  const healthOutput = z.object({
    ok: z.boolean(),
    projections: z.array(projectionHealth),
  });

  /** One part of a `sluice run` process (src/pipeline/status.ts: RunPart). */
  const runPart = z.object({
    kind: z.enum(['capture', 'target', 'publish', 'subscribe', 'http']),
    name: z.string(),
    state: z.enum(['starting', 'running', 'retrying', 'stopping', 'stopped']),
    phase: z.enum(['building', 'following']).optional(),
    stalled: z.object({ sinceMs: z.number().int(), boundMs: z.number().int() }).optional(),
    failure: z
      .object({
        code: z.string(),
        message: z.string(),
        ms: z.number().int(),
        attempts: z.number().int().min(1),
        retryMs: z.number().int().nullable(),
      })
      .nullable(),
  });

  /** `health --config FILE --json` (src/pipeline/status.ts: PipelineHealth). */
  const pipelineHealthOutput = z.object({
    ok: z.boolean(),
    config: z.string(),
    checkedMs: z.number().int(),
    sources: z.array(
      z.object({
        path: z.string(),
        ok: z.boolean(),
        sourceId: z.string().nullable(),
        seq: z.number().int().nullable(),
        tables: z.array(
          z.object({
            table: z.string(),
            declared: z.boolean(),
            captured: z.boolean(),
            armed: z.boolean(),
            mode: z.string().nullable(),
            problem: z.string().optional(),
          }),
        ),
        acknowledgements: z.array(
          z.object({
            consumer: z.string(),
            target: z.string().nullable(),
            projection: z.string().nullable(),
            declared: z.boolean(),
            seq: z.number().int(),
          }),
        ),
        problems: z.array(z.string()),
      }),
    ),
    targets: z.array(
      z.object({
        path: z.string(),
        source: z.string().nullable(),
        via: z.enum(['sync', 'subscribe']),
        exists: z.boolean(),
        ok: z.boolean(),
        projections: z.array(projectionHealth.extend({ declared: z.boolean() })),
        bounds: z.object({ maxLagEvents: z.number().int().nullable(), maxLagMs: z.number().int().nullable() }),
        problems: z.array(z.string()),
      }),
    ),
    problems: z.array(z.string()),
    running: z
      .object({
        pid: z.number().int().nullable(),
        healthz: z.string().nullable(),
        parts: z.array(runPart).nullable(),
        problems: z.array(z.string()),
        note: z.string().optional(),
      })
      .optional(),
  });

  /** `plan --json` (src/pipeline/plan.ts: PipelinePlan). */
  const planOutput = z.object({
    config: z.string(),
    prune: z.boolean(),
    converged: z.boolean(),
    sources: z.array(
      z.object({
        path: z.string(),
        sourceId: z.string().nullable(),
        enable: z.array(
          z.object({
            table: z.string(),
            mode: z.enum(['images', 'keys', 'counter']),
            from: z.string().nullable(),
            exclude: z.array(z.string()).optional(),
            include: z.array(z.string()).optional(),
          }),
        ),
        held: z.array(z.object({ table: z.string(), newColumns: z.array(z.string()), code: z.literal('SCHEMA_CHANGED'), fix: z.string() })),
        enableRefused: z.array(
          z.object({ tables: z.array(z.string()), mode: z.enum(['images', 'keys', 'counter']), code: z.string(), fix: z.string() }),
        ),
        undeclaredCapture: z.array(z.object({ table: z.string(), fix: z.string() })),
        acknowledgements: z.array(
          z.object({
            consumer: z.string(),
            target: z.string(),
            projection: z.string(),
            does: z.enum(['forget', 'undeclared']),
            fix: z.string(),
          }),
        ),
      }),
    ),
    targets: z.array(
      z.object({
        path: z.string(),
        source: z.string(),
        exists: z.boolean(),
        refused: z.object({ code: z.string(), projection: z.string().nullable(), fix: z.string() }).nullable(),
        projections: z.array(
          z.object({
            name: z.string(),
            kind: z.string(),
            does: z.enum(['build', 'continue', 'rebuild', 'refuse', 'suspend', 'drop', 'undeclared']),
            reason: z.string().nullable(),
            classification: z.string().nullable(),
            fix: z.string().optional(),
            redefined: z.boolean().optional(),
          }),
        ),
      }),
    ),
  });

  /** What `sluice run` serves at /healthz and to its status page (src/pipeline/status.ts: RunStatus). */
  const runStatusOutput = pipelineHealthOutput.extend({
    run: z.object({
      pid: z.number().int(),
      startedMs: z.number().int(),
      configError: z.object({ code: z.string(), message: z.string(), ms: z.number().int() }).nullable(),
      loadedMs: z.number().int(),
      parts: z.array(runPart),
    }),
  });

  const statePart = z.enum(['rows', 'cursor', 'keys', 'auxiliary']);
  const classification = z.enum(['Compatible', 'Rebuildable', 'Rejected']);
  const proof = z.object({ holds: z.boolean(), why: z.string() });
  const sourceShape = z.object({
    table: z.string(),
    columns: z.array(z.object({ name: z.string(), type: z.string(), collate: z.string(), anyNumeric: z.literal(true).optional() })),
    keyColumns: z.array(z.string()),
    withoutRowid: z.boolean(),
    rowidAlias: z.boolean(),
  });
  const definitionInputs = z.object({
    name: z.string(),
    fingerprint: z.string().nullable(),
    definition: z.unknown(),
    sourceShape: sourceShape.nullable(),
  });
  const bytes = z.number().int().nullable();

  const explainOutput = z.object({
    ok: z.boolean(),
    sourceSeq: z.number().int(),
    projections: z.array(
      z.object({
        name: z.string(),
        kind: z.string(),
        sourceTable: z.string(),
        targetTable: z.string().nullable(),
        classification,
        reason,
        affected: z.array(statePart),
        changes: z.array(
          z.object({
            change: z.looseObject({ kind: z.string() }),
            classification,
            reason,
            affected: z.array(statePart),
            proof: z.object({ rows: proof.optional(), cursor: proof.optional(), keys: proof.optional(), auxiliary: proof.optional() }),
            why: z.string().optional(),
            suspends: z.string().optional(),
          }),
        ),
        inputs: z.object({ old: definitionInputs.nullable(), new: definitionInputs }),
        cost: z.object({ rows: bytes, liveRows: bytes, liveBytes: bytes, neededBytes: bytes, freeBytes: bytes }),
        sync: z.discriminatedUnion('does', [
          z.object({ does: z.literal('continue') }),
          z.object({ does: z.literal('rebuild'), reason: z.string().nullable(), swapped: z.boolean() }),
          z.object({ does: z.literal('refuse'), code: z.string(), run: z.boolean() }),
          z.object({ does: z.literal('suspend'), reason: z.string() }),
        ]),
        repair: z.string().optional(),
      }),
    ),
  });

  const alterOutput = z.object({
    dryRun: z.boolean(),
    statements: z.number().int(),
    seq: z.number().int(),
    generation: z.number().int(),
    tables: z.array(
      z.object({
        table: z.string(),
        change: z.enum(['altered', 'rebuilt', 'dropped']),
        columnsBefore: z.array(z.string()),
        columnsAfter: z.array(z.string()),
        added: z.array(z.string()),
        removed: z.array(z.string()),
        renamed: z.array(z.object({ from: z.string(), to: z.string() })),
      }),
    ),
    consumers: z.array(
      z.object({
        consumer: z.string(),
        seq: z.number().int(),
        tables: z.array(z.string()),
        effects: z.array(z.object({ table: z.string(), outcome: z.enum(['rebuilds', 'suspends', 'depends']), detail: z.string() })),
      }),
    ),
    /** What a projection of a table changed in place does, stated once (absent when no table changed in place). */
    rules: z.string().optional(),
    /** With --target: each target's projections as explain classifies them over the source the DDL leaves (explainOutput, plus the target). */
    targets: z.array(explainOutput.extend({ target: z.string() })).optional(),
  });
  const queryOutput = z.object({
    columns: z.array(z.string()),
    rows: z.array(z.array(jsonValueSchema)),
    changes: z.number().int(),
    warnings: z
      .array(
        z.object({
          code: z.string(),
          projection: z.string(),
          table: z.string(),
          message: z.string(),
          /** USER_TRIGGER_WRITES_PROJECTION: the trigger, the table it is on, and whose `table` is (null: sluice's own); `projection` is the one sync no longer applies. */
          trigger: z.string().optional(),
          on: z.string().optional(),
          owner: z.string().nullable().optional(),
        }),
      )
      .optional(),
  });
  const stripOutput = z.object({ out: z.string(), removed: z.array(z.string()) });

  /** `init DB --json`: the pipeline file written, and what it declares. */
  const initOutput = z.object({
    out: z.string(),
    source: z.string(),
    target: z.string(),
    tables: z.array(z.string()),
    skipped: z.array(z.object({ table: z.string(), code: z.string() })),
    search: z.object({ name: z.string(), table: z.string(), columns: z.array(z.string()) }).nullable(),
  });

  const demoOutput = z.object({
    ok: z.boolean(),
    dir: z.string(),
    ms: z.number(),
    steps: z.array(z.object({ step: z.string(), ok: z.boolean(), ms: z.number(), detail: z.string() })),
  });

  return {
    aliases,
    errorOutput,
    enableOutput,
    disableOutput,
    bumpOutput,
    forgetOutput,
    dropOutput,
    protectOutput,
    pruneOutput,
    statusOutput,
    syncOutput,
    verifyOutput,
    exportOutput,
    importOutput,
    publishOutput,
    subscribeOutput,
    projectionHealth,
    healthOutput,
    pipelineHealthOutput,
    planOutput,
    runStatusOutput,
    explainOutput,
    alterOutput,
    queryOutput,
    stripOutput,
    initOutput,
    demoOutput,
  };
}

let built: ReturnType<typeof build> | undefined;
const all = () => (built ??= build());

export const aliases = z.lazy(() => all().aliases);
export const errorOutput = z.lazy(() => all().errorOutput);
export const enableOutput = z.lazy(() => all().enableOutput);
export const disableOutput = z.lazy(() => all().disableOutput);
export const bumpOutput = z.lazy(() => all().bumpOutput);
export const forgetOutput = z.lazy(() => all().forgetOutput);
export const dropOutput = z.lazy(() => all().dropOutput);
export const protectOutput = z.lazy(() => all().protectOutput);
export const pruneOutput = z.lazy(() => all().pruneOutput);
export const statusOutput = z.lazy(() => all().statusOutput);
export const syncOutput = z.lazy(() => all().syncOutput);
export const verifyOutput = z.lazy(() => all().verifyOutput);
export const exportOutput = z.lazy(() => all().exportOutput);
export const importOutput = z.lazy(() => all().importOutput);
export const publishOutput = z.lazy(() => all().publishOutput);
export const subscribeOutput = z.lazy(() => all().subscribeOutput);
export const projectionHealth = z.lazy(() => all().projectionHealth);
export const healthOutput = z.lazy(() => all().healthOutput);
export const pipelineHealthOutput = z.lazy(() => all().pipelineHealthOutput);
export const planOutput = z.lazy(() => all().planOutput);
export const runStatusOutput = z.lazy(() => all().runStatusOutput);
export const explainOutput = z.lazy(() => all().explainOutput);
export const alterOutput = z.lazy(() => all().alterOutput);
export const queryOutput = z.lazy(() => all().queryOutput);
export const stripOutput = z.lazy(() => all().stripOutput);
export const initOutput = z.lazy(() => all().initOutput);
export const demoOutput = z.lazy(() => all().demoOutput);
