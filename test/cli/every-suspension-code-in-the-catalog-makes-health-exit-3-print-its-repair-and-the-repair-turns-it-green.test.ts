import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import * as S from '../../src/cli/json-schemas.ts';
import { REASONS, reasonsOf, repairFor, type ReasonCode } from '../../src/reasons.ts';
import { openDatabase } from '../../src/sqlite/connection.ts';
import { enable } from '../../src/capture/enable.ts';
import { disable } from '../../src/capture/disable.ts';
import { runCliAsync, parseJson, makeDir, removeDir, write } from './support/cli.ts';

/*
 * Every code the catalog says suspends a projection (kind `suspend`), or
 * makes health say one needs action (kind `health`), walked end to end with
 * real files and the real CLI: a scenario brings a projection to exactly
 * that code; `sluice health` exits 3 and prints the repair the catalog
 * renders for it; doing what that repair says (the fix it names, then the
 * commands it names, with the real paths) makes health exit 0 with the
 * projection active, also after the next plain sync, and verify call it
 * ok. The codes come from the catalog at run time: a new one without a
 * scenario here fails (or one named in NO_REAL_SCENARIO, with why none
 * reaches it: a finding, never a faked scenario).
 */

type Code = ReasonCode;

/** The codes walked here: read from the catalog, not listed. */
const WALKED: readonly Code[] = [...new Set<Code>([...reasonsOf('suspend'), ...reasonsOf('health')])].sort();

interface World {
  readonly dir: string;
  readonly src: string;
  readonly tgt: string;
  readonly at: (f: string) => string;
}

/**
 * One thing the repair says to do: a fix by hand it describes, or a command
 * it names (one that shows the cause exits 3 and its output `shows` it).
 */
type Step =
  | { readonly fix: string; readonly apply: () => void }
  | { readonly run: readonly string[]; readonly status?: number; readonly shows?: RegExp };

interface Scenario {
  /** The projection that gets the code (default `items`, the mirror of the default projections). */
  readonly projection?: string;
  /** Definition files to sync with at first (name -> definition); none: the default projections. */
  readonly definitions?: (w: World) => Record<string, unknown>;
  /** Before the first sync (a custom handler's module). */
  readonly prepare?: (w: World) => void;
  /** Brings the projection to the code (a sync that suspends it, or a change that health sees). */
  readonly cause: (w: World) => Promise<void> | void;
  /** What health prints for it when the catalog has no repair of its own for the code. */
  readonly printed?: (w: World) => string;
  /** The placeholders the printed repair leaves for the user to fill in, as this scenario fills them. */
  readonly fill?: (w: World) => Record<string, string>;
  /** What the repair says, in order. */
  readonly repair: (w: World) => readonly Step[];
}

const SCHEMA = `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, n INTEGER);
CREATE TABLE other (id INTEGER PRIMARY KEY, v TEXT);
INSERT INTO items VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);
INSERT INTO other VALUES (1, 'x');`;

/** Runs the CLI and expects `status`. */
async function cli(args: readonly string[], status: number) {
  const r = await runCliAsync(args);
  expect(r.status, `sluice ${args.join(' ')}\n${r.stdout}${r.stderr}`).toBe(status);
  return r;
}

/** A sync that suspends the projection: it exits 3. */
const suspendingSync = async (w: World) => void (await cli(['sync', w.src, w.tgt], 3));

function onSource(w: World, f: (db: ReturnType<typeof openDatabase>) => void): void {
  const db = openDatabase(w.src);
  try {
    f(db);
  } finally {
    db.close();
  }
}

const sync = (w: World, ...more: string[]): Step => ({ run: ['sync', w.src, w.tgt, ...more] });
const reinit = (w: World, name = 'items'): Step => ({ run: ['reinit', w.src, w.tgt, name] });
/** "find the cause (sluice health {target} --json shows what was found)": what it shows of this scenario's cause. */
const findCause = (w: World, shows: RegExp): Step => ({ run: ['health', w.tgt, '--json'], status: 3, shows });

const SEEN_THROWS = `export default { version: '1', apply(e) { if (e.after?.name === 'boom') throw new Error('the handler refused boom'); } };\n`;
const SEEN_FIXED = `export default { version: '1', apply() {} };\n`;

