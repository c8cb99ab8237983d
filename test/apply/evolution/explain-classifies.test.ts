// explain classifies each change to a projection and writes nothing
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { test, expect, describe } from '../../support/fixtures.ts';
import { explainAlter } from '../../../src/apply/evolution/index.ts';
import { readProjections } from '../../../src/apply/target/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { alter } from '../../../src/capture/index.ts';
import { byName, countingHandler, expectNoWrite, projections, run, syncedPair } from '../support/explain.ts';

/*
 * 003's LC-1 transitions, as explain reports them: each change to a
 * projection of each kind is Compatible (with a proof of every state part),
 * Rebuildable or Rejected, and explain writes nothing to either file.
 */

/** The fingerprint of each projection the target stores (read with write access: closed last, it leaves no -wal or -shm). */
function stored(tgt: string): Record<string, string> {
  const db = openDatabase(tgt);
  try {
    return Object.fromEntries(readProjections(db, 'main').map((r) => [r.name, r.fingerprint]));
  } finally {
    db.close();
  }
}

describe('explain', () => {
  test('test_explain_alter_classifies_compatible_without_mutation: explain classifies a compatible change of each kind without mutation', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    run(tgt, 'CREATE INDEX cheap_label ON cheap (label)');
    const fingerprints = stored(tgt);
    const [, cheap, search, log] = projections();
    const r = await expectNoWrite(tmp, () =>
      explainAlter(src, tgt, {
        projections: [
          // The mirror's default target spelled out: written differently, the same projection.
          { name: 'items', source: 'items', kind: 'mirror', target: 'items' },
          // Loosened for no row that exists: every qty is below 100.
          { ...(cheap as object), filter: 'qty < 1000' } as never,
          search as never,
          log as never,
        ],
      }),
    );
    expect(r.ok).toBe(true);
    const p = byName(r.projections);
    expect(Object.keys(p).sort()).toEqual(['cheap', 'items', 'log', 'search']);
    for (const x of r.projections) {
      expect(x.classification, x.name).toBe('Compatible');
      expect(x.affected, x.name).toEqual([]);
      // What the next sync does: go on from the cursor.
      expect(x.sync, x.name).toEqual({ does: 'continue' });
    }
    expect(p.items?.reason).toBe('ALTER_UNCHANGED');
    expect(p.items?.changes[0]?.change).toEqual({ kind: 'unchanged', restated: true });
    expect(p.items?.inputs.old?.fingerprint).toBe(fingerprints.items);
    expect(p.items?.inputs.new.fingerprint).not.toBe(fingerprints.items);
    expect(p.cheap?.reason).toBe('ALTER_FILTER_CHANGED');
    expect(p.cheap?.changes.map((c) => [c.change.kind, c.reason])).toEqual([
      ['filter', 'ALTER_FILTER_CHANGED'],
      ['target-index', 'ALTER_TARGET_INDEX'],
    ]);
    expect(p.cheap?.changes[0]?.proof.rows?.why).toContain('0 rows differ');
    expect(p.search?.reason).toBe('ALTER_UNCHANGED');
    expect(p.search?.inputs.new.fingerprint).toBe(fingerprints.search);
    expect(p.log?.reason).toBe('ALTER_UNCHANGED');
    // Every state part of every change is proved.
    for (const x of r.projections)
      for (const c of x.changes)
        for (const part of ['rows', 'cursor', 'keys', 'auxiliary'] as const) expect(c.proof[part]?.holds, `${x.name} ${part}`).toBe(true);
  });

  test('test_explain_alter_classifies_rebuildable_without_mutation: explain classifies a rebuildable change of each kind without mutation', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    const [items, cheap, search] = projections();
    const r = await expectNoWrite(tmp, () =>
      explainAlter(src, tgt, {
        projections: [
          items as never,
          { ...(cheap as object), filter: 'qty < 10' } as never,
          { ...(search as object), tokenize: 'porter' } as never,
          { name: 'doubled', source: 'items', kind: 'map', columns: { id: 'id', twice: { expr: 'qty * 2' } } },
        ],
      }),
    );
    expect(r.ok).toBe(false);
    const p = byName(r.projections);
    expect(p.items?.classification).toBe('Compatible');
    expect([p.cheap?.classification, p.cheap?.reason, p.cheap?.affected]).toEqual(['Rebuildable', 'ALTER_FILTER_CHANGED', ['rows']]);
    expect(p.cheap?.changes[0]?.proof.rows?.why).toContain('disagree on 2 source rows');
    // The rebuild's cost: the rows the new definition selects, and the live projection's pages, twice (WAL, then the file).
    expect(p.cheap?.cost.rows).toBe(2);
    expect(p.cheap?.cost.liveRows).toBe(4);
    expect(p.cheap?.cost.liveBytes).toBeGreaterThan(0);
    expect(p.cheap?.cost.neededBytes).toBe(2 * (p.cheap?.cost.liveBytes ?? 0));
    expect(p.cheap?.cost.freeBytes).toBeGreaterThan(0);
    expect([p.search?.classification, p.search?.reason, p.search?.affected]).toEqual([
      'Rebuildable',
      'ALTER_FTS_OPTIONS_CHANGED',
      ['auxiliary'],
    ]);
    expect(p.search?.cost.rows).toBe(4);
    expect([p.doubled?.classification, p.doubled?.reason]).toEqual(['Rebuildable', 'ALTER_PROJECTION_ADDED']);
    expect(p.doubled?.inputs.old).toBeNull();
  });

  test('test_explain_alter_rejects_without_mutation: explain classifies a rejected change of each kind without mutation', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    const [, cheap, search] = projections();
    const r = await expectNoWrite(tmp, () =>
      explainAlter(src, tgt, {
        projections: [
          // A mirror of a table the source does not have.
          { name: 'items', source: 'item', kind: 'mirror' },
          { ...(cheap as object), columns: { id: 'id', label: 'title' } } as never,
          { ...(search as object), columns: ['name', 'colour'] } as never,
          // A custom projection whose handler changed needs a rebuild, and its handler declares no tables a shadow could replace.
          { name: 'log', source: 'items', kind: 'custom', handler: countingHandler('2') },
          { name: 'keyless', source: 'items', kind: 'map', columns: { label: 'name' } },
        ],
      }),
    );
    expect(r.ok).toBe(false);
    const p = byName(r.projections);
    for (const x of r.projections) expect(x.classification, x.name).toBe('Rejected');
    expect(p.items?.reason).toBe('ALTER_SOURCE_TABLE_MISSING');
    // A given definition that does not compile refuses the whole sync (with the compile error's code), before anything is written.
    expect(p.items?.sync).toEqual({ does: 'refuse', code: 'UNKNOWN_SOURCE_TABLE', run: true });
    expect(p.cheap?.reason).toBe('ALTER_UNKNOWN_COLUMN');
    expect(p.cheap?.inputs.new.fingerprint).toBeNull();
    expect(p.cheap?.repair).toMatch(/^ALTER_UNKNOWN_COLUMN: fix the column names in the definition of cheap/);
    expect(p.search?.reason).toBe('ALTER_UNKNOWN_COLUMN');
    expect(p.log?.reason).toBe('ALTER_CUSTOM_NO_SHADOW');
    expect(p.log?.sync).toEqual({ does: 'refuse', code: 'ALTER_CUSTOM_NO_SHADOW', run: false });
    expect(p.log?.changes[0]?.change).toMatchObject({ kind: 'definition', code: 'ALTER_HANDLER_CHANGED' });
    expect(p.log?.affected).toEqual(['auxiliary']);
    expect(p.log?.repair).toMatch(/sluice reinit \S+ \S+ log$/);
    expect(p.keyless?.reason).toBe('ALTER_KEY_MISSING');
  });

  test('a projection given a new name is a new projection, as sync takes it: a first build, or refused where its target is taken', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    const r = await expectNoWrite(tmp, () =>
      explainAlter(src, tgt, {
        projections: [
          { name: 'log2', source: 'items', kind: 'custom', handler: countingHandler() },
          { name: 'items_copy', source: 'items', kind: 'mirror' },
        ],
      }),
    );
    const [log, copy] = r.projections;
    expect([log?.classification, log?.reason, log?.inputs.old]).toEqual(['Rebuildable', 'ALTER_PROJECTION_ADDED', null]);
    expect(log?.sync).toEqual({ does: 'rebuild', reason: null, swapped: false });
    // Its default target is items, which the stored mirror items writes.
    expect([copy?.classification, copy?.reason]).toEqual(['Rejected', 'ALTER_DEFINITION_INVALID']);
    expect(copy?.sync).toEqual({ does: 'refuse', code: 'TARGET_COLLISION', run: true });
  });
});

