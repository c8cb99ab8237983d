import type { CompiledProjection } from '../../projection/index.ts';
import { ownedTables, kindOf } from '../../projection/index.ts';
import type { ProjectionRecord } from './target-meta.ts';
import type { BuildState } from './build-state.ts';

/*
 * What a protected rebuild (apply/rebuild/shadow-build.ts) is for a
 * projection, read without building: which build its kind takes, the build
 * its row records, and the tables a build made (what a rollback or a drop
 * drops).
 */

/** How `p` is rebuilt beside the live one in bounded steps (ProjectionKind.shadowBuild); undefined: in one transaction. */
export function shadowBuildOf(p: CompiledProjection): 'copy' | 'replay' | undefined {
  return kindOf(p).shadowBuild(p.definition);
}

/** The build in progress its row records (read with the row: target-meta.ts), if any. */
export function readBuild(rec: ProjectionRecord | undefined): BuildState | undefined {
  return rec?.build ?? undefined;
}

/** A build's shadow tables and staged copy (the tables its own definition owns at the shadow's name): what a rollback, or a drop of the projection, drops. */
export function buildTables(b: BuildState): string[] {
  const kind = (JSON.parse(b.definition) as { kind?: unknown }).kind;
  const tables = ownedTables({ kind: typeof kind === 'string' ? kind : '', targetTable: b.shadow, definition: b.definition }, b.shadow);
  return [...tables, ...(b.staging === undefined ? [] : [b.staging])];
}
