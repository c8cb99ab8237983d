import fs from 'node:fs';
import type { Db } from '../sqlite/connection.ts';
import { openDatabase, useWal } from '../sqlite/connection.ts';
import { quoteIdent } from '../sqlite/quote.ts';
import { FailClosedError, InvalidInputError, SluiceError } from '../errors.ts';
import { isReasonCode, type ReasonCode } from '../reasons.ts';
import { placeholderFor, toBindable, type SqlValue } from '../sqlite/codec.ts';
import { imageColumns, journalColumn, OP_DELETE, OP_INSERT, OP_UPDATE } from '../capture/schema.ts';
import type { ChangeEvent, Row } from '../feed/events.ts';
import { compileProjection, type CompiledProjection, type SourceShape } from '../projection/compile.ts';
import {
  defaultMirror,
  parseDefinition,
  parseStoredDefinition,
  type ProjectionDefinition,
  type ProjectionDefinitionInput,
} from '../projection/definition.ts';
import { checkCollisions, probeExpressions } from '../projection/validate.ts';
import { applyRelational, createRelationalTarget, dropTemps } from '../projection/kinds/relational.ts';
import { foreignUniqueIndexOf, ftsUniqueMessage, hasForeignUniqueIndex } from '../projection/foreign-unique.ts';
import { restoreIndexes, userIndexes, type DroppedIndex, type UserIndex } from '../apply/user-indexes.ts';
import { applyFtsEvents, createFtsTarget } from '../projection/kinds/fts5.ts';
import { applyCustomEvents, initCustom } from '../projection/kinds/custom.ts';
import {
  ensureTargetMeta,
  insertProjection,
  newProjectionRecord,
  ownedTables,
  readProjection,
  setState,
  storeCursor,
  PROJECTIONS_TABLE,
  type ProjectionRecord,
} from '../apply/target-meta.ts';
import type { BatchLine, SnapshotLine, TableLine } from './format.ts';
import { peekEncoding, readExportFile, type ExportItem, type ReadOptions, type ReadTotals } from './checked-reader.ts';
import { hasUnpairedSurrogate, matchTargetEncoding, unpairedToDb, type TextEncoding } from '../sqlite/text-encoding.ts';
import { lineToEvent, lineToRow } from '../feed/jsonl.ts';

export interface ImportOptions {
  /** Definitions (default: the target's stored ones, else a mirror of every table in the file). */
  readonly projections?: readonly ProjectionDefinitionInput[];
  /** After each snapshot or batch read: the bytes of the file read so far, of `size` (for a progress bar). */
  readonly onProgress?: (p: {
    readonly bytes: number;
    readonly size: number;
    readonly batchesApplied: number;
    readonly batchesSkipped: number;
  }) => void;
}

export interface ImportReport {
  readonly lines: number;
  readonly batchesApplied: number;
  readonly batchesSkipped: number;
  /** Lines after the last complete batch (a truncated tail): read, not applied. */
  readonly incompleteTail: number;
  readonly projections: readonly {
    readonly name: string;
    readonly state: string;
    readonly reason?: string;
    readonly seq: number;
    readonly droppedIndexes?: readonly DroppedIndex[];
  }[];
}

const SCHEMA = 'main';

/**
 * Applies an export file to a target with the same cursor rules as `sync`:
 * a batch already applied is skipped, an overlap applies only the new part,
 * a gap stops the import. Importing a file twice, or a truncated file and
 * then the full one, gives the same target. A malformed line stops the
 * import with its line number; the batch it belongs to is not committed.
 *
 * @example
 * await importFile('cache.db', 'changes.jsonl');
 */
export async function importFile(targetPath: string, file: string, options: ImportOptions = {}): Promise<ImportReport> {
  if (!fs.existsSync(file))
    throw new InvalidInputError('IMPORT_NOT_FOUND', `Import file ${file} does not exist. Pass a file written by \`sluice export\`.`);
  const encoding = await peekEncoding(file);
  return importStream(
    targetPath,
    {
      label: file,
      size: () => fs.statSync(file).size,
      ...(encoding === undefined ? {} : { encoding }),
      read: (o) => readExportFile(file, o),
    },
    options,
  );
}

