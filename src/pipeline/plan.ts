import fs from 'node:fs';
import { foldIdent, openDatabase, readSession, repairAction, shellWord } from '../sqlite/index.ts';
import { kindNamed, defaultProjectionName, parseDefinition } from '../projection/index.ts';
import { status, type CaptureMode, type CaptureStatus } from '../capture/index.ts';
import {
  compileOrError,
  definitionsToExplain,
  explainAlter,
  explainDefinitions,
  type ExplainReport,
  type ProjectionExplanation,
} from '../apply/evolution/index.ts';
import { attachTarget, readProjections, TARGET_SCHEMA } from '../apply/target/index.ts';
import { replacedTables, sameDefinitionData, takenTable, type Unmirrored } from '../apply/projections/index.ts';
import { heldProjections } from './held.ts';
import { followedByAnother, keptByDeclaration, undeclaredAcknowledgements, undeclaredMirrorAll, undeclaredMirrorAllFix } from './prune.ts';
import { declaredInputs, heldByNewColumns, targetFolderProblem, toEnable, undeclaredCapture, type HeldByNewColumns } from './declared.ts';
import { declaredRefusals } from './enable-declared.ts';
import { readPipelineQuietly } from './read-quietly.ts';
import { mirrorErrors, nothingToMirrorFix, refusedMirrorFix } from './plan-mirror-all.ts';
import type { Pipeline, PipelineSource, PipelineTarget } from './pipeline.ts';

/*
 * `sluice plan`: what the next pass of convergeOnce (converge.ts, what
 * `sluice run` does) would do to reach the file, read without writing
 * anything. Each declared target's definitions are classified by explain's
 * own code (explainAlter, or for a target that does not exist yet its
 * classification against an empty target in memory), so plan cannot
 * disagree with explain, and explain is held to what sync then does. What
 * the pass enables first (declared capture not there yet) is accounted for:
 * a definition over a table it enables is built, and "*" mirrors each
 * images-mode table it enables; a table enable's gates refuse (checkEnable,
 * enable's own, table by table where a call is refused: enable-declared.ts)
 * is not enabled, and the others are, as in the pass.
 */

/** What the pass does with one projection of a target. */
export type PlanAction = 'build' | 'continue' | 'rebuild' | 'refuse' | 'suspend' | 'drop' | 'undeclared';

export interface PlannedProjection {
  readonly name: string;
  readonly kind: string;
  readonly does: PlanAction;
  /** rebuild: why (explain's reason); refuse and suspend: the code; else null. */
  readonly reason: string | null;
  /** explain's classification of the change (null for a projection the file does not declare). */
  readonly classification: string | null;
  /** For refuse, suspend, drop and undeclared: what to do, with the command. */
  readonly fix?: string;
  /**
   * rebuild of a projection the target holds: whether the file's definition
   * differs, as data, from the one it was built from (false: only the
   * source's DDL changed what it compiles to, a rebuild every sync makes by
   * itself).
   */
  readonly redefined?: boolean;
}

export interface PlannedTarget {
  readonly path: string;
  readonly source: string;
  readonly exists: boolean;
  /**
   * Set when the whole sync of the target is refused: a declared definition
   * that does not compile or collides (`projection` names it), a missing
   * target whose folder cannot be made, a source the pass leaves without
   * capture (CAPTURE_ABSENT; `projection` null), or "*" with no table to
   * mirror and nothing else to build or held (NOTHING_TO_SYNC; `projection`
   * null). Nothing of it runs.
   */
  readonly refused: { readonly code: string; readonly projection: string | null; readonly fix: string } | null;
  readonly projections: readonly PlannedProjection[];
}

