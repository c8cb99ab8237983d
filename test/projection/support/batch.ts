import type { Db } from '../../../src/sqlite/connection.ts';
import { describeTable } from '../../../src/sqlite/introspect.ts';
import { journalRange, type EventRelation } from '../../../src/capture/schema.ts';
import { compileProjection, sourceShape, type CompiledProjection } from '../../../src/projection/compile.ts';
import { parseDefinition, type ProjectionDefinitionInput } from '../../../src/projection/definition.ts';

/** A definition compiled against the source table as it is now (what Syncer does, without the checks). */
export function compiledFor(db: Db, def: ProjectionDefinitionInput): CompiledProjection {
  const d = parseDefinition(def);
  const info = describeTable(db, d.source);
  if (info === undefined) throw new Error(`no table ${d.source}`);
  return compileProjection(d, sourceShape(info));
}

/** The events of p's source table in (lo, hi], as step.ts hands them to the apply paths. */
export function batchSql(db: Db, p: CompiledProjection, lo: number, hi: number): EventRelation {
  const tid = Number(db.prepare('SELECT tid FROM main._sluice_tables WHERE name = ?').pluck().get(p.source.table));
  return journalRange(tid, p.source.columns.length, lo, hi);
}
