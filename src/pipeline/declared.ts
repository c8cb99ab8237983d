import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProjectionDefinitionInput } from '../projection/index.ts';
import { CAPTURE_MODES, readTables, openSource, type CaptureMode, type CaptureStatus } from '../capture/index.ts';
import { CaptureRefusedError, SluiceError, errorCode } from '../errors.ts';
import { foldIdent } from '../sqlite/index.ts';
import type { CapturedTable, HandlerFailure, PipelineSource, ProjectionEntry } from './pipeline.ts';
import { isDefaultMirror } from '../apply/projections/index.ts';
import type { ProjectionRecord } from '../apply/target/index.ts';

/**
 * A declared target's projections as a sync takes them (SyncOptions.projections):
 * `"*"` stays `'*'` (a mirror of every captured images-mode table, tables
 * captured later included), and each definition file or inline entry gives
 * its definitions, in the file's order. `plan`, `health --config` and `run`
 * all read a target's declaration through this one function.
 */
export function declaredInputs(entries: readonly ProjectionEntry[]): (ProjectionDefinitionInput | '*')[] {
  return entries.flatMap((e): (ProjectionDefinitionInput | '*')[] => (e.kind === 'all' ? ['*'] : [...e.definitions]));
}

/** The custom handler modules of a target's declaration that failed to load (a file loaded with handlerFailures: 'record'). */
export function handlerFailures(entries: readonly ProjectionEntry[]): HandlerFailure[] {
  return entries.flatMap((e) => (e.kind === 'all' ? [] : (e.failed ?? [])));
}

/** The files of the handler modules a target's custom projections name (loaded: absolute file URLs). */
export function handlerModules(entries: readonly ProjectionEntry[]): string[] {
  return entries.flatMap((e) =>
    e.kind === 'all'
      ? []
      : e.definitions.flatMap((d) =>
          d.kind === 'custom' && typeof d.module === 'string' ? [d.module.startsWith('file:') ? fileURLToPath(d.module) : d.module] : [],
        ),
  );
}

/** A captured table as a pass reads it: status's, or the catalog's (no `newColumns`: a table held by new columns is not known so). */
export type CaptureTableRead = Pick<CaptureStatus['tables'][number], 'name' | 'mode' | 'excluded'> & {
  readonly newColumns?: readonly string[] | undefined;
};

/**
 * The declared capture a pass enables (convergeOnce enables exactly these,
 * and plan says so): each declared table not captured yet (`from` null),
 * or captured in another mode (`from` that mode), or with another declared
 * `exclude`; and a table held unarmed by columns new since it was armed
 * (status's `newColumns`: a column left out may have moved under one) once
 * the file names each of them, in `exclude` or `include` (`include`: those
 * it captures, passed to enable as --include), which re-arms it. Such a
 * table the file does not name them all for is not enabled
 * (heldByNewColumns says why).
 */
export function toEnable(
  source: PipelineSource,
  capture: { readonly tables: readonly CaptureTableRead[] },
): {
  readonly table: string;
  readonly mode: CaptureMode;
  readonly from: string | null;
  readonly exclude?: readonly string[];
  readonly include?: readonly string[];
}[] {
  return source.capture.flatMap((c) => {
    const t = capture.tables.find((x) => foldIdent(x.name) === foldIdent(c.table));
    const exclude = c.exclude === undefined ? {} : { exclude: c.exclude };
    if (t?.newColumns !== undefined) {
      if (unnamedNewColumns(c, t.newColumns).length > 0) return [];
      const include = t.newColumns.filter((n) => (c.include ?? []).some((i) => foldIdent(i) === foldIdent(n)));
      return [{ table: c.table, mode: c.mode, from: t.mode, ...exclude, ...(include.length === 0 ? {} : { include }) }];
    }
    if (t !== undefined && t.mode === c.mode && (c.exclude === undefined || sameColumns(c.exclude, t.excluded))) return [];
    return [{ table: c.table, mode: c.mode, from: t?.mode ?? null, ...exclude }];
  });
}

/** The columns of `fresh` (new since the table was armed) that the declaration names neither in `exclude` nor in `include`. */
function unnamedNewColumns(c: CapturedTable, fresh: readonly string[]): string[] {
  const named = new Set([...(c.exclude ?? []), ...(c.include ?? [])].map(foldIdent));
  return fresh.filter((n) => !named.has(foldIdent(n)));
}