const SCENARIOS: Partial<Record<Code, Scenario>> = {
  // The source stopped capturing the table: capture re-created with other tables only.
  TABLE_UNTRACKED: {
    cause: async (w) => {
      onSource(w, (db) => {
        disable(db);
        enable(db, ['other']);
      });
      await suspendingSync(w);
    },
    fill: () => ({ '<table>': 'items' }),
    repair: (w) => [{ run: ['enable', w.src, 'items'] }, sync(w)],
  },
  // A UNIQUE index over an expression unarms the table, and sync cannot re-arm it.
  TABLE_UNARMED: {
    cause: async (w) => {
      write(w.src, 'CREATE UNIQUE INDEX items_lower ON items (lower(name)); UPDATE items SET n = 9 WHERE id = 1');
      await suspendingSync(w);
    },
    fill: () => ({ '<table>': 'items' }),
    repair: (w) => [
      // What `sluice enable` says when the index is there: make it a UNIQUE index over plain columns.
      { fix: 'drop the UNIQUE expression index', apply: () => write(w.src, 'DROP INDEX items_lower') },
      { run: ['enable', w.src, 'items'] },
      sync(w),
    ],
  },
  // The table was switched to keys mode: no before-images to check a mirror with.
  NEEDS_IMAGES_MODE: {
    cause: async (w) => {
      onSource(w, (db) => enable(db, ['items'], { mode: 'keys' }));
      await suspendingSync(w);
    },
    fill: () => ({ '<table>': 'items' }),
    repair: (w) => [{ run: ['enable', w.src, 'items'] }, sync(w)],
  },
  // A UNIQUE index a user added to the target, which the source's rows break.
  TARGET_CONSTRAINT: {
    cause: async (w) => {
      write(w.tgt, 'CREATE UNIQUE INDEX items_n ON items (n)');
      write(w.src, 'UPDATE items SET n = 1 WHERE id = 2');
      await suspendingSync(w);
    },
    repair: (w) => [{ fix: 'drop the index', apply: () => write(w.tgt, 'DROP INDEX items_n') }, sync(w)],
  },
  // The stored definition no longer validates (a target written by another sluice, or edited).
  DEFINITION_INVALID: {
    cause: async (w) => {
      write(w.tgt, `UPDATE _sluice_projections SET definition = '{"name":"items","source":"items","kind":"bogus"}' WHERE name = 'items'`);
      await suspendingSync(w);
    },
    fill: (w) => ({ '<definition file of items>': w.at('items.json') }),
    repair: (w) => [
      {
        fix: 'write the definition file',
        apply: () => fs.writeFileSync(w.at('items.json'), JSON.stringify({ name: 'items', source: 'items', kind: 'mirror' })),
      },
      { run: ['reinit', w.src, w.tgt, 'items', '--projection', w.at('items.json')] },
    ],
  },
  // A map names a column the source renamed: repaired by a definition that fits the source.
  SOURCE_COLUMN_MISSING: {
    projection: 'named',
    definitions: () => ({ named: { name: 'named', source: 'items', kind: 'map', columns: { id: 'id', name: 'name' } } }),
    cause: async (w) => {
      write(w.src, 'ALTER TABLE items RENAME COLUMN name TO label');
      await suspendingSync(w);
    },
    fill: (w) => ({ '<definition file of named>': w.at('named.json') }),
    repair: (w) => [
      {
        fix: 'pass a definition that fits the source',
        apply: () =>
          fs.writeFileSync(
            w.at('named.json'),
            JSON.stringify({ name: 'named', source: 'items', kind: 'map', columns: { id: 'id', name: 'label' } }),
          ),
      },
      sync(w, '--projection', w.at('named.json')),
    ],
  },
  // The source table was dropped: repaired by putting it back.
  SOURCE_TABLE_MISSING: {
    cause: async (w) => {
      write(w.src, 'DROP TABLE items');
      await suspendingSync(w);
    },
    repair: (w) => [
      {
        fix: 'put the table back in the source',
        apply: () =>
          write(w.src, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, n INTEGER); INSERT INTO items VALUES (7, 'back', 7)"),
      },
      sync(w),
    ],
  },
  // A row of the target was edited, then the source changed it.
  TARGET_DIVERGED: {
    cause: async (w) => {
      write(w.tgt, "UPDATE items SET name = 'tampered' WHERE id = 2");
      write(w.src, 'UPDATE items SET n = 20 WHERE id = 2');
      await suspendingSync(w);
    },
    repair: (w) => [findCause(w, /"key":\[2\]/), reinit(w)],
  },
  // A row of the target edited by another program, found by verify (a running sync --follow finds it in the
  // target's log: test/cli/a-hand-edit-of-a-projection-while-sync-follow-runs-...); undone, verify clears it.
  TARGET_EDITED: {
    cause: async (w) => {
      write(w.tgt, "UPDATE items SET name = 'edited' WHERE id = 2");
      await cli(['verify', w.src, w.tgt], 3);
    },
    repair: (w) => [
      findCause(w, /"key":\[2\],"kind":"different"/),
      { fix: 'undo the edit', apply: () => write(w.tgt, "UPDATE items SET name = 'b' WHERE id = 2") },
      { run: ['verify', w.src, w.tgt] },
    ],
  },
  // A key the source inserts is already in the target (a write no delete was recorded for).
  UNCAPTURED_REPLACE: {
    cause: async (w) => {
      write(w.tgt, "INSERT INTO items VALUES (4, 'd', 4)");
      write(w.src, "INSERT INTO items VALUES (4, 'd', 4)");
      await suspendingSync(w);
    },
    repair: (w) => [findCause(w, /"key":\[4\]/), reinit(w)],
  },
  // The stored cursor is garbage.
  CURSOR_MALFORMED: {
    cause: async (w) => {
      write(w.tgt, "UPDATE _sluice_projections SET cursor = 'garbage' WHERE name = 'items'");
      await suspendingSync(w);
    },
    repair: (w) => [findCause(w, /not a valid sluice cursor/), reinit(w)],
  },
  // A column added to a target table by hand: health sees it, sync does not.
  TARGET_TABLE_CHANGED: {
    cause: (w) => write(w.tgt, 'ALTER TABLE items ADD COLUMN note TEXT'),
    repair: (w) => [findCause(w, /not in the definition: note/), reinit(w)],
  },
  // A custom handler that throws an Error with no code.
  APPLY_FAILED: {
    projection: 'seen',
    prepare: (w) => fs.writeFileSync(w.at('seen.mjs'), SEEN_THROWS),
    definitions: () => ({ seen: { name: 'seen', source: 'items', kind: 'custom', module: './seen.mjs' } }),
    cause: async (w) => {
      write(w.src, "UPDATE items SET name = 'boom' WHERE id = 1");
      await cli(['sync', w.src, w.tgt], 1);
    },
    printed: () => 'APPLY_FAILED: the handler refused boom; fix the cause and run sluice sync again',
    repair: (w) => [{ fix: 'fix the handler', apply: () => fs.writeFileSync(w.at('seen.mjs'), SEEN_FIXED) }, sync(w)],
  },
};