export interface PlannedSource {
  readonly path: string;
  readonly sourceId: string | null;
  /** Declared capture a pass enables: not captured yet (`from` null), in another mode (`from` that mode), or with another declared `exclude`. */
  readonly enable: readonly {
    readonly table: string;
    readonly mode: CaptureMode;
    readonly from: string | null;
    readonly exclude?: readonly string[];
    /** Columns new since the table was armed that the file declares to capture (`include`): the enable re-arms it with them captured. */
    readonly include?: readonly string[];
  }[];
  /**
   * Declared tables left unarmed by columns new since they were armed (a
   * column left out may have moved under one) that the file names neither
   * in `exclude` nor in `include`: nothing is enabled for them, and their
   * projections stay suspended; `fix` says what to declare.
   */
  readonly held: readonly {
    readonly table: string;
    readonly newColumns: readonly string[];
    readonly code: 'SCHEMA_CHANGED';
    readonly fix: string;
  }[];
  /**
   * Tables of the pass's enable calls that enable refuses, by its own gates (a `_sluice_` table sluice did not make, a
   * table capture refuses, foreign keys), each with its refusal (one refusal of the source as a whole names all the
   * tables it refuses): they are not enabled (not in `enable`); every other table is (enable-declared.ts).
   */
  readonly enableRefused: readonly {
    readonly tables: readonly string[];
    readonly mode: CaptureMode;
    readonly code: string;
    readonly fix: string;
  }[];
  /** Captured tables the file does not declare: reported, never disabled by run. */
  readonly undeclaredCapture: readonly { readonly table: string; readonly fix: string }[];
  /** Acknowledgement rows of targets or projections the file no longer declares: forgotten with prune: true, else reported. */
  readonly acknowledgements: readonly {
    readonly consumer: string;
    readonly target: string;
    readonly projection: string;
    readonly does: 'forget' | 'undeclared';
    readonly fix: string;
  }[];
}

export interface PipelinePlan {
  readonly config: string;
  readonly prune: boolean;
  /** True when the pass would change nothing: everything declared is there and continues, nothing is undeclared. */
  readonly converged: boolean;
  readonly sources: readonly PlannedSource[];
  readonly targets: readonly PlannedTarget[];
}

/**
 * What the next convergeOnce pass would do to reach `pipeline`. Writes
 * nothing: no file is created, changed or removed (a missing target is not
 * made; readQuietly leaves no -wal or -shm).
 *
 * @example
 * const p = await planPipeline(await loadPipeline('sluice.yml'));
 * for (const t of p.targets) for (const x of t.projections) console.log(t.path, x.name, x.does, x.reason);
 */
export async function planPipeline(pipeline: Pipeline): Promise<PipelinePlan> {
  return readPipelineQuietly(pipeline, async () => {
    const sources: PlannedSource[] = [];
    const targets: PlannedTarget[] = [];
    for (const source of pipeline.sources) {
      const capture = readCapture(source.path);
      const wanted = toEnable(source, capture);
      const held = heldByNewColumns(source, capture);
      const enableRefused = refusedEnables(source.path, source, capture);
      const refusedTables = new Set(enableRefused.flatMap((r) => r.tables.map(foldIdent)));
      const enable = wanted.filter((e) => !refusedTables.has(foldIdent(e.table)));
      // A source the pass leaves without capture: every sync of it fails (CAPTURE_ABSENT), as run's does.
      const first = enableRefused[0];
      const noCapture =
        capture.enabled || enable.length > 0
          ? undefined
          : first !== undefined
            ? `source ${source.path} has no sluice capture, and enable refuses ${first.tables.join(', ')} (${first.code}): ${first.fix}`
            : `source ${source.path} has no sluice capture, and the file declares no table of it to capture: list them in "capture"`;
      // Each table's capture mode once the pass has enabled what it enables.
      const after = new Map(capture.tables.map((t) => [foldIdent(t.name), { table: t.name, mode: t.mode }]));
      for (const e of enable) after.set(foldIdent(e.table), { table: e.table, mode: e.mode });
      const planned: PlannedTarget[] = [];
      // The tables the pass re-arms (held unarmed by new columns the file names): their projections rebuild.
      const rearmed = new Set(
        enable
          .filter((e) => capture.tables.some((x) => foldIdent(x.name) === foldIdent(e.table) && x.newColumns !== undefined))
          .map((e) => foldIdent(e.table)),
      );
      for (const t of source.targets)
        planned.push(
          await planTarget(pipeline, source, t, {
            enable,
            captured: capture.enabled,
            noCapture,
            after: [...after.values()],
            held,
            rearmed,
          }),
        );
      targets.push(...planned);
      sources.push({
        path: source.path,
        sourceId: capture.sourceId,
        enable,
        enableRefused,
        held: held.map((h) => ({ table: h.table, newColumns: h.newColumns, code: 'SCHEMA_CHANGED' as const, fix: h.fix })),
        undeclaredCapture: undeclaredCapture(source, capture).map((table) => ({
          table,
          fix: `declare it in "capture", or take capture off it: sluice disable ${shellWord(source.path)} ${shellWord(table)}`,
        })),
        acknowledgements: undeclaredAcks(pipeline, source, capture),
      });
    }
    const converged =
      sources.every(
        (s) =>
          s.enable.length === 0 &&
          s.enableRefused.length === 0 &&
          s.held.length === 0 &&
          s.undeclaredCapture.length === 0 &&
          s.acknowledgements.length === 0,
      ) && targets.every((t) => t.exists && t.refused === null && t.projections.every((p) => p.does === 'continue'));
    return { config: pipeline.file, prune: pipeline.prune, converged, sources, targets };
  });
}