/** A declared table held unarmed by columns new since it was armed that the file does not name (heldByNewColumns). */
export interface HeldByNewColumns {
  readonly table: string;
  /** Every column new since it was armed. */
  readonly newColumns: readonly string[];
  /** Those the file names neither in exclude nor in include. */
  readonly unnamed: readonly string[];
  /** The columns the table leaves out, whose values the new ones may hold. */
  readonly excluded: readonly string[];
  /** What to do, in the file's terms. */
  readonly fix: string;
}

/**
 * The declared tables a pass leaves unarmed because a column is new since
 * they were armed while they leave out a column (status's `newColumns`: a
 * rename cannot be told from a drop and an add) and the file does not say
 * whether to capture it: run enables nothing for them (their projections
 * stay suspended, TABLE_UNARMED) and reports each with its fix, as plan
 * and health --config say it.
 */
export function heldByNewColumns(source: PipelineSource, capture: { readonly tables: readonly CaptureTableRead[] }): HeldByNewColumns[] {
  return source.capture.flatMap((c) => {
    const t = capture.tables.find((x) => foldIdent(x.name) === foldIdent(c.table));
    if (t?.newColumns === undefined) return [];
    const unnamed = unnamedNewColumns(c, t.newColumns);
    if (unnamed.length === 0) return [];
    const one = t.newColumns.length === 1;
    const them = unnamed.length === 1 ? 'it' : 'them';
    const values = t.excluded.length === 1 ? `${t.excluded[0] as string}'s values` : `the values of ${t.excluded.join(', ')}`;
    const fix = `table ${t.name} of ${source.path} has ${one ? 'a new column' : 'new columns'} since it was armed, ${t.newColumns.join(', ')}, which may hold ${values} (left out of capture; a rename cannot be told from a drop and an add), so it stays unarmed and its projections suspended: declare ${unnamed.join(', ')} in ${c.declaredAt} under capture.${c.table}: in "exclude" to leave ${them} out, or in "include" to capture ${them}; sluice run then re-arms ${t.name} and its targets rebuild`;
    return [{ table: t.name, newColumns: t.newColumns, unnamed, excluded: t.excluded, fix }];
  });
}

/** One enable call of a pass: tables of one mode, with an exclude set or none, and the new columns it captures (--include). */
export interface EnableCall {
  readonly mode: CaptureMode;
  readonly tables: readonly string[];
  readonly exclude: readonly string[] | undefined;
  readonly include?: readonly string[];
}

/**
 * The enable calls a pass makes for `todo` (toEnable), in order: per mode,
 * the tables without a declared exclude (or include) together, then each
 * table with one alone (the sets are per table). A call enable refuses is
 * taken apart table by table, so that only the refused tables are left out
 * (enable-declared.ts: run and convergeOnce make them so, plan and health
 * predict it).
 */
export function enableCalls(todo: ReturnType<typeof toEnable>): EnableCall[] {
  return CAPTURE_MODES.flatMap((mode) => {
    const together = (e: (typeof todo)[number]) => e.exclude === undefined && e.include === undefined;
    const tables = todo.filter((e) => e.mode === mode && together(e)).map((e) => e.table);
    const alone = todo.filter((e) => e.mode === mode && !together(e));
    return [
      ...(tables.length === 0 ? [] : [{ mode, tables, exclude: undefined }]),
      ...alone.map((e) => ({ mode, tables: [e.table], exclude: e.exclude, ...(e.include === undefined ? {} : { include: e.include }) })),
    ];
  });
}

/** Two column lists name the same columns (as SQLite compares names, in any order). */
export function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  const key = (l: readonly string[]) => JSON.stringify([...new Set(l.map(foldIdent))].sort());
  return key(a) === key(b);
}

/** The captured tables `source` does not declare (undeclared capture: reported, never disabled by a pass). */
export function undeclaredCapture(source: PipelineSource, capture: Pick<CaptureStatus, 'tables'>): string[] {
  return capture.tables.filter((t) => !source.capture.some((c) => foldIdent(c.table) === foldIdent(t.name))).map((t) => t.name);
}

