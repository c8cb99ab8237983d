import fs from 'node:fs';
import { SluiceError } from '../errors.ts';
import { findObjects, foldIdent, openDatabase, sameDatabaseFile, shellWord } from '../sqlite/index.ts';
import { status, type CaptureStatus, targetKey } from '../capture/index.ts';
import { defaultProjectionName } from '../projection/index.ts';
import { health, type FedLag, notHeldHealth, type ProjectionHealth } from '../apply/check/index.ts';
import { heldProjections } from './held.ts';
import { followedByAnother, keptByDeclaration, undeclaredAcknowledgements, undeclaredMirrorAll, undeclaredMirrorAllFix } from './prune.ts';
import { declaredInputs, declaresHeld, handlerFailures, heldByNewColumns, sameColumns, toEnable, undeclaredCapture } from './declared.ts';
import { declaredRefusals, type EnableRefusal } from './enable-declared.ts';
import { refusedMirrorFix } from './plan-mirror-all.ts';
import type { HealthBounds, Pipeline, PipelineSource, ProjectionEntry } from './pipeline.ts';
import type {
  AcknowledgementHealth,
  CapturedTableHealth,
  DeclaredProjectionHealth,
  PipelineHealth,
  SourceHealth,
  TargetHealth,
} from './status.ts';

/*
 * The health of a whole pipeline, judged against its file: each declared
 * target by health() with the file's lag bounds, and what the file does not
 * account for (a projection a target holds and the file does not declare, a
 * captured table it does not list, an acknowledgement of a target or
 * projection it no longer declares). Read-only: the sources and targets are
 * opened read-only, a missing target is reported, not made. A caller that
 * must leave no -wal or -shm behind holds the files (readQuietly).
 */

export interface PipelineHealthOptions {
  /** The time lags are measured to (ms since the epoch). Default: now. */
  readonly now?: number;
  /**
   * The lags of a subscribed target's projections (by target path, then
   * projection), read from the broker by the caller; without them a
   * subscribed projection's lag is unknown, which needs action (health's rule).
   */
  readonly fedLag?: ReadonlyMap<string, ReadonlyMap<string, FedLag>>;
}

/**
 * Reads the health of every declared source and target of `pipeline`.
 *
 * @example
 * const h = pipelineHealth(await loadPipeline('sluice.yml'));
 * if (!h.ok) for (const p of h.problems) console.log(p);
 */
export function pipelineHealth(pipeline: Pipeline, options: PipelineHealthOptions = {}): PipelineHealth {
  const now = options.now ?? Date.now();
  const sources: SourceHealth[] = [];
  const targets: TargetHealth[] = [];
  const problems: string[] = [];
  // The file's own sources by source id: a subscription of one of them reads its lag there too (HealthOptions.localSource).
  const local = new Map<string, string>();
  for (const source of pipeline.sources) {
    const capture = readCapture(source);
    if (!('error' in capture) && capture.status.sourceId !== null) local.set(capture.status.sourceId, source.path);
    for (const t of source.targets) {
      const th = withHandlerFailures(
        targetHealth(t.path, source.path, 'sync', t.projections, t.health, capture, now, undefined, t.declaredAt),
        t.projections,
      );
      targets.push(th);
    }
    const sh = sourceHealth(pipeline, source, capture, targets);
    sources.push(sh);
    problems.push(...sh.problems);
  }
  for (const s of pipeline.subscriptions)
    targets.push(
      withHandlerFailures(
        targetHealth(
          s.path,
          null,
          'subscribe',
          s.projections,
          s.health,
          undefined,
          now,
          options.fedLag?.get(s.path),
          s.declaredAt,
          local.get(s.sourceId),
        ),
        s.projections,
      ),
    );
  for (const t of targets)
    problems.push(...t.problems, ...t.projections.flatMap((p) => p.problems.map((x) => `${t.path}: ${p.name}: ${x}`)));
  return {
    ok: sources.every((s) => s.ok) && targets.every((t) => t.ok),
    config: pipeline.file,
    checkedMs: now,
    sources,
    targets,
    problems,
  };
}

/**
 * A declared handler module that fails to load (a file loaded with
 * handlerFailures: 'record'): a problem of its target until it is fixed,
 * as sluice run records it as that target's failure.
 */