/** A stream of checked export items (a file, or batches from a broker): what import applies. */
export interface ItemStream {
  /** Names the stream in errors (`<label>:<line>`). */
  readonly label: string;
  /** The text encoding the stream's source declares, when known before reading (a new target takes it). */
  readonly encoding?: TextEncoding;
  /** Bytes in the whole stream, for progress (called only when progress is asked for). */
  readonly size?: () => number;
  /** Reads the stream once, checked (see checked-reader.ts). */
  read(options: ReadOptions): AsyncGenerator<ExportItem, ReadTotals>;
}

/** importFile over any stream of checked export items, with the same rules. */
export async function importStream(targetPath: string, stream: ItemStream, options: ImportOptions = {}): Promise<ImportReport> {
  const encoding = stream.encoding;
  const db = openDatabase(targetPath, { create: true, role: 'target' });
  try {
    if (db.prepare("SELECT 1 FROM main.sqlite_schema WHERE name = '_sluice_state'").get() !== undefined) {
      throw new InvalidInputError(
        'TARGET_IS_SOURCE',
        `The target ${targetPath} has sluice capture enabled: it is a source. Import into a separate database.`,
      );
    }
    // Up front, before anything is written: a new target takes the file's text encoding, another one is refused.
    if (encoding !== undefined) matchTargetEncoding(db, targetPath, encoding);
    // A target is sluice's own file: WAL, like sync's (session.ts).
    useWal(db);
    db.pragma('temp_store = MEMORY');
    ensureTargetMeta(db, SCHEMA);
    return await new Importer(db, options).run(stream);
  } finally {
    db.close();
  }
}

/** A projection being installed from the snapshot being read (one transaction, committed at its `snapshot` line). */
interface Installing {
  readonly p: CompiledProjection;
  readonly indexes: UserIndex[];
  /** Custom projections only: their handler's init takes every row at once. */
  readonly rows?: Row[];
}

/** Snapshot rows applied per statement batch while a snapshot streams in. */
const SNAPSHOT_CHUNK = 5000;

class Importer {
  readonly #db: Db;
  readonly #options: ImportOptions;
  readonly #shapes = new Map<string, SourceShape>();
  #projections: CompiledProjection[] | undefined;
  /** The snapshot being read: per source table, its projections and the rows not yet applied. */
  #snapshot: Map<string, { readonly installing: Installing[]; chunk: Row[]; applied: number }> | undefined;
  /** The definitions the snapshot being read installs, fixed at its first table line (undefined: mirrors). */
  #snapshotDefs: ProjectionDefinition[] | undefined;
  #applied = 0;
  #skipped = 0;
  /** Indexes a user added that a snapshot in this file replaced its tables without (see user-indexes.ts). */
  #droppedIndexes: (DroppedIndex & { readonly projection: string })[] = [];

  constructor(db: Db, options: ImportOptions) {
    this.#db = db;
    this.#options = options;
  }