let root: string;
beforeAll(() => {
  root = makeDir('sluice-walk-');
});
afterAll(() => removeDir(root));

async function makeWorld(code: Code, s: Scenario): Promise<World> {
  const dir = path.join(root, code);
  fs.mkdirSync(dir);
  const at = (f: string) => path.join(dir, f);
  const w: World = { dir, src: at('app.db'), tgt: at('cache.db'), at };
  const db = openDatabase(w.src, { create: true, wal: true });
  try {
    db.exec(SCHEMA);
    enable(db, ['items', 'other']);
  } finally {
    db.close();
  }
  s.prepare?.(w);
  const defs = Object.entries(s.definitions?.(w) ?? {}).flatMap(([name, d]) => {
    fs.writeFileSync(at(`${name}.json`), JSON.stringify(d));
    return ['--projection', at(`${name}.json`)];
  });
  await cli(['sync', w.src, w.tgt, ...defs], 0);
  return w;
}

async function health(w: World) {
  const [json, text] = await Promise.all([runCliAsync(['health', w.tgt, '--json']), runCliAsync(['health', w.tgt])]);
  return { json, text, h: parseJson(json, S.healthOutput) };
}

/** Whether the printed repair names this command: spelled out, or "run sluice sync again" for the plain sync. */
function names(printed: string, args: readonly string[], w: World): boolean {
  if (printed.includes(`sluice ${args.join(' ')}`)) return true;
  return args.length === 3 && args[0] === 'sync' && args[1] === w.src && args[2] === w.tgt && printed.includes('run sluice sync again');
}