describe('a source DDL change since the stored shape is classified too', () => {
  const given = () => projections();

  test('a column added: a mirror must carry it, and no kind can keep its cursor', async ({ tmp }) => {
    const { src, tgt } = await syncedPair(tmp);
    run(src, "ALTER TABLE items ADD COLUMN colour TEXT DEFAULT 'red'");
    const p = byName((await expectNoWrite(tmp, () => explainAlter(src, tgt, { projections: given() }))).projections);
    expect([p.items?.classification, p.items?.reason, p.items?.affected]).toEqual([
      'Rebuildable',
      'ALTER_SOURCE_COLUMN_ADDED',
      ['rows', 'cursor'],
    ]);
    // The map and the fts5 index do not read it: rows, keys and auxiliary state are proved; the cursor is not.
    for (const name of ['cheap', 'search']) {
      expect([p[name]?.classification, p[name]?.reason, p[name]?.affected], name).toEqual([
        'Rebuildable',
        'ALTER_SOURCE_COLUMN_ADDED',
        ['cursor'],
      ]);
      const added = p[name]?.changes[0];
      expect(added?.change).toEqual({ kind: 'source-column', change: 'added', column: 'colour', used: false });
      expect([added?.proof.rows?.holds, added?.proof.keys?.holds, added?.proof.auxiliary?.holds, added?.proof.cursor?.holds]).toEqual([
        true,
        true,
        true,
        false,
      ]);
    }
    expect([p.log?.classification, p.log?.reason]).toEqual(['Rejected', 'ALTER_CUSTOM_NO_SHADOW']);
    expect(p.items?.inputs.old?.sourceShape?.columns.map((c) => c.name)).toEqual(['id', 'name', 'qty']);
    expect(p.items?.inputs.new.sourceShape?.columns.map((c) => c.name)).toEqual(['id', 'name', 'qty', 'colour']);
  });

  test('a column renamed by sluice alter is followed: Rejected where a definition names it, Rebuildable where it still compiles (a mirror) or is not read', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    const db = openDatabase(src);
    try {
      alter(db, 'ALTER TABLE items RENAME COLUMN qty TO amount');
    } finally {
      db.close();
    }
    const p = byName((await expectNoWrite(tmp, () => explainAlter(src, tgt, { projections: given() }))).projections);
    expect([p.items?.classification, p.items?.reason]).toEqual(['Rebuildable', 'ALTER_SOURCE_COLUMN_RENAMED']);
    expect(p.items?.changes[0]?.change).toEqual({ kind: 'source-column', change: 'renamed', column: 'qty', to: 'amount', used: true });
    // The map's filter reads qty.
    expect([p.cheap?.classification, p.cheap?.reason]).toEqual(['Rejected', 'ALTER_SOURCE_COLUMN_RENAMED']);
    expect(p.cheap?.repair).toContain('--projection');
    // Not read, and the alter recorded explains the cursor: it goes on.
    expect([p.search?.classification, p.search?.reason, p.search?.affected]).toEqual(['Compatible', 'ALTER_SOURCE_COLUMN_UNUSED', []]);
  });

  test('a column renamed by another program is not followed (no rename was recorded, and none is guessed from its position and type): a dropped column and an added one', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    run(src, 'ALTER TABLE items RENAME COLUMN qty TO amount');
    const p = byName((await expectNoWrite(tmp, () => explainAlter(src, tgt, { projections: given() }))).projections);
    expect([p.items?.classification, p.items?.reason]).toEqual(['Rebuildable', 'ALTER_SOURCE_COLUMN_DROPPED']);
    const columns = (x: typeof p.items) => x?.changes.filter((c) => c.change.kind === 'source-column').map((c) => c.change);
    expect(columns(p.items)).toEqual([
      { kind: 'source-column', change: 'dropped', column: 'qty', used: true },
      { kind: 'source-column', change: 'added', column: 'amount', used: true },
    ]);
    expect([p.cheap?.classification, p.cheap?.reason]).toEqual(['Rejected', 'ALTER_SOURCE_COLUMN_DROPPED']);
    expect(p.cheap?.repair).toContain('--projection');
    expect([p.search?.classification, p.search?.reason, p.search?.affected]).toEqual([
      'Rebuildable',
      'ALTER_SOURCE_COLUMN_UNUSED',
      ['cursor'],
    ]);
  });

  test('a column dropped: Rejected where a definition names it, Rebuildable where it still compiles (a mirror) or is not read', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    run(
      src,
      `CREATE TABLE items_new (id INTEGER PRIMARY KEY, name TEXT);
       INSERT INTO items_new SELECT id, name FROM items;
       DROP TABLE items;
       ALTER TABLE items_new RENAME TO items;`,
    );
    const p = byName((await expectNoWrite(tmp, () => explainAlter(src, tgt, { projections: given() }))).projections);
    expect([p.items?.classification, p.items?.reason]).toEqual(['Rebuildable', 'ALTER_SOURCE_COLUMN_DROPPED']);
    expect([p.cheap?.classification, p.cheap?.reason]).toEqual(['Rejected', 'ALTER_SOURCE_COLUMN_DROPPED']);
    expect(p.cheap?.changes.map((c) => c.change.kind)).not.toContain('invalid');
    expect([p.search?.classification, p.search?.reason]).toEqual(['Rebuildable', 'ALTER_SOURCE_COLUMN_UNUSED']);
    // A handler reads every column: its rows need a rebuild, and it has no tables a shadow could replace.
    expect([p.log?.classification, p.log?.reason]).toEqual(['Rejected', 'ALTER_CUSTOM_NO_SHADOW']);
  });
});

describe('explain beside a live writer', () => {
  test('in WAL mode, with the app holding the source open, explain leaves both databases and their WALs byte for byte', async ({ tmp }) => {
    const { src, tgt } = await syncedPair(tmp);
    const writer = openDatabase(src, { wal: true });
    const reader = openDatabase(tgt, { wal: true });
    try {
      writer.exec("INSERT INTO items (id, name, qty) VALUES (9, 'fig roll', 2)");
      const sha = (f: string) => (fs.existsSync(f) ? createHash('sha256').update(fs.readFileSync(f)).digest('hex') : null);
      const files = [src, `${src}-wal`, tgt, `${tgt}-wal`];
      const before = files.map(sha);
      expect(before[1]).not.toBeNull();
      const r = await explainAlter(src, tgt, { projections: projections() });
      expect(r.sourceSeq).toBe(1);
      // The insert is after every cursor: nothing changed in the definitions, so each continues.
      expect(r.projections.map((p) => p.classification)).toEqual(['Compatible', 'Compatible', 'Compatible', 'Compatible']);
      expect(files.map(sha)).toEqual(before);
    } finally {
      writer.close();
      reader.close();
    }
  });
});
