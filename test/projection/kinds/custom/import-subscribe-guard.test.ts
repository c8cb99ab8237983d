// the guard of a custom handler's statements holds under sluice import and sluice subscribe as under sync: sluice's own tables, another projection's table, a database attached, the segment being imported
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { sql } from 'kysely';
import { test, expect, describe, runSqliteCli } from '../../../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, sha256, write } from '../../../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf } from '../../../broker/support/broker.ts';
import { enable } from '../../../../src/capture/index.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { importFile, type ImportReport } from '../../../../src/export/index.ts';
import { subscribe } from '../../../../src/broker/index.ts';
import type { ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { handlerWith, type Write } from '../../support/seen-handler.ts';

/*
 * Under sync every statement a handler runs through ctx.db is checked before
 * it runs (source-guard.ts): one that would write the source, one of
 * sluice's own tables (the projections' cursors and definitions), another
 * projection's table, or ATTACH/DETACH, is refused and its batch rolled
 * back. Under import and subscribe the check was off (it ran only when the
 * source was the connection's main database), so a handler wrote whatever
 * it named: a stored fingerprint forged, the target's info table dropped, a
 * mirror's rows deleted, the source's journal emptied through an ATTACH of
 * its file, the segment being imported written. There is no source on that
 * connection (the target is main), so what is guarded is what the handler
 * could damage there: sluice's own tables, the other projections' tables,
 * the databases on the connection (no ATTACH, no DETACH, no write to the
 * segment sluice attached). Each is refused with sync's code, the
 * projection fails as under sync (recorded, the others go on), and nothing
 * of the statement is left: not in the target, not in the source, not in
 * the segment.
 */

const nats = natsForFile();

type Feed = 'import' | 'import --format segment' | 'subscribe';

let dir: string;
let src: string;
let sourceId: string;
let jsonl: string;
let segments: string;

beforeAll(async () => {
  dir = makeDir();
  src = path.join(dir, 'app.db');
  runSqliteCli(
    src,
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'first'); CREATE TABLE tags (id INTEGER PRIMARY KEY, t TEXT); INSERT INTO tags VALUES (1, 'x');",
  );
  const db = openDatabase(src);
  try {
    enable(db, ['notes', 'tags']);
  } finally {
    db.close();
  }
  sourceId = sourceIdOf(src);
  jsonl = path.join(dir, 'changes.jsonl');
  segments = path.join(dir, 'segments');
  // A snapshot, then a batch with note 2 (the handler's write runs on it) and a change of the mirror's row.
  const exports = async () => {
    for (const args of [
      ['export', src, '--out', jsonl],
      ['export', src, '--out', segments, '--format', 'segment'],
    ]) {
      const r = await runCliAsync(args);
      expect(r.status, r.stderr).toBe(0);
    }
    await publishOnce(src, nats.server().url);
  };
  await exports();
  write(src, "INSERT INTO notes VALUES (2, 'second'); UPDATE tags SET t = 'y'");
  await exports();
}, 60_000);

afterAll(() => removeDir(dir));

/** The copy of the segments a feed of `target` imports (a handler that wrote the segment it was given writes no other feed's). */
const segmentsOf = (target: string) => `${target}.segments`;

function feed(how: Feed, target: string, projections: readonly ProjectionDefinitionInput[]): Promise<ImportReport> {
  if (how === 'subscribe') return subscribe(target, nats.server().url, { sourceId, projections });
  if (how === 'import') return importFile(target, jsonl, { projections });
  fs.cpSync(segments, segmentsOf(target), { recursive: true });
  return importFile(target, segmentsOf(target), { projections });
}

/** The bytes of each segment `target`'s feed imports. */
function segmentBytes(target: string): string[] {
  const folder = segmentsOf(target);
  return fs.existsSync(folder) ? fs.readdirSync(folder).map((f) => sha256(path.join(folder, f))) : [];
}

function definitions(write: Write): ProjectionDefinitionInput[] {
  return [
    { name: 'seen', source: 'notes', kind: 'custom', handler: handlerWith(write) },
    { name: 'tags', source: 'tags', kind: 'mirror' },
  ];
}

/** What of the target a refused statement must leave as sluice made it: its own tables (but the handler's projection's row, which records the failure), the mirror, the handler's table. */
function targetState(file: string): unknown {
  const t = openDatabase(file, { readonly: true });
  try {
    return {
      info: t.prepare('SELECT * FROM _sluice_target').all().length,
      tags: t.prepare("SELECT seq, cursor, fingerprint, state, definition FROM _sluice_projections WHERE name = 'tags'").get(),
      seen: t.prepare("SELECT seq, cursor, fingerprint, definition FROM _sluice_projections WHERE name = 'seen'").get(),
      mirror: t.prepare('SELECT * FROM tags ORDER BY id').all(),
      handled: t.prepare('SELECT id FROM seen ORDER BY id').pluck().all(),
    };
  } finally {
    t.close();
  }
}

