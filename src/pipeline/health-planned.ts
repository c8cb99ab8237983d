import type { PipelinePlan } from './plan.ts';
import type { DeclaredProjectionHealth, PipelineHealth, TargetHealth } from './status.ts';

/*
 * What `health --config` and `sluice run`'s /healthz (and so its status
 * page) add from `plan` (the same reading, writing nothing; run reads the
 * plan in the background, runner.ts): health reads each projection the target holds as it was built,
 * and matches it to the file by name, so a projection held under a
 * definition the file no longer declares (its filter changed in the file),
 * or one whose declared definition sluice run refuses, read as ok. Such a
 * target is not what the file says: each is a problem, with what run does
 * about it or what to fix.
 */

/** `h` with the projections `plan` rebuilds for a changed definition, or refuses, marked as needing action. */
export function withPlannedChanges(h: PipelineHealth, plan: PipelinePlan): PipelineHealth {
  const targets = h.targets.map((t) => {
    const planned = plan.targets.find((p) => p.path === t.path);
    return planned === undefined ? t : marked(t, planned);
  });
  const problems = [
    ...h.sources.flatMap((s) => s.problems),
    ...targets.flatMap((t) => [...t.problems, ...t.projections.flatMap((p) => p.problems.map((x) => `${t.path}: ${p.name}: ${x}`))]),
  ];
  return { ...h, ok: h.sources.every((s) => s.ok) && targets.every((t) => t.ok), targets, problems };
}

function marked(t: TargetHealth, planned: PipelinePlan['targets'][number]): TargetHealth {
  if (planned.refused !== null && !t.exists) return refusedMissing(t, planned.refused);
  const problems = [...t.problems];
  if (planned.refused !== null && t.exists) {
    const which = planned.refused.projection === null ? '' : ` (projection ${planned.refused.projection})`;
    problems.push(
      `the file's definitions for target ${t.path} are refused${which}: ${planned.refused.code}: ${planned.refused.fix}; sluice run leaves the target as it is until then`,
    );
  }
  const projections = t.projections.map((p): DeclaredProjectionHealth => {
    if (!p.declared) return p;
    const x = planned.projections.find((q) => q.name === p.name);
    // A mirror "*" asks for that run cannot make (MIRROR_REFUSED): not "sluice run builds it", but plan's refusal and fixes.
    if (p.state === 'missing' && x?.does === 'refuse' && x.reason === 'MIRROR_REFUSED' && x.fix !== undefined)
      return { ...p, reason: 'MIRROR_REFUSED', needsAction: true, action: x.fix, problems: [x.fix] };
    // health says a pending MIRROR_REFUSED itself, with the same fixes (pipeline-health.ts).
    if (p.state === 'missing' || p.reason === 'MIRROR_REFUSED') return p;
    let problem: string | undefined;
    // (Not one only the source's DDL reshaped, its table re-armed already: health says the next sync rebuilds it by itself.)
    if (x?.does === 'rebuild' && x.reason === 'DEFINITION_CHANGED' && x.redefined !== false)
      problem = `projection ${p.name} is held as built from another definition than the file declares (DEFINITION_CHANGED): sluice run rebuilds it (sluice plan shows the change)`;
    else if (x?.does === 'refuse')
      // (One whose first build failed is held in state building, with no rows of its own yet.)
      problem = `the file's definition of projection ${p.name} is refused (${x.reason ?? 'refused'})${x.fix === undefined ? '' : `: ${x.fix}`}; ${p.state === 'building' ? 'it is not built until then' : 'the target holds it as built before'}`;
    if (problem === undefined) return p;
    return { ...p, needsAction: true, action: p.action ?? problem, problems: [...p.problems, problem] };
  });
  return { ...t, problems, projections, ok: problems.length === 0 && projections.every((p) => !p.needsAction) };
}

/**
 * A missing target whose build plan says run refuses (NOTHING_TO_SYNC, CAPTURE_ABSENT, a folder that cannot be
 * made, a declared definition refused): not "sluice run builds it", but why it cannot and the fix.
 */
function refusedMissing(t: TargetHealth, refused: NonNullable<PipelinePlan['targets'][number]['refused']>): TargetHealth {
  const which = refused.projection === null ? '' : ` (projection ${refused.projection})`;
  const why = `sluice run cannot build it${which}: ${refused.code}: ${refused.fix}`;
  const projections = t.projections.map((p): DeclaredProjectionHealth => {
    if (p.state !== 'missing') return p;
    const problem = `projection ${p.name} is declared and not built yet, and sluice run cannot build its target (${refused.code}: see the target's problem)`;
    return { ...p, needsAction: true, action: problem, problems: [problem] };
  });
  return { ...t, ok: false, projections, problems: [`target ${t.path} is declared but does not exist, and ${why}`] };
}
