import { fts5Alter } from './alter.ts';
import { InvalidInputError, errorCode } from '../../../errors.ts';
import { foldIdent } from '../../../sqlite/index.ts';
import { copiedColumn, findColumn, type TargetColumn } from '../../compiled.ts';
import type { ProjectionKind } from '../../kind.ts';
import {
  allTablesOf,
  buildFts,
  createFtsTables,
  ftsIndexMatches,
  ftsMadeTablesOf,
  ftsNames,
  ftsTableColumns,
  keyTableKeys,
  keyTableOf,
  renameFts,
} from './layout.ts';
import { columnsReadBySql } from '../../read-set.ts';
import { applyFtsNet } from './net.ts';
import { applyFtsEvents } from './events.ts';

/** Events read into memory at a time when a batch is applied event by event. */
const EVENT_PAGE = 10_000;

/** An FTS5 search index over chosen source columns, keyed by the source key. */
export const fts5Kind: ProjectionKind<'fts5'> = {
  kind: 'fts5',
  alter: fts5Alter,
  columnsRead: (def) => def.columns,
  // The indexed columns and the key, as SQLite compiles a read of them.
  reads: (_def, layout, source) =>
    columnsReadBySql(
      source,
      layout.columns.map((c) => c.expr),
      null,
      [],
    ),
  layout(def, source) {
    const columns: TargetColumn[] = def.columns.map((name) => copiedColumn(findColumn(source, name, def.name)));
    const targetTable = def.target ?? def.name;
    checkFtsColumns(def.name, columns, targetTable, def.content === 'external');
    return { targetTable, columns, key: [...source.keyColumns], filter: null };
  },
  ownedTables: (table) => [table, keyTableOf(table)],
  sqliteTables: ftsMadeTablesOf,
  needsImages: true,
  defaultBatch: 100_000,
  keysRows: true,
  foreignUnique: 'refuse',
  uniqueTables: allTablesOf,
  rowTable: keyTableOf,
  tableColumns: ftsTableColumns,
  keyedBy: keyTableKeys,
  makesTables: true,
  // Its index entries of a key read again could only be removed with the values they were made from:
  // built from a staged copy of the source, then caught up with the journal's events (with their before-images).
  shadowBuild: () => 'replay',
  create: createFtsTables,
  build: buildFts,
  rename: renameFts,
  async apply(db, schema, p, batch) {
    try {
      // Set-based when the batch is clean; otherwise event by event, which applies it or finds the first mismatch.
      const net = applyFtsNet(db, schema, p, batch.relation());
      if (net !== undefined) return { applied: net.applied };
      let applied = 0;
      for (const events of batch.pages(EVENT_PAGE)) {
        const r = applyFtsEvents(db, schema, p, events, (e) => batch.writes(e));
        applied += r.applied;
        if (r.mismatch !== undefined) return { applied, mismatch: r.mismatch };
      }
      return { applied };
    } catch (err) {
      // A contentless index keeps no values, so nothing can check a
      // before-image against it. Where FTS5 refuses a delete of entries it
      // does not hold, as "corrupt", that is a diverged target, not a broken
      // database. (It mostly does not: docs/projections.md, "A contentless
      // fts5 index".)
      if (errorCode(err) !== 'SQLITE_CORRUPT_VTAB') throw err;
      return {
        applied: 0,
        refused: {
          reason: 'TARGET_DIVERGED',
          message: `The FTS5 index ${p.targetTable} refused to remove entries of this batch: it was changed outside sluice, or a source write was not captured.`,
        },
      };
    }
  },
  verification: {
    target(schema, p) {
      const n = ftsNames(schema, p);
      return { from: n.content, keys: n.keys, values: p.definition.content === 'none' ? [] : n.cols };
    },
    sourceValues: (p) => (p.definition.content === 'none' ? [] : p.columns.map((c) => c.expr)),
    ownCheck: ftsIndexMatches,
  },
};

/**
 * Names an FTS5 index cannot have as columns: FTS5 reserves rowid and rank,
 * and a column named like the index itself is its command column; with
 * external content, the key table beside it (`<target>_src`) holds the
 * values next to the key, stored as _k0, _k1, ...
 */
function checkFtsColumns(projection: string, columns: readonly TargetColumn[], target: string, external: boolean): void {
  for (const c of columns) {
    const lower = foldIdent(c.name);
    if (lower === 'rowid' || lower === 'rank' || lower === foldIdent(target) || (external && /^_k[0-9]+$/.test(lower))) {
      throw new InvalidInputError(
        'RESERVED_COLUMN',
        `Projection ${projection}: an fts5 index cannot have a column named ${c.name} (FTS5 reserves rowid and rank, a column named like the index ${target} is its command column, and with external content _k0, _k1, ... hold the key). Leave ${c.name} out, give the index another "target", or index a copy of the column under another name.`,
      );
    }
  }
}