/**
 * Whether a target's declaration covers a projection it holds: a definition
 * of that name (names compare as SQLite does, without case), or under "*"
 * a mirror that "*" made (a default mirror; a mirror a definition made and
 * the file no longer declares is not). The one rule of health --config,
 * convergeOnce's prune and run's prune.
 */
export function declaresHeld(
  entries: readonly ProjectionEntry[],
  held: Pick<ProjectionRecord, 'name' | 'kind' | 'sourceTable' | 'definition'>,
): boolean {
  const key = held.name.toLowerCase();
  return entries.some((e) => (e.kind === 'all' ? isDefaultMirror(held) : e.definitions.some((d) => d.name.toLowerCase() === key)));
}

/**
 * Refuses to sync from `source` while a table it declares with `exclude`
 * still captures a column the file leaves out (enable could not apply the
 * set: a generated column reading it, a typo beside it): its events and
 * snapshots would carry what the file says must not leave the source.
 * convergeOnce and run's targets call it before every sync.
 */
export function checkDeclaredExclusions(source: PipelineSource): void {
  if (!source.capture.some((c) => c.exclude !== undefined && c.exclude.length > 0)) return;
  const db = openSource(source.path);
  try {
    const tables = readTables(db);
    for (const c of source.capture) {
      const t = tables.find((x) => foldIdent(x.name) === foldIdent(c.table));
      if (t === undefined || c.exclude === undefined) continue;
      const still = c.exclude.filter((x) => t.columns.some((col) => foldIdent(col) === foldIdent(x)));
      if (still.length > 0)
        throw new CaptureRefusedError(
          'EXCLUDE_NOT_APPLIED',
          t.name,
          `Source ${source.path}: table ${t.name} still captures ${still.join(', ')}, which the pipeline file leaves out of capture (enable could not apply the file's exclude: see the source's error). No target of the source is synced until it does; fix the file's exclude for ${t.name} (or the table) so that enable applies it.`,
        );
    }
  } finally {
    db.close();
  }
}

/**
 * Makes the folder of a declared target when it does not exist (a new
 * machine, a folder removed): the file declares the target, so run and a
 * converging pass build it there, as plan says. Throws DB_NOT_WRITABLE
 * naming the folder when it cannot be made: first by the rule plan predicts
 * it with (targetFolderProblem), then for what only mkdir finds (no write
 * access). A one-shot `sync` into a path whose folder is missing still
 * refuses (a typo there makes no folders).
 */
export function makeTargetFolder(target: string): void {
  const folder = path.dirname(path.resolve(target));
  if (fs.existsSync(folder)) return;
  const refuse = (why: string, cause?: unknown) =>
    new SluiceError('DB_NOT_WRITABLE', `Cannot make the folder ${folder} of declared target ${target}${why}`, { cause });
  const problem = inTheWay(folder);
  if (problem !== undefined) throw refuse(`: ${problem}`);
  try {
    fs.mkdirSync(folder, { recursive: true });
  } catch (err) {
    throw refuse(` (${String(errorCode(err) ?? 'error')}): make it, or give this user write access to its parent folder.`, err);
  }
}

/**
 * Why the missing folder of declared target `target` cannot be made (a part
 * of its path in the way: inTheWay), written as the fix; undefined when the
 * folder exists or nothing is in the way. Looks only: plan asks it, to
 * predict makeTargetFolder's refusal, and run, to leave such a target to
 * its part.
 */
export function targetFolderProblem(target: string): string | undefined {
  const folder = path.dirname(path.resolve(target));
  return fs.existsSync(folder) ? undefined : inTheWay(folder);
}

/** The part of `folder`'s path that no mkdir can get past, and what to do: a file, or a symbolic link to nothing (a disk not mounted). */
function inTheWay(folder: string): string | undefined {
  for (let p = folder; p !== path.dirname(p); p = path.dirname(p)) {
    const l = lstat(p);
    if (l === undefined) continue;
    if (l.isSymbolicLink() && !fs.existsSync(p))
      return `${p} is a symbolic link to ${fs.readlinkSync(p)}, which does not exist. Make that folder (or mount its disk), or correct the link or the target's path.`;
    if (!fs.statSync(p).isDirectory()) return `${p} is a file, not a folder. Correct the target's path, or move that file.`;
    return undefined;
  }
  return undefined;
}

/** lstat, or undefined when nothing is at `p` (ENOENT, or ENOTDIR: a file above it). */
function lstat(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}