function readCapture(path: string): CaptureStatus {
  const db = openDatabase(path, { readonly: true, role: 'source' });
  try {
    return status(db);
  } finally {
    db.close();
  }
}

/** What enable refuses of `todo` (toEnable) in the pass, table by table (enableDeclared's rule: declaredRefusals), read without writing. */
function refusedEnables(path: string, source: PipelineSource, capture: CaptureStatus): PlannedSource['enableRefused'] {
  if (toEnable(source, capture).length === 0) return [];
  const db = openDatabase(path, { readonly: true, role: 'source' });
  try {
    return declaredRefusals(db, source, capture).map((r) => ({ tables: r.tables, mode: r.mode, code: r.error.code, fix: r.error.message }));
  } finally {
    db.close();
  }
}

async function explain(
  source: string,
  target: string,
  inputs: ReturnType<typeof declaredInputs>,
  captured: boolean,
  suspends: Suspends,
  /** The tables "*" mirrors once the pass enabled them, for a source not captured yet. */
  mirrored: readonly string[],
  /** Filled with the tables of `mirrored` whose mirror cannot be built: sync leaves them out of "*". */
  unmirrored: Unmirrored[],
): Promise<ExplainReport | PlannedProjection[]> {
  if (!captured) return firstBuilds(source, target, inputs, suspends, mirrored, unmirrored);
  if (fs.existsSync(target)) return explainAlter(source, target, { projections: inputs });
  // A target that does not exist yet is classified against an empty one in memory: every projection is a first build,
  // and what sync refuses (a definition that does not compile, two that collide) is refused here by the same code.
  const db = openDatabase(source, { readonly: true, role: 'source' });
  try {
    db.prepare(`ATTACH DATABASE ':memory:' AS ${TARGET_SCHEMA}`).run();
    return await readSession(db, async () => explainDefinitions(db, source, target, await definitionsToExplain(db, source, inputs)));
  } finally {
    db.close();
  }
}

/**
 * A source with no capture yet has nothing to classify against (explain
 * needs its capture): the pass enables it first, then builds every
 * declared definition, or refuses one that does not compile against the
 * source, as sync does (explain's compileOrError). The mirrors "*" adds
 * (`mirrored`) are built, or, when one cannot be (a key whose collation is
 * not its column's), left out of "*" (`unmirrored`), as sync leaves it: it
 * refuses no other projection.
 */
function firstBuilds(
  source: string,
  target: string,
  inputs: ReturnType<typeof declaredInputs>,
  suspends: Suspends,
  mirrored: readonly string[],
  unmirrored: Unmirrored[],
): PlannedProjection[] {
  const db = openDatabase(source, { readonly: true, role: 'source' });
  try {
    // A target that exists already (a user's own database, say): sync refuses a build into a table of it sluice did not make.
    const attached = fs.existsSync(target);
    // What keeps it from being read (a hot journal, not a database) is said as sync, explain and verify say it.
    if (attached) attachTarget(db, target);
    const records = attached ? readProjections(db, TARGET_SCHEMA) : [];
    const mirrors = mirrored.map((table) => ({ name: defaultProjectionName(table), source: table, kind: 'mirror' as const }));
    return [...inputs, ...mirrors].flatMap((d): PlannedProjection[] => {
      if (d === '*') return [];
      const p = compileOrError(db, parseDefinition(d));
      if ('error' in p && mirrors.includes(d as (typeof mirrors)[number])) {
        unmirrored.push({ table: d.source, mode: 'images', why: `${p.error.code}: ${p.error.message}` });
        return [];
      }
      const previous =
        'error' in p
          ? []
          : replacedTables(
              records.find((r) => r.name === p.name),
              p,
            );
      const taken = 'error' in p || !attached ? undefined : takenTable({ db, schema: TARGET_SCHEMA }, p, previous);
      if (taken !== undefined && !('error' in p))
        return [
          {
            name: p.name,
            kind: p.kind,
            does: 'refuse',
            reason: 'TARGET_TABLE_EXISTS',
            classification: 'Rejected',
            fix: taken.error.message,
          },
        ];
      return 'error' in p
        ? [{ name: p.name, kind: d.kind, does: 'refuse', reason: p.error.code, classification: 'Rejected', fix: p.error.message }]
        : [
            suspends(p.kind, p.source.table, p.name, 'Rebuildable') ?? {
              name: p.name,
              kind: p.kind,
              does: 'build',
              reason: null,
              classification: 'Rebuildable',
            },
          ];
    });
  } finally {
    db.close();
  }
}

