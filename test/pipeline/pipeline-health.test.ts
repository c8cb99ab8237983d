// the health of a pipeline names everything declared that is missing behind or undeclared with its fix
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { alter } from '../../src/capture/index.ts';
import { convergeOnce, loadPipeline, pipelineHealth, readPipelineQuietly } from '../../src/pipeline/index.ts';
import { pipelineHealthOutput } from '../../src/cli/index.ts';

/*
 * pipelineHealth judges what exists against the file: each declared target
 * by health() with the file's lag bounds, a declared target or projection
 * that is not there, and what the file does not account for (a projection a
 * target holds, a captured table, an acknowledgement of a target it no
 * longer declares). Every problem names the object and the fix. It is what
 * `health --config --json` prints and what `run` serves at /healthz.
 */

const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER NOT NULL);
INSERT INTO items VALUES (1, 'apple pie', 1), (2, 'banana bread', 5);
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
`;

const CHEAP = `{name: cheap, source: items, kind: map, columns: {id: id, label: name}, filter: "qty < 100"}`;
const LABELS = `{name: labels, source: items, kind: map, columns: {id: id, label: name}}`;

function write(dir: string, text: string): string {
  const file = path.join(dir, 'sluice.yml');
  fs.writeFileSync(file, text);
  return file;
}

describe('the health of a pipeline', () => {
  test('is ok when everything declared is there, active and within its bounds', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = write(
      tmp,
      `sources:\n  - path: app.db\n    capture: [items, notes]\n    targets:\n      - path: cache.db\n        projections: ["*", ${CHEAP}]\n        health: {maxLagEvents: 10, maxLagMs: 60000}\n`,
    );
    const pipeline = await loadPipeline(file);
    await convergeOnce(pipeline);
    const h = pipelineHealth(pipeline, { now: 1_900_000_000_000 });
    expect(h.problems).toEqual([]);
    expect(h.ok).toBe(true);
    expect(h.checkedMs).toBe(1_900_000_000_000);
    expect(h.config).toBe(file);
    expect(pipelineHealthOutput.safeParse(JSON.parse(JSON.stringify(h))).success).toBe(true);
    const [t] = h.targets;
    expect(t?.exists).toBe(true);
    expect(t?.bounds).toEqual({ maxLagEvents: 10, maxLagMs: 60000 });
    expect(t?.projections.map((p) => [p.name, p.state, p.declared]).sort()).toEqual([
      ['cheap', 'active', true],
      ['items', 'active', true],
      ['notes', 'active', true],
    ]);
    const [s] = h.sources;
    expect(s?.tables.map((x) => [x.table, x.declared, x.captured, x.mode])).toEqual([
      ['items', true, true, 'images'],
      ['notes', true, true, 'images'],
    ]);
    expect(s?.acknowledgements.every((a) => a.declared)).toBe(true);
    expect(s?.acknowledgements.map((a) => a.projection).sort()).toEqual(['cheap', 'items', 'notes']);
  });

  test('names a missing target, an unbuilt or undeclared projection, undeclared capture, an undeclared acknowledgement and lag past a bound, each with its fix', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = write(
      tmp,
      `sources:\n  - path: app.db\n    capture: [items, notes]\n    targets:\n      - path: cache.db\n        projections: ["*", ${CHEAP}]\n      - path: old.db\n        projections: ["*"]\n`,
    );
    await convergeOnce(await loadPipeline(file));
    // The file now: notes no longer declared, cheap removed and labels added, old.db gone from it, a new target, a bound.
    write(
      tmp,
      `sources:\n  - path: app.db\n    capture: [items]\n    targets:\n      - path: cache.db\n        projections: ["*", ${LABELS}]\n        health: {maxLagEvents: 1, maxLagMs: 1000}\n      - path: new.db\n        projections: ["*"]\n`,
    );
    const app = openDatabase(path.join(tmp, 'app.db'));
    app.exec("INSERT INTO items VALUES (3, 'cherry tart', 10), (4, 'date loaf', 50)");
    app.close();
    const pipeline = await loadPipeline(file);
    const before = fs.readdirSync(tmp).sort();
    const h = await readPipelineQuietly(pipeline, () => pipelineHealth(pipeline, { now: Date.now() + 120_000 }));
    expect(fs.readdirSync(tmp).sort(), 'nothing is created').toEqual(before);
    expect(h.ok).toBe(false);
    expect(pipelineHealthOutput.safeParse(JSON.parse(JSON.stringify(h))).success).toBe(true);

    const newDb = h.targets.find((t) => t.path.endsWith('new.db'));
    expect(newDb?.exists).toBe(false);
    expect(newDb?.ok).toBe(false);
    expect(newDb?.problems.join('\n')).toMatch(/target .*new\.db is declared .* but does not exist: sluice run builds it/);
    expect(newDb?.projections.map((p) => [p.name, p.state, p.declared]).sort()).toEqual([
      ['items', 'missing', true],
      ['notes', 'missing', true],
    ]);

    const cache = h.targets.find((t) => t.path.endsWith('cache.db'));
    const byName = Object.fromEntries((cache?.projections ?? []).map((p) => [p.name, p]));
    expect(byName.cheap?.declared).toBe(false);
    expect(byName.cheap?.needsAction).toBe(true);
    expect(byName.cheap?.action).toMatch(/projection cheap is held by .*cache\.db but not declared.*sluice drop .*cache\.db cheap/);
    expect(byName.labels?.state).toBe('missing');
    expect(byName.labels?.action).toMatch(/projection labels is declared and not built yet: sluice run builds it/);
    expect(byName.items?.declared).toBe(true);
    expect(byName.items?.problems.join('\n')).toMatch(/a lag of 2 events is past/);
    expect(byName.items?.problems.join('\n')).toMatch(/ms is past --max-lag-ms 1000/);

    const [s] = h.sources;
    const notes = s?.tables.find((t) => t.table === 'notes');
    expect(notes).toMatchObject({ declared: false, captured: true });
    expect(notes?.problem).toMatch(/table notes of .*app\.db is captured but not declared .*sluice disable .*app\.db notes/);
    const old = s?.acknowledgements.filter((a) => a.target?.endsWith('old.db'));
    expect(old?.length).toBe(2);
    expect(old?.every((a) => !a.declared)).toBe(true);
    expect(s?.problems.join('\n')).toMatch(
      /acknowledgement items@.*old\.db .*which .*sluice\.yml does not declare.*sluice forget .*app\.db .*items@/,
    );
    // Acknowledgements never hold back pruning (docs/journal.md): the reason given is the true one.
    expect(s?.problems.join('\n')).toMatch(/: a stale acknowledgement \(it never holds back pruning, but sluice status lists it/);
    expect(s?.ok).toBe(false);
    // The pipeline's problems list each of them.
    for (const what of [/new\.db/, /cheap/, /labels/, /notes/, /old\.db/, /lag of 2 events/]) expect(h.problems.join('\n')).toMatch(what);
  });

  test('a declared target that cannot be read keeps the acknowledgements of what it declares: health names the target, never tells to forget them', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = write(
      tmp,
      `sources:\n  - path: app.db\n    capture: [items, notes]\n    targets:\n      - path: cache.db\n        projections: ["*", ${CHEAP}]\n`,
    );
    const pipeline = await loadPipeline(file);
    await convergeOnce(pipeline);
    // The target is replaced by something that is not a database (a bad restore, a file copied over it).
    const cache = path.join(tmp, 'cache.db');
    fs.renameSync(cache, path.join(tmp, 'cache.bak'));
    fs.writeFileSync(cache, 'not a database, only text, long enough to be read as a header and refused '.repeat(3));
    const h = pipelineHealth(pipeline);
    expect(h.ok).toBe(false);
    expect(h.targets[0]?.problems.join('\n')).toMatch(/cache\.db cannot be read: NOT_A_DATABASE/);
    // Forgetting them would let the source prune the journal the target, once restored, still needs.
    expect(h.sources[0]?.problems).toEqual([]);
    expect(h.sources[0]?.acknowledgements.map((a) => [a.projection, a.declared]).sort()).toEqual([
      ['cheap', true],
      ['items', true],
      ['notes', true],
    ]);
  });

  test('is not ok while a declared projection is suspended, and names it with its repair', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = write(
      tmp,
      `sources:\n  - path: app.db\n    capture: [items]\n    targets:\n      - path: cache.db\n        projections: ["*", ${CHEAP}]\n`,
    );
    const pipeline = await loadPipeline(file);
    await convergeOnce(pipeline);
    expect(pipelineHealth(pipeline).ok).toBe(true);
    // A column the map reads is dropped from the source: the next pass suspends the map, and the mirror goes on.
    const app = openDatabase(path.join(tmp, 'app.db'));
    alter(app, 'ALTER TABLE items DROP COLUMN name');
    app.close();
    const pass = await convergeOnce(pipeline);
    expect(pass.targets[0]?.sync?.projections.find((p) => p.name === 'cheap')?.state).toBe('suspended');
    const h = pipelineHealth(pipeline);
    expect(h.ok).toBe(false);
    const cheap = h.targets[0]?.projections.find((p) => p.name === 'cheap');
    expect(cheap).toMatchObject({ state: 'suspended', declared: true, needsAction: true });
    expect(h.problems.join('\n')).toMatch(/cache\.db: cheap: .*sluice/);
    expect(h.targets[0]?.projections.find((p) => p.name === 'items')).toMatchObject({ state: 'active', needsAction: false });
  });
  test('is not ok while a declared target is fed from another source than the one the file declares, and says that run syncs it from the declared one', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const other = makeDb('other.db', SCHEMA).db;
    other.exec("UPDATE items SET name = 'from other.db'");
    other.close();
    // cache.db was built from other.db (another pipeline file, a hand sync, a copy), and this file declares it for app.db.
    await convergeOnce(
      await loadPipeline(
        write(
          tmp,
          `sources:\n  - path: other.db\n    capture: [items, notes]\n    targets:\n      - path: cache.db\n        projections: ["*"]\n`,
        ),
      ),
    );
    // app.db is captured too, so that only the target is wrong.
    await convergeOnce(await loadPipeline(write(tmp, `sources:\n  - path: app.db\n    capture: [items, notes]\n`)));
    const pipeline = await loadPipeline(
      write(
        tmp,
        `sources:\n  - path: app.db\n    capture: [items, notes]\n    targets:\n      - path: cache.db\n        projections: ["*"]\n`,
      ),
    );
    const h = pipelineHealth(pipeline);
    expect(h.ok).toBe(false);
    const items = h.targets[0]?.projections.find((p) => p.name === 'items');
    expect(items).toMatchObject({ declared: true, needsAction: true });
    expect(items?.action).toMatch(
      /projection items of .*cache\.db is fed from .*other\.db, not from its declared source .*app\.db .*sluice run syncs it from the declared source, rebuilding it/,
    );
    expect(h.problems.join('\n')).toMatch(/cache\.db: notes: .*fed from .*other\.db/);
    // Once a pass has rebuilt it from the declared source, it is ok.
    await convergeOnce(pipeline);
    expect(pipelineHealth(pipeline).problems).toEqual([]);
  });

  test('a captured table under "*" whose mirror cannot be made is a declared problem with its refusal, not an undeclared projection to drop', async ({
    tmp,
    makeDb,
  }) => {
    makeDb(
      'app.db',
      `${SCHEMA} CREATE TABLE t (code TEXT COLLATE NOCASE, v TEXT, PRIMARY KEY (code COLLATE BINARY)); INSERT INTO t VALUES ('a', 'x');`,
    ).db.close();
    const pipeline = await loadPipeline(
      write(tmp, `sources:\n  - path: app.db\n    capture: [items, t]\n    targets:\n      - path: cache.db\n        projections: ["*"]\n`),
    );
    await convergeOnce(pipeline);
    const h = pipelineHealth(pipeline);
    expect(h.ok).toBe(false);
    const t = h.targets[0]?.projections.find((p) => p.name === 't');
    expect(t).toMatchObject({ declared: true, needsAction: true, reason: 'MIRROR_REFUSED' });
    expect(t?.action).toMatch(/its mirror cannot be made .*KEY_COLLATION_MISMATCH/);
    expect(h.problems.join('\n')).not.toMatch(/not declared|sluice drop/);
    expect(h.targets[0]?.projections.find((p) => p.name === 'items')).toMatchObject({ declared: true, needsAction: false });
  });
});