function withHandlerFailures(t: TargetHealth, entries: readonly ProjectionEntry[]): TargetHealth {
  const failed = handlerFailures(entries);
  if (failed.length === 0) return t;
  const problems = failed.map(
    (f) =>
      `projection ${f.projection} of ${t.path}: ${f.code}: ${f.message.replace(/ and run again\.$/, '.')} sluice run loads it again when the module is saved, and builds the target then`,
  );
  return { ...t, ok: false, problems: [...t.problems, ...problems] };
}

/**
 * A source's capture status, which of its declared capture tables it does not hold, and which of them enable
 * refuses to capture as declared (by table, folded; as a pass refuses them: enable-declared.ts).
 */
type Capture =
  | { readonly status: CaptureStatus; readonly missing: ReadonlySet<string>; readonly refused: ReadonlyMap<string, EnableRefusal> }
  | { readonly error: string };

function causeOf(err: unknown): string {
  return err instanceof SluiceError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
}

function readCapture(source: PipelineSource): Capture {
  try {
    const db = openDatabase(source.path, { readonly: true, role: 'source' });
    try {
      const missing = new Set(source.capture.filter((c) => !findObjects(db, c.table).some((o) => o.schema === 'main')).map((c) => c.table));
      const s = status(db);
      const present = { ...source, capture: source.capture.filter((c) => !missing.has(c.table)) };
      const refused = new Map(declaredRefusals(db, present, s).flatMap((r) => r.tables.map((t) => [foldIdent(t), r] as const)));
      return { status: s, missing, refused };
    } finally {
      db.close();
    }
  } catch (err) {
    return { error: causeOf(err) };
  }
}

