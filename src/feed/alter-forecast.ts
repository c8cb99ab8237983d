import type { Db } from '../sqlite/connection.ts';
import type { AlterResult, AlteredTable } from '../capture/alter.ts';
import { readTables } from '../capture/catalog.ts';
import { CONSUMERS_TABLE, JOURNAL_TABLE } from '../capture/schema.ts';
import { decodeCursor } from './cursor.ts';

/** What one consumer's readers of one changed table will do at their next run, as far as the source knows. */
export interface TableForecast {
  readonly table: string;
  /** `rebuilds`, `suspends`, or `depends` (on the definition, which lives in the target, not the source). */
  readonly outcome: 'rebuilds' | 'suspends' | 'depends';
  readonly detail: string;
}

export interface ConsumerForecast {
  readonly consumer: string;
  /** The seq it last acknowledged (it may be further along: acknowledgements lag). */
  readonly seq: number;
  /** The tables its acknowledged cursor covers. */
  readonly tables: readonly string[];
  /** One entry per changed table it reads; empty when the alter touches none of them. */
  readonly effects: readonly TableForecast[];
}

/**
 * For each consumer the source knows of (the acknowledgements in
 * `_sluice_consumers`, `<projection>@<target>` for sync), what its readers
 * of the tables an alter changed will do. The source knows which tables a
 * consumer reads and how far it acknowledged, not its definition: where the
 * outcome depends on the definition, it says so and what decides it.
 *
 * @example
 * forecastAlter(db, alter(db, 'ALTER TABLE issues DROP COLUMN legacy', { dryRun: true }));
 */
export function forecastAlter(db: Db, result: AlterResult): ConsumerForecast[] {
  const rows = db.prepare(`SELECT name, cursor, seq FROM main.${CONSUMERS_TABLE} ORDER BY name`).all() as {
    name: string;
    cursor: string;
    seq: bigint;
  }[];
  const tids = new Map(readTables(db).map((t) => [t.name, t.tid]));
  return rows.map((r) => {
    let tables: readonly string[] = [];
    try {
      tables = decodeCursor(r.cursor).tables;
    } catch {
      return {
        consumer: r.name,
        seq: Number(r.seq),
        tables: [],
        effects: [
          {
            table: '?',
            outcome: 'depends',
            detail: 'its acknowledged cursor cannot be read, so the source does not know which tables it reads',
          },
        ],
      };
    }
    const effects = result.tables
      .filter((t) => tables.includes(t.table))
      .map((t) => forecastTable(db, t, Number(r.seq), result.seq, tids.get(t.table)));
    return { consumer: r.name, seq: Number(r.seq), tables, effects };
  });
}

function forecastTable(db: Db, t: AlteredTable, acked: number, alterSeq: number, tid: number | undefined): TableForecast {
  if (t.change === 'rebuilt')
    return {
      table: t.table,
      outcome: 'rebuilds',
      detail: `${t.table} was rebuilt (made again under its name): a new identity, so its readers rebuild from a snapshot (TABLE_REARMED); readers of other tables go on`,
    };
  if (t.change === 'dropped')
    return {
      table: t.table,
      outcome: 'suspends',
      detail: `${t.table} is gone: a sync projection of it is suspended (SOURCE_TABLE_MISSING), a change-stream reader rebuilds and finds no table (TABLE_UNARMED)`,
    };
  const behind = tid === undefined ? 0 : eventsBetween(db, tid, acked, alterSeq);
  const changed = [...t.removed.map((c) => `removed ${c}`), ...t.added.map((c) => `added ${c}`)].join(', ') || 'an index or a constraint';
  const backlog =
    behind > 0
      ? ` As acknowledged it has ${behind} event(s) of ${t.table} before the alter still to apply (up to seq ${alterSeq}); they are in the old layout, so unless it applied them before the alter committed, it rebuilds instead (SCHEMA_CHANGED).`
      : '';
  return {
    table: t.table,
    outcome: 'depends',
    detail: `${t.table} changed in place (${changed}). The source does not store projection definitions (they live in the target), so it cannot tell which applies: a mirror or a custom projection rebuilds (DEFINITION_CHANGED); a map or fts5 projection that uses a removed or renamed column is suspended (SOURCE_COLUMN_MISSING); a map of plain columns or an fts5 index that names only unchanged columns goes on without a rebuild, and a map with a computed column or a filter rebuilds (sluice cannot tell which columns SQL reads); a change-stream reader (changes, export) rebuilds (SCHEMA_CHANGED).${backlog}`,
  };
}

function eventsBetween(db: Db, tid: number, lo: number, hi: number): number {
  return Number(db.prepare(`SELECT count(*) FROM main.${JOURNAL_TABLE} WHERE seq > ? AND seq <= ? AND tid = ?`).pluck().get(lo, hi, tid));
}