  async run(stream: ItemStream): Promise<ImportReport> {
    const file = stream.label;
    const size = this.#options.onProgress === undefined ? 0 : (stream.size?.() ?? 0);
    let bytes = 0;
    const reader = stream.read({ shapeOf: (t) => this.#shapes.get(t) ?? this.#storedShapes().get(t), onRead: (b) => (bytes = b) });
    let totals: ReadTotals;
    try {
      for (;;) {
        const next = await reader.next();
        if (next.done === true) {
          totals = next.value;
          break;
        }
        const item = next.value;
        if (item.kind === 'table') await this.#onTable(item.line);
        else if (item.kind === 'row') await this.#onRow(item.line.table, lineToRow(item.line.row));
        else if (item.kind === 'snapshot') await this.#onSnapshot(item.line);
        else
          await this.#onBatch(
            item.line,
            item.events.map((e) => lineToEvent(e.line)),
            `${file}:${item.n}`,
          );
        if (item.kind === 'snapshot' || item.kind === 'batch')
          this.#options.onProgress?.({ bytes, size, batchesApplied: this.#applied, batchesSkipped: this.#skipped });
      }
    } finally {
      // A snapshot the file does not finish (or that failed its check) is not committed.
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      if (this.#snapshot !== undefined) dropTemps(this.#db);
      this.#snapshot = undefined;
    }
    const projections = (this.#projections ?? []).map((p) => {
      const r = readProjection(this.#db, SCHEMA, p.name);
      const dropped = this.#droppedIndexes.filter((d) => d.projection === p.name).map(({ name, table, why }) => ({ name, table, why }));
      return {
        name: p.name,
        state: r?.state ?? 'absent',
        ...(r?.reason != null ? { reason: r.reason } : {}),
        seq: r?.seq ?? 0,
        ...(dropped.length === 0 ? {} : { droppedIndexes: dropped }),
      };
    });
    return {
      lines: totals.lines,
      batchesApplied: this.#applied,
      batchesSkipped: this.#skipped,
      incompleteTail: totals.incompleteTail,
      projections,
    };
  }

  #stored: Map<string, SourceShape> | undefined;
  /** The source shapes of the target's projections (a file exported with --since has no table lines). */
  #storedShapes(): Map<string, SourceShape> {
    if (this.#stored !== undefined) return this.#stored;
    const rows = this.#db.prepare(`SELECT source_shape FROM ${PROJECTIONS_TABLE}`).pluck().all() as string[];
    this.#stored = new Map(rows.map((r) => JSON.parse(r) as SourceShape).map((s) => [s.table, s]));
    return this.#stored;
  }

  /** The definitions to import: given, else the target's stored ones, else undefined (a mirror of every table in the file). */
  #definitions(): ProjectionDefinition[] | undefined {
    if (this.#options.projections !== undefined && this.#options.projections.length > 0)
      return this.#options.projections.map((d) => parseDefinition(d));
    const stored = this.#db.prepare(`SELECT name, definition FROM ${PROJECTIONS_TABLE} ORDER BY name`).all() as {
      name: string;
      definition: string;
    }[];
    if (stored.length === 0) return undefined;
    return stored.map((s) => parseStoredDefinition(s.definition, `stored definition of ${s.name}`));
  }

  #compile(d: ProjectionDefinition): CompiledProjection {
    const shape = this.#shapes.get(d.source) ?? this.#storedShapes().get(d.source);
    if (shape === undefined) {
      throw new InvalidInputError(
        'IMPORT_NO_SHAPE',
        `Projection ${d.name}: the file has no snapshot of table ${d.source} and the target has no projection of it yet. Export without --since first, then import that file.`,
      );
    }
    if (d.kind === 'custom' && d.handler === undefined)
      throw new InvalidInputError(
        'BAD_DEFINITION',
        `Projection ${d.name}: pass its definition file with --projection so its handler can run.`,
      );
    const p = compileProjection(d, shape);
    // As sync does: SQLite judges the expressions (over a TEMP table shaped like the source; nothing is written).
    probeExpressions(this.#db, p);
    return p;
  }

  #compiled(): CompiledProjection[] {
    if (this.#projections !== undefined) return this.#projections;
    const defs = this.#definitions() ?? [...this.#shapes.keys()].map(defaultMirror);
    const out = defs.map((d) => this.#compile(d));
    checkCollisions(out);
    this.#projections = out;
    return out;
  }

  /** A table line: the first opens the snapshot's transaction; each prepares its table's projections. */
  async #onTable(line: TableLine): Promise<void> {
    const db = this.#db;
    if (this.#snapshot === undefined) {
      db.exec('BEGIN IMMEDIATE');
      this.#snapshot = new Map();
      this.#snapshotDefs = this.#definitions();
      this.#projections = undefined;
    }
    this.#shapes.set(line.table, {
      table: line.table,
      columns: line.columns,
      keyColumns: line.keyColumns,
      withoutRowid: line.withoutRowid,
      rowidAlias: line.rowidAlias,
    });
    const defs = (this.#snapshotDefs ?? [defaultMirror(line.table)]).filter((d) => d.source === line.table);
    const installing: Installing[] = [];
    for (const d of defs) {
      const p = this.#compile(d);
      const indexes: UserIndex[] = [];
      const rec = readProjection(db, SCHEMA, p.name);
      if (rec !== undefined) {
        if (rec.sourceId !== line.sourceId) {
          throw new FailClosedError(
            'SOURCE_CHANGED',
            `Projection ${p.name} in the target follows source ${rec.sourceId}, but this file is from ${line.sourceId}. Import into a new target, or drop the projection's tables first.`,
          );
        }
        // A table line carries its snapshot's seq (one read transaction).
        if (rec.seq >= line.seq && rec.fingerprint === p.fingerprint) continue; // already at or past this snapshot
        indexes.push(...userIndexes(db, SCHEMA, owned(rec)));
        for (const t of owned(rec)) db.exec(`DROP TABLE IF EXISTS main.${quoteIdent(t)}`);
        db.prepare(`DELETE FROM ${PROJECTIONS_TABLE} WHERE name = ?`).run(p.name);
      }
      for (const t of p.ownedTables) {
        if (db.prepare('SELECT 1 FROM main.sqlite_schema WHERE name = ? COLLATE NOCASE').get(t) !== undefined) {
          throw new InvalidInputError(
            'TARGET_TABLE_EXISTS',
            `Projection ${p.name}: target table ${t} already exists and sluice did not make it. Drop it, or set another "target".`,
          );
        }
      }
      insertProjection(db, SCHEMA, newProjectionRecord(p, line.sourceId, null, 'building'));
      if (p.kind === 'mirror' || p.kind === 'map') createRelationalTarget(db, SCHEMA, p);
      if (p.kind === 'fts5') createFtsTarget(db, SCHEMA, p);
      installing.push({ p, indexes, ...(p.kind === 'custom' ? { rows: [] } : {}) });
    }
    this.#snapshot.set(line.table, { installing, chunk: [], applied: 0 });
  }

