import { status, openSource } from '../../capture/index.ts';
import type { Pipeline, PipelineSource } from '../index.ts';
import { PartFailure, type PartContext, type PartKind } from './part.ts';
import { SluiceError, isSqliteBusy } from '../../errors.ts';
import { followedByAnother, forgetUndeclared, declaredInputs, enableDeclared } from '../index.ts';

export interface CaptureConfig {
  readonly source: PipelineSource;
  /** The file's `prune`: forget the acknowledgements it no longer declares (prune.ts, the rule convergeOnce forgets by). */
  readonly prune: boolean;
  /** The file's targets (each source's, each subscription's): this file's run follows them, no other process (followedByAnother). */
  readonly pipeline: Pick<Pipeline, 'sources' | 'subscriptions'>;
}

/*
 * A source's capture: the tables the file declares are captured in the
 * declared mode. Only what is missing is enabled (a table not captured, or
 * captured in another mode); nothing is ever disabled (`sluice disable` is
 * the user's to run). With `prune: true`, the acknowledgements the file no
 * longer declares (of a target it does not declare, or of a projection its
 * declared target does not keep) are forgotten, by the rule convergeOnce
 * and plan use (prune.ts). Once done, the part looks
 * again every few seconds (a source made again is captured again; one
 * that is gone fails the part, retried with backoff) until it is stopped:
 * a reload that changes the list restarts it.
 */
export const capturePart: PartKind<CaptureConfig> = {
  kind: 'capture',
  first: true,
  configs: (pipeline) => pipeline.sources.map((source) => ({ source, prune: pipeline.prune, pipeline })),
  name: (c) => c.source.path,
  fingerprint: (c) =>
    JSON.stringify([
      c.source.capture.map((t) => [t.table, t.mode, t.exclude ?? null, t.include ?? null]),
      c.prune,
      c.prune ? c.source.targets.map((t) => [t.path, declaredInputs(t.projections).map((d) => (d === '*' ? d : d.name))]) : [],
      c.prune ? [...c.pipeline.sources.flatMap((s) => s.targets.map((t) => t.path)), ...c.pipeline.subscriptions.map((s) => s.path)] : [],
    ]),
  async run(config, ctx) {
    captureOrBusy(config, ctx);
    ctx.ok();
    // Looked at again now and then: a source deleted and made again (a reset, a restore without sluice's tables) is captured again as at start.
    while (!(await aborted(ctx.signal, RECHECK_MS))) captureOrBusy(config, ctx);
  },
};

/** ensureCaptured, with SQLite's bare "database is locked" said as the source's lock (SOURCE_BUSY), naming it: retried as any failure. */
function captureOrBusy(config: CaptureConfig, ctx: PartContext): void {
  try {
    ensureCaptured(config, ctx);
  } catch (err) {
    if (err instanceof SluiceError || !isSqliteBusy(err)) throw err;
    throw new PartFailure(
      'SOURCE_BUSY',
      `source ${config.source.path} is locked: another process holds a lock on it (a write transaction it has not committed yet), so its declared capture could not be checked or enabled; sluice run tries again, and goes on once that process commits or ends`,
    );
  }
}

/** How often a running capture part looks whether its declared tables are still captured (one open and one catalog read). */
const RECHECK_MS = 3000;

/**
 * Enables the declared tables that are not captured in their declared mode, by the calls a converging pass makes
 * (enableDeclared, which plan and health predict); with prune, forgets the acknowledgements the file no longer
 * declares. A table enable refuses (its gates) is left out of its call, and every other table is captured, as plan
 * says; the part then fails naming each refused table with enable's refusal (retried with backoff, each time
 * enabling only what is still missing). A table left unarmed by columns new since it was armed that the file does
 * not name (heldByNewColumns) fails the part the same way, with the fix in the file's terms, until the file names them.
 */
function ensureCaptured({ source, prune, pipeline }: CaptureConfig, ctx: PartContext): void {
  const db = openSource(source.path);
  let refused: ReturnType<typeof enableDeclared>['refused'];
  let held: ReturnType<typeof enableDeclared>['held'];
  try {
    // status: a table held unarmed by new columns (a column left out may have moved) is re-armed once the file names them.
    const done = enableDeclared(db, source, status(db));
    refused = done.refused;
    held = done.held;
    for (const { tables, mode, error } of refused)
      ctx.log('error', 'enable-refused', `capture of ${tables.join(', ')} (${mode} mode) refused: ${error.code}: ${error.message}`, {
        tables,
        mode,
        code: error.code,
      });
    for (const h of held)
      ctx.log('warn', 'not-armed', `capture of ${h.table} is not armed (SCHEMA_CHANGED): ${h.fix}`, {
        table: h.table,
        newColumns: h.newColumns,
        code: 'SCHEMA_CHANGED',
      });
    for (const { call, tables, result } of done.enabled) {
      const { mode, exclude, include } = call;
      const excluding = exclude === undefined ? '' : `, excluding ${exclude.length === 0 ? 'no column' : exclude.join(', ')}`;
      const including = include === undefined ? '' : `, including ${include.join(', ')} (new since armed)`;
      ctx.log('info', 'enabled', `captured ${tables.join(', ')} (${mode} mode${excluding}${including})`, {
        tables,
        mode,
        ...(exclude === undefined ? {} : { exclude }),
        ...(include === undefined ? {} : { include }),
        sourceId: result.sourceId,
      });
    }
    if (prune) {
      const forgotten = forgetUndeclared(db, source, followedByAnother(pipeline));
      if (forgotten.length > 0)
        ctx.log('info', 'forgot', `forgot the acknowledgements the file no longer declares (prune: true): ${forgotten.join(', ')}`, {
          consumers: forgotten,
        });
    }
  } finally {
    db.close();
  }
  const first = refused[0];
  const said = [
    ...refused.map((x) => `capture of ${x.tables.join(', ')} is refused: ${x.error.code}: ${x.error.message}`),
    ...held.map((h) => `capture of ${h.table} is not armed: SCHEMA_CHANGED: ${h.fix}`),
  ];
  if (said.length > 0)
    throw new PartFailure(
      first?.error.code ?? 'SCHEMA_CHANGED',
      `${said.join('; ')} (the other declared tables are captured, and their targets synced)`,
    );
}

/** Waits `ms`; true when `signal` aborted first (or already had). */
function aborted(signal: AbortSignal, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const done = (v: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const onAbort = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
