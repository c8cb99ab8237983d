import { customAlter } from './alter.ts';
import type { ProjectionKind, SnapshotRows } from '../../kind.ts';
import { applyCustomEvents, initCustom } from './handler.ts';

/** Events read into memory at a time for a handler. */
const EVENT_PAGE = 10_000;

/**
 * A custom handler: it gets each event, and the snapshot rows at its
 * build, with a Kysely instance on the target transaction; its own tables
 * are its own (sluice names none of them).
 */
export const customKind: ProjectionKind<'custom'> = {
  kind: 'custom',
  alter: customAlter,
  // A handler gets whole rows.
  columnsRead: () => undefined,
  layout: (def) => ({ targetTable: def.target ?? def.name, columns: [], key: [], filter: null }),
  ownedTables: () => [],
  needsImages: false,
  defaultBatch: 10_000,
  keysRows: false,
  foreignUnique: 'guard',
  uniqueTables: () => [],
  rowTable: () => undefined,
  checksColumns: false,
  boundedBuild: false,
  create: () => {},
  build(db, schema, p) {
    // The handler's init takes every row at once: the parts added, read in turn at finish.
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
          (function* () {
            for (const part of parts) yield* part.rows();
          })(),
        ),
    };
  },
  rename: () => {},
  async apply(db, schema, p, batch) {
    let applied = 0;
    for (const events of batch.pages(EVENT_PAGE)) applied += await applyCustomEvents(db, schema, p, events);
    return { applied };
  },
};
