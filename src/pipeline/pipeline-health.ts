import fs from 'node:fs';
import { health } from '../apply/check/health.ts';
import { notHeldHealth, type ProjectionHealth } from '../apply/check/health-types.ts';
import { highWaterMark, readState, readTables } from '../capture/catalog.ts';
import { openDatabase } from '../sqlite/connection.ts';
import { errorMessage } from '../errors.ts';
import type { Pipeline, PipelineTarget, PipelineSubscription, ProjectionEntry } from './pipeline.ts';
import type { DeclaredProjectionHealth, PipelineHealth, SourceHealth, TargetHealth } from './status.ts';

/*
 * A pipeline's health: each declared source's capture and each declared
 * target's projections, read only. (A first version, enough for `sluice
 * run`'s /healthz: `sluice health --config` brings the fuller one, with the
 * acknowledgements and undeclared capture.)
 */

/** Reads every declared source and target of `pipeline` (nothing is written). */
export function pipelineHealth(pipeline: Pipeline, options: { now?: number } = {}): PipelineHealth {
  const checkedMs = options.now ?? Date.now();
  const sources = pipeline.sources.map((s): SourceHealth => {
    try {
      const db = openDatabase(s.path, { readonly: true, role: 'source' });
      try {
        const state = readState(db);
        const captured = new Map(readTables(db).map((t) => [t.name.toLowerCase(), t]));
        const tables = s.capture.map((c) => {
          const t = captured.get(c.table.toLowerCase());
          const ok = t !== undefined && t.mode === c.mode;
          return {
            table: c.table,
            declared: true,
            captured: t !== undefined,
            armed: t !== undefined && state !== undefined && t.armedGeneration === state.generation,
            mode: t?.mode ?? null,
            ...(ok ? {} : { problem: `table ${c.table} is not captured in ${c.mode} mode yet: sluice run enables it` }),
          };
        });
        const problems = tables.flatMap((t) => (t.problem === undefined ? [] : [`${s.path}: ${t.problem}`]));
        return {
          path: s.path,
          ok: problems.length === 0,
          sourceId: state?.sourceId ?? null,
          seq: state === undefined ? null : highWaterMark(db),
          tables,
          acknowledgements: [],
          problems,
        };
      } finally {
        db.close();
      }
    } catch (err) {
      const problem = `source ${s.path} cannot be read: ${errorMessage(err)}`;
      return { path: s.path, ok: false, sourceId: null, seq: null, tables: [], acknowledgements: [], problems: [problem] };
    }
  });
  const targets = [
    ...pipeline.sources.flatMap((s) => s.targets.map((t) => targetHealth(t, s.path, 'sync'))),
    ...pipeline.subscriptions.map((t) => targetHealth(t, null, 'subscribe')),
  ];
  const problems = [...sources.flatMap((s) => s.problems), ...targets.flatMap((t) => t.problems)];
  return { ok: problems.length === 0, config: pipeline.file, checkedMs, sources, targets, problems };
}

function targetHealth(t: PipelineTarget | PipelineSubscription, source: string | null, via: 'sync' | 'subscribe'): TargetHealth {
  const bounds = { maxLagEvents: t.health.maxLagEvents ?? null, maxLagMs: t.health.maxLagMs ?? null };
  const named = declaredNames(t.projections);
  const mirrorsAll = t.projections.some((e) => e.kind === 'all');
  const notHeld = (name: string, why: string): DeclaredProjectionHealth => ({
    ...notHeldHealth({
      name,
      kind: 'unknown',
      state: 'missing',
      reason: null,
      detail: null,
      seq: 0,
      sourcePath: source,
      action: why,
      problems: [why],
    }),
    declared: true,
  });
  if (!fs.existsSync(t.path)) {
    const why = `target ${t.path} does not exist: sluice run builds it with every declared projection`;
    return {
      path: t.path,
      source,
      via,
      exists: false,
      ok: false,
      projections: [...named.keys()].map((n) => notHeld(named.get(n) as string, why)),
      bounds,
      problems: [why],
    };
  }
  let held: readonly ProjectionHealth[];
  try {
    held = health(t.path, {
      ...(t.health.maxLagEvents === undefined ? {} : { maxLagEvents: t.health.maxLagEvents }),
      ...(t.health.maxLagMs === undefined ? {} : { maxLagMs: t.health.maxLagMs }),
    }).projections;
  } catch (err) {
    const why = `target ${t.path} cannot be read: ${errorMessage(err)}`;
    return { path: t.path, source, via, exists: true, ok: false, projections: [], bounds, problems: [why] };
  }
  const projections: DeclaredProjectionHealth[] = held.map((p) => ({
    ...p,
    declared: named.has(p.name.toLowerCase()) || (mirrorsAll && p.kind === 'mirror'),
  }));
  for (const [key, name] of named)
    if (!held.some((p) => p.name.toLowerCase() === key))
      projections.push(notHeld(name, `projection ${name} of ${t.path} is declared and not built yet: sluice run builds it`));
  const problems = projections.flatMap((p) => (p.needsAction ? [`${t.path}: ${p.name}: ${p.action ?? p.problems[0] ?? p.state}`] : []));
  return { path: t.path, source, via, exists: true, ok: problems.length === 0, projections, bounds, problems };
}

/** The names a target's entries declare, by lower case ("*" names none: it is every captured table's mirror). */
function declaredNames(entries: readonly ProjectionEntry[]): Map<string, string> {
  return new Map(entries.flatMap((e) => (e.kind === 'all' ? [] : e.definitions.map((d) => [d.name.toLowerCase(), d.name] as const))));
}