function journalRows(): unknown {
  const db = openDatabase(src, { readonly: true });
  try {
    return db.prepare('SELECT count(*) FROM _sluice_journal').pluck().get();
  } finally {
    db.close();
  }
}

/** What a handler may not do under import and subscribe, and the code that refuses it. */
const WRITES: Record<string, { readonly code: string; readonly write: (source: string) => Write; readonly feeds?: readonly Feed[] }> = {
  "an UPDATE of sluice's own projection rows (a raw statement: its unqualified name is the target's)": {
    code: 'CUSTOM_WROTE_SLUICE',
    write: () => (db) => sql`UPDATE _sluice_projections SET fingerprint = 'forged' WHERE name = 'tags'`.execute(db),
  },
  "a DROP of the target's info table": {
    code: 'CUSTOM_WROTE_SLUICE',
    write: () => (db) => sql`DROP TABLE _sluice_target`.execute(db),
  },
  "the query builder's delete from another projection's table (the mirror's)": {
    code: 'CUSTOM_WROTE_PROJECTION',
    write: () => (db) => db.deleteFrom('tags').execute(),
  },
  "the source's file attached, and its journal emptied": {
    code: 'CUSTOM_WROTE_SLUICE',
    write: (source) => async (db) => {
      await sql`ATTACH ${source} AS s2`.execute(db);
      await sql`DELETE FROM s2._sluice_journal`.execute(db);
    },
  },
  'a write to the segment being imported (sluice attached it to read the batch)': {
    code: 'CUSTOM_WROTE_SLUICE',
    write: () => (db) => sql`DELETE FROM _sluice_segment.segment_batches`.execute(db),
    feeds: ['import --format segment'],
  },
};

const FEEDS: readonly Feed[] = ['import', 'import --format segment', 'subscribe'];

describe('a custom handler under import and subscribe', () => {
  for (const how of FEEDS) {
    for (const [what, { code, write, feeds }] of Object.entries(WRITES)) {
      if (feeds !== undefined && !feeds.includes(how)) continue;
      test(`${how}: ${what} is refused with ${code} before it runs; the others go on, nothing of it is kept`, async () => {
        const name = `${how.replace(/\W+/g, '-')}-${Object.keys(WRITES).indexOf(what)}`;
        // The same feed with a handler that writes only its own table: what the target must look like, but for the refused batch.
        const control = path.join(dir, `${name}-control.db`);
        const fine = await feed(
          how,
          control,
          definitions(async () => undefined),
        );
        expect(fine.projections.map((p) => p.error)).toEqual([undefined, undefined]);
        const tgt = path.join(dir, `${name}.db`);
        const journal = journalRows();

        const r = await feed(how, tgt, definitions(write(src)));
        const seen = r.projections.find((p) => p.name === 'seen');
        expect(seen?.error?.code, JSON.stringify(seen)).toBe(code);
        expect(seen?.error?.message).toContain('The handler of custom projection seen ran a statement');
        expect(r.projections.find((p) => p.name === 'tags')?.error).toBeUndefined();
        // The handler's batch is not kept (its projection stays at the snapshot), the mirror took the batch, sluice's tables are sluice's.
        const control_ = targetState(control) as { seen: { seq: bigint } };
        const got = targetState(tgt) as { seen: { seq: bigint }; handled: unknown[] };
        expect({ ...got, seen: undefined, handled: undefined }).toEqual({ ...control_, seen: undefined, handled: undefined });
        expect(got.handled).toEqual([1n]);
        expect(got.seen.seq).toBeLessThan(control_.seen.seq);
        expect(journalRows()).toEqual(journal);
        if (how === 'import --format segment') expect(segmentBytes(tgt)).toEqual(segmentBytes(control));
      });
    }
  }

  test("a handler's writes of its own tables, TEMP, and reads of sluice's tables still run under import and subscribe", async () => {
    for (const how of FEEDS) {
      const tgt = path.join(dir, `reads-${how.replace(/\W+/g, '-')}.db`);
      const r = await feed(
        how,
        tgt,
        definitions(async (db) => {
          await sql`CREATE TEMP TABLE IF NOT EXISTS scratch (n INTEGER)`.execute(db);
          const n = await sql<{ n: bigint }>`SELECT count(*) AS n FROM _sluice_projections`.execute(db);
          await sql`INSERT INTO temp.scratch VALUES (${n.rows[0]?.n})`.execute(db);
          await sql`INSERT OR REPLACE INTO seen VALUES (100)`.execute(db);
        }),
      );
      expect(
        r.projections.map((p) => p.error),
        how,
      ).toEqual([undefined, undefined]);
      const t = openDatabase(tgt, { readonly: true });
      try {
        expect(t.prepare('SELECT id FROM seen ORDER BY id').pluck().all(), how).toEqual([1n, 2n, 100n]);
      } finally {
        t.close();
      }
    }
  });
});