function sourceHealth(pipeline: Pipeline, source: PipelineSource, capture: Capture, targets: readonly TargetHealth[]): SourceHealth {
  const src = shellWord(source.path);
  if ('error' in capture)
    return {
      path: source.path,
      ok: false,
      sourceId: null,
      seq: null,
      tables: [],
      acknowledgements: [],
      problems: [`source ${source.path} cannot be read: ${capture.error}`],
    };
  const s = capture.status;
  const problems: string[] = [];
  if (s.problem !== undefined) problems.push(`source ${source.path}: ${s.problem}`);
  const tables: CapturedTableHealth[] = [];
  // Unarmed by columns new since armed that the file does not name (run enables nothing for them), and the enables a pass makes.
  const held = new Map(heldByNewColumns(source, s).map((h) => [foldIdent(h.table), h]));
  const enables = toEnable(source, s);
  for (const c of source.capture) {
    const t = s.tables.find((x) => x.name === c.table) ?? s.tables.find((x) => x.name.toLowerCase() === c.table.toLowerCase());
    const refused = capture.refused.get(foldIdent(c.table));
    const newHeld = held.get(foldIdent(c.table));
    const rearm = t?.newColumns === undefined ? undefined : enables.find((e) => foldIdent(e.table) === foldIdent(c.table));
    const problem = capture.missing.has(c.table)
      ? `table ${c.table} of ${source.path} is declared (${c.declaredAt}) but the source does not hold it (another program dropped it): create it again, or take it out of "capture" (sluice run refuses the file until then)`
      : refused !== undefined
        ? `table ${c.table} of ${source.path} is declared (${c.declaredAt}) in ${c.mode} mode${t === undefined ? '' : ` (captured in ${t.mode} mode)`}, but enable refuses to capture it so (${refused.error.code}): ${refused.error.message.replace(/\.$/, '')}. sluice run captures the other declared tables and tries this one again (or take it out of "capture")`
        : newHeld !== undefined
          ? `capture of table ${c.table} of ${source.path} is not armed (SCHEMA_CHANGED): ${newHeld.fix}`
          : rearm !== undefined
            ? `capture of table ${c.table} of ${source.path} is not armed (SCHEMA_CHANGED: ${(t?.newColumns ?? []).join(', ')} new since it was armed, which the file names, ${c.declaredAt}): sluice run re-arms it${rearm.include === undefined ? '' : `, capturing ${rearm.include.join(', ')}`}, and its targets rebuild (or sluice enable ${src} ${shellWord(c.table)}${rearm.exclude === undefined ? '' : ` --exclude ${rearm.exclude.length === 0 ? "''" : shellWord(rearm.exclude.join(','))}`}${rearm.include === undefined ? '' : ` --include ${shellWord(rearm.include.join(','))}`})`
            : t === undefined
              ? `table ${c.table} of ${source.path} is declared (${c.declaredAt}) but not captured: sluice run captures it (or sluice enable ${src} ${shellWord(c.table)}${c.mode === 'images' ? '' : ` --mode ${c.mode}`})`
              : t.mode !== c.mode
                ? `table ${c.table} of ${source.path} is captured in ${t.mode} mode, declared ${c.mode} (${c.declaredAt}): sluice run switches it (or sluice enable ${src} ${shellWord(c.table)} --mode ${c.mode})`
                : c.exclude !== undefined && !sameColumns(c.exclude, t.excluded)
                  ? `table ${c.table} of ${source.path} leaves out of capture ${t.excluded.length === 0 ? 'no column' : t.excluded.join(', ')}, declared ${c.exclude.length === 0 ? 'none' : c.exclude.join(', ')} (${c.declaredAt}): sluice run re-arms it with the declared set (or sluice enable ${src} ${shellWord(c.table)} --exclude ${shellWord(c.exclude.join(','))})`
                  : !t.armed && t.exclude !== undefined
                    ? `capture of table ${c.table} of ${source.path} is not armed (${t.reason ?? 'unknown'}): a column left out of capture may have moved under another name, so sluice run does not re-arm it by itself: ${t.detail ?? ''}`
                    : !t.armed
                      ? `capture of table ${c.table} of ${source.path} is not armed (${t.reason ?? 'unknown'}): sluice run re-arms it (or sluice enable ${src} ${shellWord(c.table)})`
                      : undefined;
    tables.push({
      table: c.table,
      declared: true,
      captured: t !== undefined,
      armed: t?.armed ?? false,
      mode: t?.mode ?? null,
      ...(problem === undefined ? {} : { problem }),
    });
  }
  for (const name of undeclaredCapture(source, s)) {
    const t = s.tables.find((x) => x.name === name) as (typeof s.tables)[number];
    tables.push({
      table: t.name,
      declared: false,
      captured: true,
      armed: t.armed,
      mode: t.mode,
      problem: `table ${t.name} of ${source.path} is captured but not declared in ${pipeline.file} (undeclared capture): add it to the source's "capture", or take capture off it (sluice disable ${src} ${shellWord(t.name)}); sluice run never disables capture by itself`,
    });
  }
  problems.push(...tables.flatMap((t) => (t.problem === undefined ? [] : [t.problem])));
  // The one rule convergeOnce and run forget acknowledgements by, and plan predicts (prune.ts).
  const images = s.tables.filter((t) => t.mode === 'images').map((t) => t.name);
  const undeclared = new Set(
    undeclaredAcknowledgements(s.consumers, source, (t) => keptByDeclaration(t, source, images), followedByAnother(pipeline)).map(
      (c) => c.name,
    ),
  );
  const acknowledgements: AcknowledgementHealth[] = s.consumers.map((c) => ({
    consumer: c.name,
    target: c.target,
    projection: c.projection,
    declared: c.target !== null && c.projection !== null && !undeclared.has(c.name),
    seq: c.seq,
  }));
  for (const a of acknowledgements) {
    // Only a sync's acknowledgements are judged: another consumer (a publisher's, a reader's) is not a target's.
    if (a.declared || a.target === null) continue;
    problems.push(
      `acknowledgement ${a.consumer} of ${source.path} is of ${targets.some((t) => targetKey(t.path) === a.target) ? `projection ${a.projection}, which its target does not declare` : `target ${a.target}, which ${pipeline.file} does not declare`}: a stale acknowledgement (it never holds back pruning, but sluice status lists it, and a target made again at that path would report its projection lost); forget it (sluice forget ${src} ${shellWord(a.consumer)}), or set prune: true and sluice run forgets it`,
    );
  }
  return {
    path: source.path,
    ok: problems.length === 0,
    sourceId: s.sourceId,
    seq: s.enabled ? s.seq : null,
    tables,
    acknowledgements,
    problems,
  };
}