/**
 * Codes of those kinds that no real scenario reaches, and why: each is a
 * finding to fix in src/, not a scenario to fake.
 */
const NO_REAL_SCENARIO: Partial<Record<Code, string>> = {
  SUSPENDED:
    "step.ts's name for a stored suspension with no reason; sluice never stores one (every suspension it writes names its reason), only a row written by hand or by another tool has none",
};

test('every suspension and health code of the catalog has a scenario here, or a reason why none reaches it', () => {
  expect(WALKED.length).toBeGreaterThan(0);
  expect([...Object.keys(SCENARIOS), ...Object.keys(NO_REAL_SCENARIO)].sort()).toEqual(WALKED);
});

describe.concurrent('each code, end to end', () => {
  test.for(WALKED.filter((c) => NO_REAL_SCENARIO[c] === undefined))(
    '%s: health exits 3 and prints its repair, and doing what it says makes health exit 0',
    async (code, { expect }) => {
      const s = SCENARIOS[code];
      expect(s, `${code} is a ${REASONS[code].kinds.join('/')} code of src/reasons.ts with no scenario in this file`).toBeDefined();
      if (s === undefined) return;
      const name = s.projection ?? 'items';
      const w = await makeWorld(code, s);
      await s.cause(w);

      // health --json shows exactly this code for the projection.
      const broken = await health(w);
      expect(broken.json.status, broken.json.stderr).toBe(3);
      expect(broken.text.status, broken.text.stderr).toBe(3);
      const p = broken.h.projections.find((x) => x.name === name);
      expect(p, JSON.stringify(broken.h)).toBeDefined();
      if (p === undefined) return;
      expect(p.needsAction).toBe(true);
      if ((REASONS[code].kinds as readonly string[]).includes('suspend')) {
        expect(p).toMatchObject({ state: 'suspended', reason: code });
      } else {
        expect(p.failure?.code === code || p.problems.some((x) => x.includes(`${code}: `)), JSON.stringify(p)).toBe(true);
      }

      // It prints the repair the catalog renders for the code, with this source, target and projection.
      const printed = s.printed?.(w) ?? repairFor(code, { source: w.src, target: w.tgt, projection: name });
      expect(REASONS[code].repair !== null || s.printed !== undefined, `${code}: a code health reports needs a repair`).toBe(true);
      expect(
        p.problems.some((x) => x.includes(printed)),
        `${JSON.stringify(p.problems)}\nshould include\n${printed}`,
      ).toBe(true);
      expect(broken.text.stdout).toContain(printed);

      // Doing what it says: each fix it describes, then each command it names.
      const filled = Object.entries(s.fill?.(w) ?? {}).reduce((t, [k, v]) => t.replaceAll(k, v), printed);
      for (const step of s.repair(w)) {
        if ('fix' in step) {
          step.apply();
          continue;
        }
        expect(names(filled, step.run, w), `"${filled}" should name sluice ${step.run.join(' ')}`).toBe(true);
        const r = await cli(step.run, step.status ?? 0);
        if (step.shows !== undefined) expect(r.stdout + r.stderr).toMatch(step.shows);
      }

      // Repaired for good: the next plain sync keeps it so.
      await cli(['sync', w.src, w.tgt], 0);
      const fixed = await health(w);
      expect(fixed.json.status, fixed.json.stdout + fixed.json.stderr).toBe(0);
      expect(fixed.text.status).toBe(0);
      expect(fixed.h.projections.find((x) => x.name === name)).toMatchObject({ state: 'active', needsAction: false, problems: [] });
      const v = await runCliAsync(['verify', w.src, w.tgt, '--json']);
      expect(v.status, v.stdout + v.stderr).toBe(0);
    },
  );
});