  /** A snapshot row, applied in chunks so a snapshot never sits in memory whole. */
  async #onRow(table: string, row: Row): Promise<void> {
    const t = this.#snapshot?.get(table);
    if (t === undefined || t.installing.length === 0) return;
    t.chunk.push(row);
    if (t.chunk.length >= SNAPSHOT_CHUNK) await this.#flushRows(t);
  }

  async #flushRows(t: { readonly installing: Installing[]; chunk: Row[]; applied: number }): Promise<void> {
    const rows = t.chunk;
    t.chunk = [];
    for (const { p, rows: all } of t.installing) {
      if (all !== undefined) {
        all.push(...rows);
        continue;
      }
      const inserts: ChangeEvent[] = rows.map((after, i) => ({
        op: 'insert',
        seq: t.applied + i + 1,
        table: p.source.table,
        key: p.source.keyColumns.map((k) => after[k] ?? null),
        ts: 0,
        image: 'full',
        before: null,
        after,
      }));
      const miss = await this.#applyEvents(p, inserts);
      if (miss !== undefined)
        throw new SluiceError('IMPORT_SNAPSHOT_FAILED', `Projection ${p.name}: snapshot rows do not apply cleanly (${miss}).`);
    }
    t.applied += rows.length;
  }

  /** The snapshot's marker, checked by the reader: finish each projection and commit. */
  async #onSnapshot(line: SnapshotLine): Promise<void> {
    const db = this.#db;
    const snap = this.#snapshot ?? new Map();
    if (this.#snapshot === undefined) db.exec('BEGIN IMMEDIATE');
    for (const [table, t] of snap) {
      if (!line.tables.includes(table)) continue;
      await this.#flushRows(t);
      for (const { p, indexes, rows } of t.installing) {
        if (rows !== undefined) await initCustom(db, SCHEMA, p, rows);
        // The indexes a user added to the tables it replaced, made again (see user-indexes.ts).
        for (const d of restoreIndexes(db, SCHEMA, indexes.splice(0))) this.#droppedIndexes.push({ projection: p.name, ...d });
        storeCursor(db, SCHEMA, p.name, line.cursor, line.seq, 0, null);
      }
    }
    this.#projections = undefined;
    this.#stored = undefined;
    this.#compiled(); // every projection has its shape now, and none collides
    db.exec('COMMIT');
    this.#snapshot = undefined;
  }

  async #onBatch(line: BatchLine, events: readonly ChangeEvent[], at: string): Promise<void> {
    const db = this.#db;
    let applied = false;
    if (this.#compiled().length === 0) {
      throw new InvalidInputError(
        'IMPORT_NO_SNAPSHOT',
        `${at}: the target has no projections and the file has no snapshot before this batch (seq ${line.fromSeq}-${line.seq}): there is nothing to apply its events to. Import a file that starts with a snapshot (sluice export without --since), or pass --projection with a target made from one.`,
      );
    }
    db.exec('BEGIN IMMEDIATE');
    let suspended: { name: string; reason: ReasonCode; detail: unknown } | undefined;
    try {
      for (const p of this.#compiled()) {
        const rec = readProjection(db, SCHEMA, p.name);
        if (rec === undefined) {
          throw new InvalidInputError(
            'IMPORT_NO_SNAPSHOT',
            `Projection ${p.name} has no rows yet and this file has no snapshot before seq ${line.fromSeq}. Import a file that starts with a snapshot (sluice export without --since).`,
          );
        }
        if (rec.sourceId !== line.sourceId)
          throw new FailClosedError(
            'SOURCE_CHANGED',
            `Projection ${p.name} follows source ${rec.sourceId}, but this file is from ${line.sourceId}.`,
          );
        // TARGET_CONSTRAINT (a user's UNIQUE index) clears once the index is dropped: then try the batch again.
        if (rec.state !== 'active' && !(rec.reason === 'TARGET_CONSTRAINT' && foreignUniqueIndexOf(db, SCHEMA, p) === undefined)) continue;
        if (line.seq <= rec.seq) continue; // already applied
        if (line.fromSeq > rec.seq) {
          throw new FailClosedError(
            'BATCH_GAP',
            `Projection ${p.name} is at seq ${rec.seq}, but the next batch in the file starts after seq ${line.fromSeq}; events in between are missing. Import the file that holds them first.`,
          );
        }
        const mine = events.filter((e) => e.table === p.source.table && e.seq > rec.seq);
        const miss = await this.#applyEvents(p, mine);
        if (miss !== undefined) {
          const code = miss.split(':')[0] ?? '';
          suspended = { name: p.name, reason: isReasonCode(code) ? code : 'TARGET_DIVERGED', detail: { message: miss } };
          break;
        }
        const last = mine.at(-1);
        storeCursor(db, SCHEMA, p.name, line.cursor, line.seq, mine.length, last === undefined ? null : last.ts);
        applied = true;
      }
      if (suspended !== undefined) throw new Error('suspend');
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      dropTemps(db);
      if (suspended === undefined) throw err;
      db.exec('BEGIN IMMEDIATE');
      setState(db, SCHEMA, suspended.name, 'suspended', suspended.reason, suspended.detail);
      db.exec('COMMIT');
      throw new FailClosedError(
        suspended.reason,
        suspended.reason === 'TARGET_CONSTRAINT'
          ? `Projection ${suspended.name} was suspended while importing the batch ending at seq ${line.seq}: ${JSON.stringify(suspended.detail)}. Drop the index, then import again.`
          : `Projection ${suspended.name} diverged while importing the batch ending at seq ${line.seq}: ${JSON.stringify(suspended.detail)}. It is suspended; repair or rebuild the target.`,
      );
    }
    if (applied) this.#applied++;
    else this.#skipped++;
  }

  /** Returns a reason string on a before-image mismatch (nothing is written then). */
  async #applyEvents(p: CompiledProjection, events: readonly ChangeEvent[]): Promise<string | undefined> {
    if (events.length === 0) return undefined;
    if (events.some((e) => e.image !== 'full') && p.kind !== 'custom')
      return `NEEDS_IMAGES_MODE: table ${p.source.table} was exported in keys mode`;
    if (p.kind === 'mirror' || p.kind === 'map') {
      fillEventTable(this.#db, p.source, events);
      const n = p.source.columns.length;
      let r: ReturnType<typeof applyRelational>;
      try {
        r = applyRelational(this.#db, SCHEMA, p, { sql: `SELECT seq, op, ts, ${imageColumns(n)} FROM temp._sluice_ev`, params: {} });
      } catch (err) {
        // A UNIQUE index a user added to the target table, which this batch breaks (step.ts has the same case).
        if ((err as { code?: unknown }).code !== 'SQLITE_CONSTRAINT_UNIQUE' || !hasForeignUniqueIndex(this.#db, SCHEMA, p.targetTable))
          throw err;
        return `TARGET_CONSTRAINT: ${(err as Error).message}: the target table ${p.targetTable} has a UNIQUE index sluice did not make, and this batch breaks it (a batch may end inside a source transaction); drop the index or make it non-unique, then import again`;
      }
      this.#db.exec('DROP TABLE IF EXISTS temp._sluice_ev');
      return r.mismatch === undefined ? undefined : `${r.mismatch.reason}: key ${JSON.stringify(r.mismatch.key)} at seq ${r.mismatch.seq}`;
    }
    if (p.kind === 'fts5') {
      const unique = foreignUniqueIndexOf(this.#db, SCHEMA, p);
      if (unique !== undefined) return `TARGET_CONSTRAINT: ${ftsUniqueMessage(unique)}`;
      const r = applyFtsEvents(this.#db, SCHEMA, p, events);
      return r.mismatch === undefined ? undefined : `${r.mismatch.reason}: key ${JSON.stringify(r.mismatch.key)} at seq ${r.mismatch.seq}`;
    }
    await applyCustomEvents(this.#db, SCHEMA, p, events);
    return undefined;
  }
}

function owned(rec: ProjectionRecord): string[] {
  return ownedTables(rec.kind, rec.targetTable);
}

/** Writes events into temp._sluice_ev in journal layout, for the set-based apply. */
function fillEventTable(db: Db, shape: SourceShape, events: readonly ChangeEvent[]): void {
  const n = shape.columns.length;
  db.exec('DROP TABLE IF EXISTS temp._sluice_ev');
  db.exec(`CREATE TEMP TABLE _sluice_ev (seq INTEGER PRIMARY KEY, op INTEGER NOT NULL, ts INTEGER, ${imageColumns(n)})`);
  const names = shape.columns.map((c) => c.name);
  const stmts = new Map<string, ReturnType<Db['prepare']>>();
  for (const e of events) {
    const before = e.before === null ? [] : names.map((c) => (e.before as Row)[c] ?? null);
    const after = e.after === null ? [] : names.map((c) => (e.after as Row)[c] ?? null);
    const op = e.op === 'insert' ? OP_INSERT : e.op === 'delete' ? OP_DELETE : OP_UPDATE;
    const values: SqlValue[] = (e.op === 'insert' ? after : e.op === 'delete' ? before : [...before, ...after]).map((v) =>
      typeof v === 'string' && hasUnpairedSurrogate(v) ? unpairedToDb(db, v) : v,
    );
    const sql = `INSERT INTO temp._sluice_ev (seq, op, ts${values.map((_, i) => `, ${journalColumn(i)}`).join('')}) VALUES (?, ?, ?${values.map((v) => `, ${placeholderFor(v)}`).join('')})`;
    let stmt = stmts.get(sql);
    if (stmt === undefined) {
      stmt = db.prepare(sql);
      stmts.set(sql, stmt);
    }
    (stmt as unknown as { run: (...a: unknown[]) => unknown }).run(e.seq, op, e.ts, ...values.map(toBindable));
  }
}