function targetHealth(
  path: string,
  source: string | null,
  via: 'sync' | 'subscribe',
  entries: readonly ProjectionEntry[],
  bounds: HealthBounds,
  capture: Capture | undefined,
  now: number,
  fedLag: ReadonlyMap<string, FedLag> | undefined,
  declaredAt: string,
  localSource?: string,
): TargetHealth {
  const declared = declaredInputs(entries);
  const named = declared.flatMap((d) => (d === '*' ? [] : [{ name: d.name, kind: d.kind, source: d.source }]));
  const all = declared.includes('*');
  const fix = via === 'sync' ? 'sluice run builds it' : 'sluice run subscribes and builds it';
  const base = {
    path,
    source,
    via,
    bounds: { maxLagEvents: bounds.maxLagEvents ?? null, maxLagMs: bounds.maxLagMs ?? null },
  };
  // What "*" asks for when nothing is held yet: a mirror of each captured images-mode table.
  const mirrors = (taken: ReadonlySet<string>) =>
    !all || capture === undefined || 'error' in capture
      ? []
      : capture.status.tables
          .filter((t) => t.mode === 'images')
          .map((t) => ({ name: defaultProjectionName(t.name), kind: 'mirror', source: t.name }))
          .filter((m) => !taken.has(m.name));
  const missing = (p: { name: string; kind: string; source: string }): DeclaredProjectionHealth => {
    const action = `projection ${p.name} is declared and not built yet: ${fix}${source === null ? '' : ` (or sluice sync ${shellWord(source)} ${shellWord(path)} with its definition)`}`;
    return {
      ...notHeldHealth({
        name: p.name,
        kind: p.kind,
        state: 'missing',
        reason: null,
        detail: { table: p.source },
        seq: 0,
        sourcePath: source,
        action,
        problems: [action],
      }),
      declared: true,
    };
  };
  if (!fs.existsSync(path)) {
    const projections = [...named, ...mirrors(new Set(named.map((n) => n.name)))].map(missing);
    return {
      ...base,
      exists: false,
      ok: false,
      projections,
      problems: [`target ${path} is declared (${declaredAt}) but does not exist: ${fix} with every declared projection`],
    };
  }
  let held: ProjectionHealth[];
  let declaredHeld: Set<string>;
  let heldNames: Set<string>;
  let heldTables: Set<string> = new Set();
  let storesAll = false;
  try {
    held = [
      ...health(path, {
        now,
        // Declared: sluice run follows it, and retries what failed by itself.
        followedByRun: true,
        ...(bounds.maxLagEvents === undefined ? {} : { maxLagEvents: bounds.maxLagEvents }),
        ...(bounds.maxLagMs === undefined ? {} : { maxLagMs: bounds.maxLagMs }),
        ...(fedLag === undefined ? {} : { fedLag }),
        ...(localSource === undefined ? {} : { localSource }),
      }).projections,
    ];
    const records = heldProjections(path);
    heldNames = new Set(records.map((r) => r.name));
    heldTables = new Set(records.map((r) => r.targetTable.toLowerCase()));
    declaredHeld = new Set(records.filter((r) => declaresHeld(entries, r)).map((r) => r.name));
    // "*" the set stores that the file does not declare: the rule plan lists it by, and prune takes it out by (prune.ts).
    storesAll = via === 'sync' && undeclaredMirrorAll({ path, projections: entries });
  } catch (err) {
    return { ...base, exists: true, ok: false, projections: [], problems: [`target ${path} cannot be read: ${causeOf(err)}`] };
  }
  const names = new Set(named.map((n) => n.name));
  // The tables "*" leaves out because their mirror cannot be made, and the others it mirrors.
  const refusedTables = held.flatMap((p) => (p.reason === 'MIRROR_REFUSED' && !heldNames.has(p.name) ? [refusedOf(p).table] : []));
  const refusedMirror = (p: ProjectionHealth, sourcePath: string): DeclaredProjectionHealth => {
    const { table, why } = refusedOf(p);
    const others = mirrors(new Set())
      .map((m) => m.source)
      .filter((o) => !refusedTables.some((r) => foldIdent(r) === foldIdent(o)));
    const action = refusedMirrorFix(sourcePath, { path, declaredAt }, table, why, others);
    return { ...p, declared: true, action, problems: [action] };
  };
  // One the target holds: the one rule of declared.ts. One it does not hold (pending under "*", lost): declared by its name or by "*".
  const isDeclared = (p: ProjectionHealth) =>
    heldNames.has(p.name) ? declaredHeld.has(p.name) : names.has(p.name) || (all && unbuiltMirror(p));
  // The set still holds "*" the file no longer declares (no prune yet): the mirrors it has not built are no projection the
  // target holds, nor one the file declares; "*" itself is what is undeclared, and that is what the repair removes. Of a
  // sync target, whether or not "*" would mirror a table now (plan lists it so: undeclaredMirrorAll); of a subscribed
  // one, which no prune takes it out of, once it would.
  const staleAll = all ? [] : held.filter((p) => !heldNames.has(p.name) && unbuiltMirror(p));
  const builds =
    staleAll.length === 0 ? 'every table captured later' : `every captured table: it would build ${staleAll.map((p) => p.name).join(', ')}`;
  const problems = (via === 'sync' ? storesAll : staleAll.length > 0)
    ? [
        `target ${path} stores "*" (a plain sluice sync of it mirrors ${builds}), which its pipeline file (${declaredAt}) does not declare: ${via === 'sync' ? undeclaredMirrorAllFix(path) : 'declare "*"'}`,
      ]
    : [];
  const projections: DeclaredProjectionHealth[] = held
    .filter((p) => !staleAll.includes(p))
    .map((p) => {
      if (isDeclared(p)) {
        // A mirror of "*" that cannot be made: what to do is said in the file's terms, as plan says it.
        if (all && source !== null && p.reason === 'MIRROR_REFUSED' && !heldNames.has(p.name)) return refusedMirror(p, source);
        // Fed from a database the file does not declare for this target: its rows are that database's, and its lag is read there.
        if (source === null || p.sourcePath === null || sameDatabaseFile(p.sourcePath, source)) return { ...p, declared: true };
        const elsewhere = `projection ${p.name} of ${path} is fed from ${p.sourcePath}, not from its declared source ${source} (${declaredAt}): sluice run syncs it from the declared source, rebuilding it when its cursor is another source's (or sluice sync ${shellWord(source)} ${shellWord(path)})`;
        return { ...p, declared: true, needsAction: true, action: elsewhere, problems: [elsewhere, ...p.problems] };
      }
      const undeclared = `projection ${p.name} is held by ${path} but not declared in its pipeline file: remove it (sluice drop ${shellWord(path)} ${shellWord(p.name)}), declare it, or set prune: true and sluice run drops it`;
      const problems = [undeclared, ...p.problems];
      return { ...p, declared: false, needsAction: true, action: undeclared, problems };
    });
  const have = new Set(held.map((p) => p.name));
  projections.push(...named.filter((n) => !have.has(n.name)).map(missing));
  // Under "*" every captured images-mode table is declared: one whose mirror the target does not hold (none built yet, or
  // one sluice drop removed, which the file's "*" builds again) is missing.
  // (Not one whose table another projection writes: "*" leaves it unmirrored, as sync reports it.)
  if (all)
    projections.push(
      ...mirrors(have)
        .filter((m) => !heldTables.has(m.source.toLowerCase()))
        .map(missing),
    );
  return { ...base, exists: true, ok: problems.length === 0 && projections.every((p) => !p.needsAction), projections, problems };
}

/** The table and the refusal of a MIRROR_REFUSED entry (health's detail). */
function refusedOf(p: ProjectionHealth): { table: string; why: string } {
  const detail = p.detail as { table?: unknown; why?: unknown } | null;
  return {
    table: typeof detail?.table === 'string' ? detail.table : p.name,
    why: typeof detail?.why === 'string' ? detail.why : (p.action ?? ''),
  };
}

/** A mirror "*" asks for that the target does not hold: one the next sync builds (MIRROR_NOT_BUILT) or one it cannot make (MIRROR_REFUSED). */
function unbuiltMirror(p: ProjectionHealth): boolean {
  return p.reason === 'MIRROR_NOT_BUILT' || p.reason === 'MIRROR_REFUSED';
}
