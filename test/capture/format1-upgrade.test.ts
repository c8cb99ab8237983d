// a source and target made by format 1 upgrade in place
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, ROOT } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { status, enable, FORMAT_VERSION } from '../../src/capture/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { verify } from '../../src/apply/check/index.ts';
import { pythonExec, journalEvents } from '../support/journal.ts';
import { tableCells } from '../apply/support/target.ts';

/*
 * fixtures/format1 holds a source and a target written by the sluice before
 * capture format 2 (see its README). Today's sluice reads the source as
 * outdated (its tables unarmed, CAPTURE_OUTDATED) without writing to it,
 * and the first enable or sync upgrades it in place: same source id, the
 * new triggers, one generation bump; the target's old cursors rebuild once.
 */

const FIXTURE = path.join(ROOT, 'fixtures', 'format1');

function copyFixture(tmp: string): { source: string; target: string } {
  const source = path.join(tmp, 'source.db');
  const target = path.join(tmp, 'target.db');
  fs.copyFileSync(path.join(FIXTURE, 'source.sqlite'), source);
  fs.copyFileSync(path.join(FIXTURE, 'target.sqlite'), target);
  return { source, target };
}

test('a format 1 source reads as outdated, and status writes nothing to it', ({ tmp }) => {
  const { source } = copyFixture(tmp);
  const bytes = fs.readFileSync(source);
  const db = openDatabase(source, { readonly: true });
  try {
    const s = status(db);
    expect(s.tables.map((t) => [t.name, t.armed, t.reason])).toEqual([
      ['notes', false, 'CAPTURE_OUTDATED'],
      ['users', false, 'CAPTURE_OUTDATED'],
    ]);
  } finally {
    db.close();
  }
  expect(fs.readFileSync(source).equals(bytes)).toBe(true);
});

test('sync upgrades a format 1 source in place, rebuilds the old target once, and then captures a key REPLACE from Python exactly', async ({
  tmp,
}) => {
  const { source, target } = copyFixture(tmp);
  const before = openDatabase(source, { readonly: true });
  const old = before.prepare('SELECT source_id, generation FROM _sluice_state').get() as { source_id: string; generation: bigint };
  before.close();

  const r = await sync(source, target);
  expect(r.rearmed?.tables.map((t) => [t.table, t.reason])).toEqual([
    ['notes', 'CAPTURE_OUTDATED'],
    ['users', 'CAPTURE_OUTDATED'],
  ]);
  expect(r.projections.map((p) => [p.name, p.state, p.rebuilt !== undefined])).toEqual([
    ['notes', 'active', true],
    ['notes_fts', 'active', true],
    ['users', 'active', true],
  ]);
  const db = openDatabase(source);
  try {
    const state = db.prepare('SELECT format, source_id, generation, bumped_generation FROM _sluice_state').get() as Record<string, unknown>;
    expect(state).toEqual({
      format: BigInt(FORMAT_VERSION),
      source_id: old.source_id,
      generation: old.generation + 1n,
      bumped_generation: old.generation + 1n,
    });
    expect(status(db).tables.every((t) => t.armed)).toBe(true);

    // The REPLACE format 1 journaled as a bare insert is a delete and an insert now.
    const from = Number(db.prepare('SELECT max(seq) FROM _sluice_journal').pluck().get() as bigint);
    pythonExec(source, "INSERT OR REPLACE INTO notes VALUES (2, 'second', 'replaced words')");
    expect(journalEvents(db, { sinceSeq: from }).map((e) => [e.table, e.op])).toEqual([
      ['notes', 'delete'],
      ['notes', 'insert'],
    ]);
    const next = await sync(source, target);
    expect(next.projections.map((p) => [p.name, p.state, p.rebuilt])).toEqual([
      ['notes', 'active', undefined],
      ['notes_fts', 'active', undefined],
      ['users', 'active', undefined],
    ]);
    expect((await verify(source, target)).ok).toBe(true);
    const t = openDatabase(target, { readonly: true });
    try {
      expect(tableCells(t, 'main', 'notes')).toEqual(tableCells(db, 'main', 'notes'));
      expect(t.prepare("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'replaced'").pluck().get()).toBe(1n);
      expect(t.prepare("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'gamma'").pluck().get()).toBe(0n);
    } finally {
      t.close();
    }
  } finally {
    db.close();
  }
});

test('enable upgrades a format 1 source with the same tables, keeping its journal and source id', ({ tmp }) => {
  const { source } = copyFixture(tmp);
  const db = openDatabase(source);
  try {
    const events = db.prepare('SELECT count(*) FROM _sluice_journal').pluck().get();
    const r = enable(db, ['notes', 'users']);
    expect(r.created).toBe(false);
    expect([...r.rearmed].sort()).toEqual(['notes', 'users']);
    expect(db.prepare('SELECT count(*) FROM _sluice_journal').pluck().get()).toBe(events);
    expect(db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = '_sluice_mark'").pluck().get()).toBe(1n);
    expect(status(db).tables.every((t) => t.armed)).toBe(true);
  } finally {
    db.close();
  }
});