/** What the pass does instead of building or continuing a projection of `kind` over `table`, if it suspends it. */
type Suspends = (kind: string, table: string, name: string, classification: string | null) => PlannedProjection | undefined;

/** `declaredAt`: where the file declares the projection ("FILE:LINE:COL"), when it does by name. */
function planned(e: ProjectionExplanation, declaredAt: string | undefined): PlannedProjection {
  const base = { name: e.name, kind: e.kind, classification: e.classification };
  const s = e.sync;
  switch (s.does) {
    case 'continue':
      return { ...base, does: 'continue', reason: null };
    case 'rebuild':
      return {
        ...base,
        does: s.reason === null ? 'build' : 'rebuild',
        reason: s.reason,
        ...(e.inputs.old === null ? {} : { redefined: !sameDefinitionData(e.inputs.old.definition, e.inputs.new.definition) }),
      };
    case 'refuse':
    case 'suspend': {
      const code = s.does === 'refuse' ? s.code : s.reason;
      const why = e.changes.find((c) => c.classification === 'Rejected')?.why;
      // What is wrong with the definition, as sync would say it (it names the fix), else explain's repair.
      const fix = `${why ?? e.repair ?? 'sluice explain says why'}${declaredAt === undefined ? '' : ` (declared at ${declaredAt})`}`;
      return { ...base, does: s.does, reason: code, fix };
    }
  }
}

/** What planTarget needs of its source's plan. */
interface SourcePass {
  /** What the pass enables. */
  readonly enable: PlannedSource['enable'];
  /** Whether the source has capture now. */
  readonly captured: boolean;
  /** Why the pass leaves the source without capture, if it does. */
  readonly noCapture: string | undefined;
  /** Each captured table's mode once the pass has enabled what it enables. */
  readonly after: readonly { readonly table: string; readonly mode: CaptureMode }[];
  /** Tables left unarmed by new columns the file does not name (heldByNewColumns): their projections stay suspended, with its fix. */
  readonly held: readonly HeldByNewColumns[];
  /** Tables (folded) the pass re-arms, held by new columns the file names: their projections rebuild. */
  readonly rearmed: ReadonlySet<string>;
}

