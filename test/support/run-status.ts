import fs from 'node:fs';
import { health } from '../../src/apply/check/index.ts';
import { status } from '../../src/capture/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import type { RunPart, RunStatus, SourceHealth, TargetHealth } from '../../src/pipeline/index.ts';

/*
 * A RunStatus read from real files, for tests of what reads one (the status
 * page): each source's capture status and each target's health(), in the
 * shape `sluice run` serves at /healthz. Every table and projection counts as
 * declared; the run's parts are given by the test. Not the pipeline's own
 * health (that reads a pipeline file): only what the page needs to be fed
 * real states, lags, failures and repair commands.
 */

export interface RunStatusInputs {
  readonly config: string;
  readonly sources: readonly string[];
  readonly targets: readonly { readonly path: string; readonly source: string }[];
  readonly parts?: readonly RunPart[];
  readonly configError?: RunStatus['run']['configError'];
  readonly startedMs?: number;
}

export function runStatusOf(inputs: RunStatusInputs): RunStatus {
  const checkedMs = Date.now();
  const sources = inputs.sources.map((file): SourceHealth => {
    const db = openDatabase(file, { readonly: true });
    try {
      const s = status(db);
      return {
        path: file,
        ok: s.tables.every((t) => t.armed) && s.problem === undefined,
        sourceId: s.sourceId,
        seq: s.enabled ? s.seq : null,
        tables: s.tables.map((t) => ({
          table: t.name,
          declared: true,
          captured: true,
          armed: t.armed,
          mode: t.mode,
          ...(t.armed ? {} : { problem: `${t.reason ?? 'unarmed'}: ${t.detail ?? ''}` }),
        })),
        acknowledgements: s.consumers.map((c) => ({
          consumer: c.name,
          target: c.target,
          projection: c.projection,
          declared: true,
          seq: c.seq,
        })),
        problems: s.problem === undefined ? [] : [s.problem],
      };
    } finally {
      db.close();
    }
  });
  const targets = inputs.targets.map((t): TargetHealth => {
    const exists = fs.existsSync(t.path);
    const h = exists ? health(t.path) : { ok: false, projections: [] };
    return {
      path: t.path,
      source: t.source,
      via: 'sync',
      exists,
      ok: h.ok,
      projections: h.projections.map((p) => ({ ...p, declared: true })),
      bounds: { maxLagEvents: null, maxLagMs: null },
      problems: exists ? [] : [`${t.path} does not exist: sluice run builds it`],
    };
  });
  const problems = [
    ...sources.flatMap((s) => s.problems),
    ...targets.flatMap((t) => [...t.problems, ...t.projections.flatMap((p) => p.problems.map((x) => `${p.name} in ${t.path}: ${x}`))]),
  ];
  const parts = inputs.parts ?? [];
  const configError = inputs.configError ?? null;
  return {
    ok: problems.length === 0 && sources.every((s) => s.ok) && targets.every((t) => t.ok) && configError === null,
    config: inputs.config,
    checkedMs,
    sources,
    targets,
    problems,
    run: { pid: process.pid, startedMs: inputs.startedMs ?? checkedMs, configError, loadedMs: inputs.startedMs ?? checkedMs, parts },
  };
}
