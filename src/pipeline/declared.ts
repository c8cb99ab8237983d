import { fileURLToPath } from 'node:url';
import type { ProjectionDefinitionInput } from '../projection/index.ts';
import type { CaptureStatus } from '../capture/index.ts';
import type { HandlerFailure, PipelineSource, ProjectionEntry } from './pipeline.ts';
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

/**
 * The declared capture a pass enables (convergeOnce enables exactly these,
 * and plan says so): each declared table not captured yet (`from` null),
 * or captured in another mode (`from` that mode).
 */
export function toEnable(
  source: PipelineSource,
  capture: Pick<CaptureStatus, 'tables'>,
): { readonly table: string; readonly mode: 'images' | 'keys'; readonly from: string | null; readonly exclude?: readonly string[] }[] {
  return source.capture.flatMap((c) => {
    const t = capture.tables.find((x) => x.name.toLowerCase() === c.table.toLowerCase());
    const exclude = c.exclude === undefined ? {} : { exclude: c.exclude };
    if (t !== undefined && t.mode === c.mode && (c.exclude === undefined || sameColumns(c.exclude, t.excluded))) return [];
    return [{ table: c.table, mode: c.mode, from: t?.mode ?? null, ...exclude }];
  });
}

/** Two column lists name the same columns (as SQLite compares names, in any order). */
export function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  const key = (l: readonly string[]) => JSON.stringify([...new Set(l.map((c) => c.toLowerCase()))].sort());
  return key(a) === key(b);
}

/** The captured tables `source` does not declare (undeclared capture: reported, never disabled by a pass). */
export function undeclaredCapture(source: PipelineSource, capture: Pick<CaptureStatus, 'tables'>): string[] {
  return capture.tables.filter((t) => !source.capture.some((c) => c.table.toLowerCase() === t.name.toLowerCase())).map((t) => t.name);
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