async function planTarget(pipeline: Pipeline, source: PipelineSource, t: PipelineTarget, pass: SourcePass): Promise<PlannedTarget> {
  const { enable, captured, noCapture } = pass;
  const inputs = declaredInputs(t.projections);
  const exists = fs.existsSync(t.path);
  if (noCapture !== undefined)
    return {
      path: t.path,
      source: source.path,
      exists,
      refused: { code: 'CAPTURE_ABSENT', projection: null, fix: noCapture },
      projections: [],
    };
  // A table the file captures in keys or counter mode (the pass enables or switches it first, or it is so already) feeds no
  // kind that needs images: sync suspends such a projection (explain-facts.ts cursorFact), whatever it would do otherwise.
  const keys = new Set(source.capture.filter((c) => c.mode !== 'images').map((c) => foldIdent(c.table)));
  const suspends: Suspends = (kind, table, name, classification) =>
    keys.has(foldIdent(table)) && kindNamed(kind)?.needsImages !== false
      ? {
          name,
          kind,
          does: 'suspend',
          reason: 'NEEDS_IMAGES_MODE',
          classification,
          fix: repairAction(name, 'NEEDS_IMAGES_MODE', source.path, t.path, table),
        }
      : undefined;
  // Without capture yet, "*" mirrors each images-mode table the pass enables: planned with the definitions.
  const mirrored = captured || !inputs.includes('*') ? [] : enable.filter((e) => e.mode === 'images').map((e) => e.table);
  const unmirrored: Unmirrored[] = [];
  const explained = await explain(source.path, t.path, inputs, captured, suspends, mirrored, unmirrored);
  const report: ExplainReport = Array.isArray(explained) ? { ok: false, sourceSeq: 0, projections: [] } : explained;
  const enabled = new Set(enable.map((e) => e.table.toLowerCase()));
  const declaredAt = new Map(
    t.projections.flatMap((p) => (p.kind === 'all' ? [] : p.definitions.map((d) => [d.name, p.declaredAt] as const))),
  );
  const projections: PlannedProjection[] = Array.isArray(explained) ? [...explained] : [];
  projections.push(
    ...report.projections.map((e): PlannedProjection => {
      // A new definition over a table the pass enables first: built, not refused.
      if (e.sync.does === 'refuse' && e.sync.code === 'TABLE_UNTRACKED' && enabled.has(e.sourceTable.toLowerCase()))
        return { name: e.name, kind: e.kind, does: 'build', reason: null, classification: e.classification };
      const keysOnly =
        e.sync.does === 'continue' || e.sync.does === 'rebuild' ? suspends(e.kind, e.sourceTable, e.name, e.classification) : undefined;
      if (keysOnly !== undefined) return keysOnly;
      const p = planned(e, declaredAt.get(e.name));
      // Its table unarmed by new columns: suspended until the file names them (said in the file's terms), or re-armed by the pass, then rebuilt.
      const unarmed = (p.does === 'suspend' || p.does === 'refuse') && p.reason === 'TABLE_UNARMED';
      const held = pass.held.find((h) => foldIdent(h.table) === foldIdent(e.sourceTable));
      if (held !== undefined && unarmed) return { ...p, does: 'suspend', fix: held.fix };
      if (pass.rearmed.has(foldIdent(e.sourceTable)) && (unarmed || p.does === 'continue' || p.does === 'rebuild'))
        return { name: e.name, kind: e.kind, does: 'rebuild', reason: 'TABLE_REARMED', classification: e.classification };
      return p;
    }),
  );
  if (inputs.includes('*')) {
    // Each images-mode table "*" mirrors once the pass has enabled what it enables that no projection of the run has
    // (by the name of its mirror) nor writes (sync leaves such a table out), and that firstBuilds did not find refused.
    const listed = new Set(projections.map((p) => foldIdent(p.name)));
    const written = (table: string) =>
      report.projections.some(
        (e) =>
          e.targetTable !== null &&
          foldIdent(e.targetTable) === foldIdent(table) &&
          !(e.kind === 'mirror' && foldIdent(e.sourceTable) === foldIdent(table)),
      );
    const refusedAlready = new Set(unmirrored.map((u) => foldIdent(u.table)));
    const tables = pass.after.filter(
      (a) =>
        a.mode === 'images' &&
        !listed.has(foldIdent(defaultProjectionName(a.table))) &&
        !written(a.table) &&
        !refusedAlready.has(foldIdent(a.table)),
    );
    const enabled = new Set(enable.map((e) => foldIdent(e.table)));
    // A mirror that cannot be built (a key whose collation is not its column's) is left out of "*", as sync leaves it.
    // One that can is built when the pass enables its table (a table captured already that explain left out is not
    // mirrored by sync either).
    for (const [table, error] of mirrorErrors(
      source.path,
      tables.map((e) => e.table),
    ))
      if (error !== undefined) unmirrored.push({ table, mode: 'images', why: `${error.code}: ${error.message}` });
      else if (enabled.has(foldIdent(table)))
        projections.push({ name: defaultProjectionName(table), kind: 'mirror', does: 'build', reason: null, classification: null });
    // Each left out is refused, with the fixes in the file's terms (health --config says MIRROR_REFUSED with them).
    const refusedTables = new Set(unmirrored.map((u) => foldIdent(u.table)));
    const others = pass.after.filter((a) => a.mode === 'images' && !refusedTables.has(foldIdent(a.table))).map((a) => a.table);
    for (const u of unmirrored)
      projections.push({
        name: defaultProjectionName(u.table),
        kind: 'mirror',
        does: 'refuse',
        reason: 'MIRROR_REFUSED',
        classification: 'Rejected',
        fix: refusedMirrorFix(source.path, t, u.table, u.why, others),
      });
  }
  const held = exists ? heldProjections(t.path) : [];
  // "*" with nothing to mirror, and no other projection built or held: sync refuses the target (NOTHING_TO_SYNC, nothingToMirror).
  const nothing =
    inputs.includes('*') && held.length === 0 && projections.every((p) => p.does === 'refuse' && p.reason !== 'TARGET_TABLE_EXISTS')
      ? nothingToMirrorFix(source, t, pass.after, unmirrored)
      : undefined;
  // A declared definition that does not compile or collides refuses the whole sync of the target (Syncer.open throws it).
  // (A build into a table sluice did not make is refused alone: the others go on.)
  // (A mirror "*" cannot make is left out alone too: MIRROR_REFUSED.)
  const runRefusal = Array.isArray(explained)
    ? projections.find((p) => p.does === 'refuse' && p.reason !== 'TARGET_TABLE_EXISTS' && p.reason !== 'MIRROR_REFUSED')
    : projections.find((p, i) => {
        const s = report.projections[i]?.sync;
        return p.does === 'refuse' && s?.does === 'refuse' && s.run;
      });
  // A missing target whose folder cannot be made (a file, or a link to nothing, in its path): run and a pass refuse it (makeTargetFolder).
  const folder = exists ? undefined : targetFolderProblem(t.path);
  const refused =
    folder !== undefined
      ? { code: 'DB_NOT_WRITABLE', projection: null, fix: folder }
      : nothing !== undefined
        ? { code: 'NOTHING_TO_SYNC', projection: null, fix: nothing }
        : runRefusal === undefined
          ? null
          : { code: runRefusal.reason ?? 'APPLY_FAILED', projection: runRefusal.name, fix: runRefusal.fix ?? '' };
  const names = new Set(projections.map((p) => p.name));
  // prune: true removes what the declaration does not cover (dropUndeclared), after a sync of the target that is not refused.
  const pruned = pipeline.prune && refused === null;
  const notPruned = refused === null ? '' : ` once the target's sync is no longer refused (${refused.code})`;
  for (const name of held.map((r) => r.name))
    if (!names.has(name))
      projections.push({
        name,
        kind: 'unknown',
        does: pruned ? 'drop' : 'undeclared',
        reason: null,
        classification: null,
        fix: pipeline.prune
          ? `prune: true: sluice run drops it${notPruned}`
          : `declare it, or remove it: sluice drop ${shellWord(t.path)} ${shellWord(name)} (or set prune: true)`,
      });
  // "*" stored in the target's set that the file does not declare (the rule prune and health --config judge it by): prune
  // takes it out (a write); without prune it stays, undeclared, as health --config flags it: a plain sync of the target
  // would go on mirroring every table captured later.
  if (exists && undeclaredMirrorAll(t)) {
    const why = `the file does not declare "*", and a plain sluice sync of it would mirror every table captured later`;
    projections.push({
      name: '"*"',
      kind: 'unknown',
      does: pruned ? 'drop' : 'undeclared',
      reason: null,
      classification: null,
      fix: pipeline.prune
        ? `prune: true: sluice run takes "*" out of the projection set of ${t.path}${notPruned} (${why})`
        : `${undeclaredMirrorAllFix(t.path)} (${why})`,
    });
  }
  return { path: t.path, source: source.path, exists, refused, projections };
}

/**
 * The source's acknowledgements the file no longer declares, by the one
 * rule convergeOnce and run forget them by (prune.ts): a sync's whose target
 * the file does not declare, or whose projection its declared target does
 * not keep.
 */
function undeclaredAcks(pipeline: Pipeline, source: PipelineSource, capture: CaptureStatus): PlannedSource['acknowledgements'] {
  const images = capture.tables.filter((t) => t.mode === 'images').map((t) => t.name);
  return undeclaredAcknowledgements(
    capture.consumers,
    source,
    (t) => keptByDeclaration(t, source, images),
    followedByAnother(pipeline),
  ).map((c) => ({
    consumer: c.name,
    target: c.target as string,
    projection: c.projection as string,
    does: pipeline.prune ? ('forget' as const) : ('undeclared' as const),
    fix: pipeline.prune
      ? 'prune: true: sluice run forgets it'
      : `forget it: sluice forget ${shellWord(source.path)} ${shellWord(c.name)} (or set prune: true)`,
  }));
}
