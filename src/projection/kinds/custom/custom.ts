import { customAlter } from './alter.ts';
import { quoteIdent, renameTable } from '../../../sqlite/index.ts';
import type { ProjectionKind, SnapshotRows } from '../../kind.ts';
import { findColumn } from '../../compiled.ts';
import { declaredReads } from '../../read-set.ts';
import { applyCustomEvents, initCustom } from './handler.ts';
import { customTables } from './tables.ts';

/** Events read into memory at a time for a handler. */
const EVENT_PAGE = 10_000;

/**
 * A custom handler: it gets each event, and the snapshot rows at its
 * build, with a Kysely instance on the target transaction. Its tables are
 * its own unless the definition declares them ("tables"): then sluice owns
 * their lifecycle (drop, and a rebuild built beside them and renamed in).
 */
export const customKind: ProjectionKind<'custom'> = {
  kind: 'custom',
  alter: customAlter,
  // A handler gets whole rows.
  columnsRead: () => undefined,
  // What the definition declares ("reads"); without it, every column (sluice cannot see what code reads).
  reads: (def, _layout, source) => declaredReads(source, def.reads, (name) => findColumn(source, name, def.name)),
  layout: (def) => ({ targetTable: def.target ?? def.name, columns: [], key: [], filter: null }),
  ownedTables: (table, def) => Object.values(customTables(def, table)),
  needsImages: false,
  defaultBatch: 10_000,
  keysRows: false,
  foreignUnique: 'guard',
  uniqueTables: () => [],
  rowTable: () => undefined,
  // Its tables are the handler's.
  tableColumns: () => [],
  keyedBy: () => [],
  makesTables: false,
  // Only tables it declares can be built beside the live ones.
  shadowBuild: (def) => (def.tables === undefined ? undefined : 'replay'),
  // The handler makes its tables (at ctx.tables' names) in init.
  create: () => {},
  build(db, schema, p, at) {
    // The handler's init takes every row of this build (or part) at once: the parts added, read in turn at finish.
    const parts: SnapshotRows[] = [];
    return {
      async add(rows) {
        parts.push(rows);
      },
      finish: () =>
        initCustom(
          db,
          schema,
          p,
          at,
          (function* () {
            for (const part of parts) yield* part.rows();
          })(),
        ),
    };
  },
  rename(db, schema, p, from) {
    const live = customTables(p.definition, p.targetTable);
    for (const [n, shadow] of Object.entries(customTables(p.definition, from))) {
      // A table the handler's init did not make (no rows, say) is not there to rename.
      const there = db
        .prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE`)
        .get(shadow);
      if (there !== undefined) renameTable(db, schema, shadow, live[n] as string);
    }
  },
  async apply(db, schema, p, batch) {
    let applied = 0;
    // An update of none of the columns the definition declares it reads is not passed (its state cannot be checked).
    for (const events of batch.pages(EVENT_PAGE))
      applied += await applyCustomEvents(
        db,
        schema,
        p,
        events.filter((e) => batch.writes(e)),
      );
    return { applied };
  },
};
