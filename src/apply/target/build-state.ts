import { z } from 'zod';
import { jsonValueSchema, type JsonValue } from '../../sqlite/index.ts';

/*
 * A protected rebuild in progress (apply/rebuild/shadow-build.ts), as the
 * projection's row records it (`build`, JSON): read with the row, so that a
 * value this sluice does not read is refused where the row is read.
 */

/** What the projection's row records of a build in progress. */
export interface BuildState {
  readonly fingerprint: string;
  readonly definition: string;
  readonly shape: string;
  /** Why it is rebuilt (DEFINITION_CHANGED, REINIT...). */
  readonly reason: string;
  readonly shadow: string;
  /** The source's high-water mark when the build started: events after it are caught up. */
  readonly startSeq: number;
  /** The last key copied (null: none yet); undefined once the copy is done. */
  readonly lastKey?: readonly JsonValue[] | null;
  readonly copied: number;
  /** The copy's events caught up through this seq (the copy phase: startSeq). */
  readonly caughtSeq: number;
  /** A replay kind: the staged copy of the source rows (a mirror of its table) its shadow is filled from. */
  readonly staging?: string;
  /**
   * A replay kind, once its staged copy is validated and caught up to
   * `seq`: the shadow is filled from it in key order (the last key filled,
   * as the copy's lastKey), then caught up through `seq` by the journal's
   * events.
   */
  readonly fill?: { readonly lastKey?: readonly JsonValue[] | null; readonly seq: number };
  /**
   * A cursor at the seq the build has read the journal through (the fill's,
   * else the copy's): the build goes on only while a consumer could go on
   * from it (not after a bump, a re-armed table, DDL sluice did not make...),
   * else it starts again (build-step.ts). Absent (written before it was kept): started again.
   */
  readonly cursor?: string;
  /**
   * Made afresh each time the build starts (a random id): a syncer that
   * started this very build, and has watched the target's log since
   * without seeing another program write its tables, knows its copy is as
   * it wrote it (build-step.ts, BuildWatch). Absent: written before it was kept.
   */
  readonly token?: string;
}

const key = z.array(jsonValueSchema).nullable().optional();

// Not strict: keys a newer sluice adds are left out, as a reader of its cursor ignores them.
const buildStateSchema = z.object({
  fingerprint: z.string(),
  definition: z.string(),
  shape: z.string(),
  reason: z.string(),
  shadow: z.string(),
  startSeq: z.number().int(),
  lastKey: key,
  copied: z.number().int(),
  caughtSeq: z.number().int(),
  staging: z.string().optional(),
  cursor: z.string().optional(),
  fill: z.object({ lastKey: key, seq: z.number().int() }).optional(),
  token: z.string().optional(),
});

/** A build as its row stores it (parsed JSON), or undefined when it is not one this sluice reads. */
export function parseBuildState(json: unknown): BuildState | undefined {
  const parsed = buildStateSchema.safeParse(json);
  if (!parsed.success) return undefined;
  const b: BuildState = parsed.data;
  return b;
}
