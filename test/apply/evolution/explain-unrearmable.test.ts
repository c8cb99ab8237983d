// explain predicts what sync does with a table the next sync cannot re-arm by itself: it suspends its projections
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, runCli, runSqliteCli, test } from '../../support/fixtures.ts';

/*
 * A table captured with a column left out (--exclude secret), whose column
 * another program then renames: capture holds it unarmed (SCHEMA_CHANGED),
 * and the re-arm the next sync runs on opening the source leaves it so (a
 * rename cannot be told from a drop and an add, so enable must be told
 * which columns to leave out now). That sync suspends every projection of
 * the table (TABLE_UNARMED), which only the source's fix clears. explain
 * said the next sync rebuilds them (CAPTURE_REARMED), from a list of
 * unarmed reasons it took for ones a re-arm repairs, where sync asks
 * capture whether its re-arm arms the table as it is now. Nor did it ask
 * whether a table can be built from for a cursor a snapshot repairs (an
 * older copy of the source written back over it): sync suspends the
 * projection then too, rather than rebuild it, where explain said it
 * rebuilds it.
 */

const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, secret TEXT);
INSERT INTO items VALUES (1, 'apple pie', 'a'), (2, 'banana bread', 'b');
`;

function json(args: string[], code: number): Record<string, unknown> {
  const r = runCli(args);
  expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(code);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** A source (SCHEMA, and `more`) with items captured leaving secret out (and `alsoEnable` captured), synced to a target with "*" and the map labels of items. */
function syncedApp(tmp: string, more = '', alsoEnable: string[] = []): { src: string; tgt: string } {
  const src = path.join(tmp, 'app.db');
  const tgt = path.join(tmp, 'cache.db');
  const map = path.join(tmp, 'labels.json');
  runSqliteCli(src, `${SCHEMA}${more}`);
  fs.writeFileSync(map, JSON.stringify({ name: 'labels', source: 'items', kind: 'map', columns: { id: 'id', label: 'name' } }));
  const ok = (args: string[]) => {
    const r = runCli(args);
    expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
  };
  ok(['enable', src, 'items', '--exclude', 'secret']);
  for (const t of alsoEnable) ok(['enable', src, t]);
  expect(runCli(['sync', src, tgt, '--projection', '*', '--projection', map]).status).toBe(0);
  return { src, tgt };
}

interface Synced {
  readonly name: string;
  readonly state: string;
  readonly reason?: string;
  readonly rebuilt?: string;
  readonly swapped?: boolean;
}

/** explain (exit 3: something needs action), then the sync it predicts (exit `syncCode`): each projection's classification and predicted step, and what the sync did. */
function explainThenSync(src: string, tgt: string, syncCode: number): { predicted: Record<string, unknown>; synced: Synced[] } {
  const explained = json(['explain', src, tgt, '--json'], 3) as { projections: { name: string; classification: string; sync: unknown }[] };
  const predicted = Object.fromEntries(explained.projections.map((p) => [p.name, [p.classification, p.sync]]));
  return { predicted, synced: (json(['sync', src, tgt, '--json'], syncCode) as { projections: Synced[] }).projections };
}

describe('explain and a table the next sync cannot re-arm', () => {
  test('an excluded column renamed by another program: explain says the next sync suspends the mirror and the map (TABLE_UNARMED), as it then does', ({
    tmp,
  }) => {
    const { src, tgt } = syncedApp(tmp);
    runSqliteCli(src, "ALTER TABLE items RENAME COLUMN secret TO hidden; INSERT INTO items VALUES (3, 'cherry tart', 'c');");

    const { predicted, synced } = explainThenSync(src, tgt, 3);
    const did = Object.fromEntries(synced.map((p) => [p.name, [p.state, p.reason, p.rebuilt]]));
    // What sync does: the re-arm leaves the table unarmed, and both projections are suspended.
    expect(did).toEqual({ items: ['suspended', 'TABLE_UNARMED', undefined], labels: ['suspended', 'TABLE_UNARMED', undefined] });
    // What explain said it would do.
    expect(predicted).toEqual({
      items: ['Rejected', { does: 'suspend', reason: 'TABLE_UNARMED' }],
      labels: ['Rejected', { does: 'suspend', reason: 'TABLE_UNARMED' }],
    });
  });

  test('an excluded column dropped by another program: the next sync re-arms the table and rebuilds both (CAPTURE_REARMED), as explain says', ({
    tmp,
  }) => {
    const { src, tgt } = syncedApp(tmp);
    runSqliteCli(src, "ALTER TABLE items DROP COLUMN secret; INSERT INTO items VALUES (3, 'cherry tart');");

    const { predicted, synced } = explainThenSync(src, tgt, 0);
    const did = Object.fromEntries(synced.map((p) => [p.name, [p.state, p.rebuilt, p.swapped === true]]));
    expect(did).toEqual({ items: ['active', 'CAPTURE_REARMED', true], labels: ['active', 'CAPTURE_REARMED', true] });
    expect(predicted).toEqual({
      items: ['Rebuildable', { does: 'rebuild', reason: 'CAPTURE_REARMED', swapped: true }],
      labels: ['Rebuildable', { does: 'rebuild', reason: 'CAPTURE_REARMED', swapped: true }],
    });
  });

  test('an older copy of the source written back, whose excluded column another program then renamed: explain says the next sync suspends the projections of that table (TABLE_UNARMED) and rebuilds the others (SEQ_REGRESSED), as it then does', ({
    tmp,
  }) => {
    const { src, tgt } = syncedApp(tmp, ' CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);', ['notes']);
    const copy = path.join(tmp, 'copy.db');
    runSqliteCli(src, 'PRAGMA wal_checkpoint(TRUNCATE);');
    fs.copyFileSync(src, copy);
    runSqliteCli(src, "INSERT INTO notes VALUES (1, 'first'), (2, 'second'); INSERT INTO items VALUES (3, 'cherry tart', 'c');");
    expect(runCli(['sync', src, tgt]).status).toBe(0);
    // The copy written back (its -wal and -shm gone with it), then the column renamed in it.
    for (const f of [src, `${src}-wal`, `${src}-shm`]) fs.rmSync(f, { force: true });
    fs.copyFileSync(copy, src);
    runSqliteCli(src, 'ALTER TABLE items RENAME COLUMN secret TO hidden;');

    const { predicted, synced } = explainThenSync(src, tgt, 3);
    const did = Object.fromEntries(synced.map((p) => [p.name, [p.state, p.reason, p.rebuilt]]));
    expect(did).toEqual({
      items: ['suspended', 'TABLE_UNARMED', undefined],
      labels: ['suspended', 'TABLE_UNARMED', undefined],
      notes: ['active', undefined, 'SEQ_REGRESSED'],
    });
    expect(predicted).toEqual({
      items: ['Rejected', { does: 'suspend', reason: 'TABLE_UNARMED' }],
      labels: ['Rejected', { does: 'suspend', reason: 'TABLE_UNARMED' }],
      notes: ['Rebuildable', { does: 'rebuild', reason: 'SEQ_REGRESSED', swapped: true }],
    });
  });

  test('a column added to a table that leaves one out: the repair explain prints is the enable that re-arms it leaving both out (as sync says), not a switch to images mode', ({
    tmp,
  }) => {
    const { src, tgt } = syncedApp(tmp);
    runSqliteCli(src, 'ALTER TABLE items ADD COLUMN email TEXT;');
    const explained = json(['explain', src, tgt, '--json'], 3) as { projections: { name: string; repair?: string }[] };
    const synced = runCli(['sync', src, tgt]);
    expect(synced.status).toBe(3);
    for (const p of explained.projections) {
      expect(p.repair, p.name).toContain('--exclude secret,email');
      expect(p.repair, p.name).toContain('--include email');
      expect(p.repair, p.name).not.toContain('--mode images');
    }
    // What sync says of it, and the text output's repair line.
    expect(synced.stdout + synced.stderr).toContain('--exclude secret,email');
    const text = runCli(['explain', src, tgt]).stdout;
    expect(text).not.toContain('--mode images');
  });
});
