// acknowledgements are keyed by the targets real path so two cache dbs never share a row
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';

/*
 * Each projection's acknowledgement row in the source's _sluice_consumers
 * says how far one target has read. Two targets with the same file name in
 * two folders are two consumers: the row is keyed by the target's absolute
 * real path (a symlink or a relative path to the same file is the same
 * target), never by its base name, so neither overwrites the other's seq.
 */

function acks(file: string): [string, number][] {
  const db = openDatabase(file, { readonly: true });
  try {
    return (db.prepare('SELECT name, seq FROM main._sluice_consumers ORDER BY name').raw().all() as [string, bigint][]).map(([n, s]) => [
      n,
      Number(s),
    ]);
  } finally {
    db.close();
  }
}

describe('acknowledgements', () => {
  test('two targets named cache.db in two folders, synced at different seqs, give two consumer rows with their own seqs', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file: source } = makeDb('app.db', 'CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT)');
    enable(db, ['items']);
    db.exec("INSERT INTO items (v) VALUES ('a'), ('b')");
    const seq1 = 2;
    const a = path.join(tmp, 'one', 'cache.db');
    const b = path.join(tmp, 'two', 'cache.db');
    fs.mkdirSync(path.dirname(a));
    fs.mkdirSync(path.dirname(b));
    await sync(source, a);
    db.exec("INSERT INTO items (v) VALUES ('c')");
    const seq2 = 3;
    await sync(source, b);
    const real = (f: string) => fs.realpathSync(f);
    expect(acks(source)).toEqual(
      [
        [`items@${real(a)}`, seq1],
        [`items@${real(b)}`, seq2],
      ].sort(),
    );

    // The same file by a relative path (and through a symlink, where one can be made) is the same consumer.
    db.exec("INSERT INTO items (v) VALUES ('d')");
    await sync(source, path.relative(process.cwd(), a));
    let linked = true;
    try {
      fs.symlinkSync(path.dirname(b), path.join(tmp, 'link'));
    } catch {
      linked = false; // Windows without the symlink privilege
    }
    if (linked) await sync(source, path.join(tmp, 'link', 'cache.db'));
    expect(acks(source)).toEqual(
      [
        [`items@${real(a)}`, 4],
        [`items@${real(b)}`, linked ? 4 : seq2],
      ].sort(),
    );
  });
});
