import type { Db } from '../sqlite/connection.ts';
import { FailClosedError, InvalidInputError } from '../errors.ts';
import { foldIdent } from '../sqlite/quote.ts';
import { readSourceView } from '../feed/source-view.ts';
import { enableCommand, enableHint } from '../capture/enable-hint.ts';
import type { CompiledProjection } from '../projection/compile.ts';
import { defaultProjectionName } from '../projection/name.ts';
import {
  defaultMirror,
  parseDefinition,
  parseStoredDefinition,
  withStoredHandler,
  type ProjectionDefinition,
  type ProjectionDefinitionInput,
} from '../projection/definition.ts';
import { TARGET_SCHEMA } from './session.ts';
import { readProjections } from './target-meta.ts';
import { brokenDefinition, type BrokenDefinition } from './broken-definition.ts';

/* Which definitions a Syncer runs, and which of them a reinit names. */

export interface Resolved {
  readonly defs: ProjectionDefinition[];
  /** The target's stored definitions (not given by the caller). */
  readonly stored: boolean;
  /** Stored definitions that no longer validate. */
  readonly broken: BrokenDefinition[];
}

export async function resolveDefinitions(db: Db, given: readonly ProjectionDefinitionInput[] | undefined): Promise<Resolved> {
  if (given !== undefined && given.length > 0) return { defs: given.map((d) => parseDefinition(d)), stored: false, broken: [] };
  const stored = readProjections(db, TARGET_SCHEMA);
  if (stored.length > 0) {
    const defs: ProjectionDefinition[] = [];
    const broken: BrokenDefinition[] = [];
    for (const r of stored) {
      let d: ProjectionDefinition;
      try {
        d = parseStoredDefinition(r.definition, `stored definition of ${r.name}`);
      } catch (err) {
        const b = brokenDefinition(r.name, r.sourceTable, 'parse', err);
        if (b === undefined) throw err;
        broken.push(b);
        continue;
      }
      // A handler that cannot be loaded again stays an error of the open (CUSTOM_MODULE_NOT_FOUND names the fix).
      defs.push(await withStoredHandler(d));
    }
    return { defs, stored: true, broken };
  }
  const view = readSourceView(db);
  const tables = [...view.tables.values()].filter((t) => t.table.mode === 'images').map((t) => t.table.name);
  if (tables.length === 0) {
    // Tables captured in another mode are captured in images mode by enable; with none, the source's own tables are named.
    const others = [...view.tables.values()].map((t) => t.table.name);
    const fix = others.length > 0 ? enableCommand(db.name, others, 'images') : enableHint(db);
    throw new FailClosedError(
      'NOTHING_TO_SYNC',
      `Source ${db.name} captures no table in images mode, so there is nothing to mirror. Run ${fix}, or pass --projection.`,
    );
  }
  return { defs: tables.map(defaultMirror), stored: false, broken: [] };
}

/** The projections to rebuild: each given by its name, or by its table's name when it has its default name (see name.ts). */
export function resolveReinit(names: readonly string[], projections: readonly CompiledProjection[]): string[] {
  return names.map((name) => {
    if (projections.some((p) => p.name === name)) return name;
    const byTable = projections.find(
      (p) => foldIdent(p.source.table) === foldIdent(name) && p.name === defaultProjectionName(p.source.table),
    );
    if (byTable !== undefined) return byTable.name;
    throw new InvalidInputError(
      'PROJECTION_NOT_FOUND',
      `Cannot reinit ${name}: no projection of that name in this sync (have: ${projections.map((p) => p.name).join(', ')}). Pass the name of a stored projection, or its --projection file.`,
    );
  });
}
