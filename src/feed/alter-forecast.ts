import type { Db } from '../sqlite/index.ts';
import type { AlterResult, AlteredTable } from '../capture/index.ts';
import { readTables, JOURNAL_TABLE, readConsumers } from '../capture/index.ts';
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
  const rows = readConsumers(db);
  const tids = new Map(readTables(db).map((t) => [t.name, t.tid]));
  return rows.map((r) => {
    let tables: readonly string[] = [];
    try {
      tables = decodeCursor(r.cursor).tables;
    } catch {
      return {
        consumer: r.name,
        seq: r.seq,
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
      .map((t) => forecastTable(db, t, r.seq, result.seq, tids.get(t.table)));
    return { consumer: r.name, seq: r.seq, tables, effects };
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
  const backlog =
    behind > 0
      ? ` As acknowledged it has ${behind} event(s) of ${t.table} before the alter still to apply (up to seq ${alterSeq}); they are in the old layout, so unless it applied them before the alter committed, it rebuilds instead (SCHEMA_CHANGED).`
      : '';
  return {
    table: t.table,
    outcome: 'depends',
    detail: `${t.table} changed in place (${changeOf(t)}). The source does not store projection definitions (they live in the target), so what this consumer does depends on which columns its definition reads (see the rules; sluice alter --target or sluice explain on its target says it for each projection).${backlog}`,
  };
}

/** The columns an in-place alter changed, in a few words. */
function changeOf(t: AlteredTable): string {
  const renamed = t.renamed.map((r) => `renamed ${r.from} to ${r.to}`);
  const both = new Set(t.removed.filter((c) => t.added.some((a) => a.toLowerCase() === c.toLowerCase())).map((c) => c.toLowerCase()));
  const again = t.added.filter((c) => both.has(c.toLowerCase())).map((c) => `${c} dropped and added again (another column)`);
  const removed = t.removed.filter((c) => !both.has(c.toLowerCase())).map((c) => `removed ${c}`);
  const added = t.added.filter((c) => !both.has(c.toLowerCase())).map((c) => `added ${c}`);
  return [...renamed, ...again, ...removed, ...added].join(', ') || 'an index or a constraint';
}

/**
 * What a sync projection of a table an alter changed in place does at its
 * next sync, stated once for every consumer (the source cannot tell which
 * applies to one: the definitions live in the targets). It says what
 * explain's classifier does (src/projection/evolution/classify.ts); `sluice alter
 * --target TARGET` runs that classifier on each projection of a target.
 * Undefined when the alter changed no captured table in place.
 */
export function alterRules(result: AlterResult): string | undefined {
  if (!result.tables.some((t) => t.change === 'altered')) return undefined;
  return [
    'A table changed in place keeps its rows, and each sync projection of it does what explain says (sluice alter --target TARGET, or sluice explain SOURCE TARGET after the alter, says it for each projection of a target):',
    'a mirror, or a custom projection, reads every column, so it rebuilds when a column is added, dropped, renamed or retyped (a custom projection that declares no tables of its own is refused, ALTER_CUSTOM_NO_SHADOW, until sluice reinit rebuilds it in one transaction);',
    'a map or an fts5 index reads its key, the columns it copies and every column its computed columns and filter name: it goes on from its cursor when none of those changed, with or without a computed column or a filter (sluice reads the names in the SQL); a name it reads that was dropped or renamed away suspends it (SOURCE_COLUMN_MISSING) until a definition that fits is given; a name it reads that now names another column (dropped and added again, or renamed onto: a name is not a column, and only a rename sluice alter ran is followed) or a column it reads that was retyped rebuilds it;',
    'a change-stream reader (changes, export) rebuilds (SCHEMA_CHANGED); a reader with events of the table from before the alter still to apply rebuilds too.',
  ].join(' ');
}

function eventsBetween(db: Db, tid: number, lo: number, hi: number): number {
  return Number(db.prepare(`SELECT count(*) FROM main.${JOURNAL_TABLE} WHERE seq > ? AND seq <= ? AND tid = ?`).pluck().get(lo, hi, tid));
}
