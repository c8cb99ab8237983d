import { openSource, alter, type AlterResult, AlterRefusedError } from '../../capture/index.ts';
import { closeDatabase, holdQuietly, readQuietly } from '../../sqlite/index.ts';
import { forecastAlter, type ConsumerForecast } from '../../feed/index.ts';
import { openApplySession, TARGET_SCHEMA } from '../target/index.ts';
import { definitionsToExplain, explainAlter, explainDefinitions, requireTarget, type ExplainReport } from './explain.ts';

/*
 * sluice alter with its forecast. The source knows its consumers, not their
 * definitions, so without a target it can state only the rules (feed's
 * forecastAlter). With --target it forecasts each of that target's
 * projections through explain's own classifier (explainDefinitions), over
 * the source as the DDL leaves it: after the commit, where explain would
 * run next; in a dry run, inside the alter's transaction before its
 * rollback, on a connection that has the target attached.
 */

/** What the next sync does with each projection of one target, as explain says it (`target` is the path given). */
export interface TargetForecast extends ExplainReport {
  readonly target: string;
}

export interface AlterWithForecast {
  readonly result: AlterResult;
  readonly consumers: readonly ConsumerForecast[];
  /** One per target asked for (none: the key is absent). */
  readonly targets?: readonly TargetForecast[];
}

/**
 * Runs `ddl` on the source through sluice alter (alter()) and forecasts
 * what follows: for every consumer the source knows of (forecastAlter),
 * and, for each of `targets`, each of its projections as explain
 * classifies it. A dry run forecasts inside the alter's transaction, once
 * per target, and rolls everything back. A target that does not exist is
 * an error before anything runs.
 *
 * @example
 * const f = await alterWithForecast('app.db', 'ALTER TABLE issues DROP COLUMN legacy', { dryRun: true, targets: ['cache.db'] });
 * for (const p of f.targets?.[0]?.projections ?? []) console.log(p.name, p.classification, p.sync.does);
 */
export async function alterWithForecast(
  sourcePath: string,
  ddl: string,
  options: { readonly dryRun?: boolean; readonly targets?: readonly string[] } = {},
): Promise<AlterWithForecast> {
  const targets = options.targets ?? [];
  for (const t of targets) requireTarget(t);
  if (options.dryRun !== true) return alterThenForecast(sourcePath, ddl, targets);
  // A dry run opens the source, and each target attached to it, with write access: every file is held so that
  // this leaves none changed (no hot journal rolled back, no -wal checkpointed, no -wal or -shm made).
  const files = [{ path: sourcePath, role: 'source' }, ...targets.map((path) => ({ path, role: 'target' }))];
  return holdQuietly(files, () =>
    targets.length > 0 ? dryRunWithTargets(sourcePath, ddl, targets) : alterThenForecast(sourcePath, ddl, [], true),
  );
}

/** alter() on the source, then the forecast of each of `targets` by explain over the source as it left it (none in a dry run). */
async function alterThenForecast(sourcePath: string, ddl: string, targets: readonly string[], dryRun = false): Promise<AlterWithForecast> {
  // Each target opened as the forecast will open it, before the DDL commits: one that is no target (the source
  // itself, a file that is not SQLite) is refused with nothing changed, not after the change (which it said nothing of).
  // Held while opened (readQuietly), as the forecast holds them: a reader of a WAL file would leave a -wal and -shm beside it.
  for (const t of targets) await readQuietly([sourcePath, t], () => openApplySession(sourcePath, t, { readonly: true }).close());
  const db = openSource(sourcePath);
  let result: AlterResult;
  let consumers: ConsumerForecast[];
  try {
    result = alter(db, ddl, { dryRun });
    consumers = forecastAlter(db, result);
  } finally {
    closeDatabase(db);
  }
  if (targets.length === 0) return { result, consumers };
  const forecasts: TargetForecast[] = [];
  for (const target of targets) forecasts.push({ target, ...(await explainAlter(sourcePath, target, { othersOnly: 'empty' })) });
  return { result, consumers, targets: forecasts };
}

async function dryRunWithTargets(sourcePath: string, ddl: string, targets: readonly string[]): Promise<AlterWithForecast> {
  let first: { result: AlterResult; consumers: ConsumerForecast[] } | undefined;
  const forecasts: TargetForecast[] = [];
  for (const target of targets) {
    // The source writable (alter's transaction), the target only read.
    const session = openApplySession(sourcePath, target, { readonly: 'target' });
    try {
      const db = session.db;
      const pending = await definitionsToExplain(db, sourcePath, []);
      const targetSchema = () => Number(db.pragma(`${TARGET_SCHEMA}.schema_version`, { simple: true }));
      const before = targetSchema();
      let report: ExplainReport | undefined;
      const result = alter(db, ddl, {
        dryRun: true,
        inspect: (tx) => {
          // The target is attached for the forecast: a statement whose name resolved into it is not the source's DDL.
          if (targetSchema() !== before)
            throw new AlterRefusedError(
              `sluice alter ${sourcePath} --target ${target}: the script changed the target's schema (a name it uses is a table of the target only, not of the source). Run the dry run without --target to see the script fail on the source alone, and fix it. Nothing was changed.`,
            );
          report = explainDefinitions(tx, sourcePath, target, pending);
        },
      });
      first ??= { result, consumers: forecastAlter(db, result) };
      if (report !== undefined) forecasts.push({ target, ...report });
    } finally {
      session.close();
    }
  }
  if (first === undefined) throw new Error('unreachable: a dry run with targets runs once per target');
  return { ...first, targets: forecasts };
}
