import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, type Db, describeTable } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { highWater } from '../../apply/support/target.ts';
import { journalEvents, type EventRelation } from '../../../src/feed/index.ts';
import {
  compileProjection,
  sourceShape,
  type CompiledMap,
  type CompiledMirror,
  type CompiledProjection,
  parseDefinition,
  type ProjectionDefinitionInput,
} from '../../../src/projection/index.ts';

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
  return journalEvents(db, tid, p.source.columns.length, lo, hi);
}

/**
 * Runs `fn` in a transaction that is rolled back, after `tamper` (SQL on the
 * attached target or the source; `$LO` stands for the batch's first seq
 * minus one): every path compared sees the same target.
 */
export function underTamper<T>(db: Db, lo: number, tamper: string, fn: () => T): T {
  db.exec('BEGIN');
  try {
    if (tamper !== '') db.exec(tamper.replaceAll('$LO', String(lo)));
    return fn();
  } finally {
    db.exec('ROLLBACK');
  }
}

/**
 * A database with `schema` and capture on `tables`, made once in `dir` for
 * each schema and tables (a file of its own, closed: no WAL beside it), for
 * stageBatch to copy: enable is most of what a fresh source costs, and a
 * property test stages one per run.
 */
const templates = new Map<string, string>();
function sourceTemplate(dir: string, schema: string, tables: readonly string[]): string {
  const key = JSON.stringify([dir, schema, tables]);
  const known = templates.get(key);
  if (known !== undefined && fs.existsSync(known)) return known;
  const file = path.join(dir, `template-${templates.size}.db`);
  const db = openDatabase(file, { create: true });
  try {
    db.exec(schema);
    enable(db, tables);
  } finally {
    db.close();
  }
  templates.set(key, file);
  return file;
}

/**
 * A fresh source (`schema`, capture on `tables`, then the `before` writes)
 * synced into a fresh target, then the `batch` writes, with the target
 * attached as `tgt`: the batch is (lo, hi]. The caller closes `db`. The
 * source starts as a byte copy of a template made with the same schema and
 * tables in the same folder.
 */
export async function stageBatch(
  source: string,
  target: string,
  o: {
    readonly schema: string;
    readonly tables: readonly string[];
    readonly projections: readonly ProjectionDefinitionInput[];
    readonly before: readonly string[];
    readonly batch: readonly string[];
  },
): Promise<{ db: Db; lo: number; hi: number }> {
  fs.copyFileSync(sourceTemplate(path.dirname(source), o.schema, o.tables), source, fs.constants.COPYFILE_EXCL);
  const db = openDatabase(source);
  try {
    for (const sql of o.before) db.exec(sql);
    await sync(source, target, { projections: o.projections });
    const lo = highWater(db);
    for (const sql of o.batch) db.exec(sql);
    const hi = highWater(db);
    db.prepare('ATTACH DATABASE ? AS tgt').run(target);
    return { db, lo, hi };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** A mirror or map projection, typed for the relational apply paths. */
export function relational(p: CompiledProjection): CompiledMirror | CompiledMap {
  if (p.kind !== 'mirror' && p.kind !== 'map') throw new Error(`projection ${p.name} is not a mirror or map`);
  return p;
}

/** underTamper for an async `fn` (the applier's): rolled back once `fn` settles. */
export async function underTamperAsync<T>(db: Db, lo: number, tamper: string, fn: () => Promise<T>): Promise<T> {
  db.exec('BEGIN');
  try {
    if (tamper !== '') db.exec(tamper.replaceAll('$LO', String(lo)));
    return await fn();
  } finally {
    db.exec('ROLLBACK');
  }
}
