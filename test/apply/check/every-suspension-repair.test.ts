// every suspension code in the catalog makes health exit 3 print its repair and the repair turns it green
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { REASONS, reasonsOf, repairFor, type ReasonCode } from '../../../src/reasons.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable, disable } from '../../../src/capture/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, write, syncByLibrary } from '../../cli/support/cli.ts';

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
 *
 * What a user runs is run through the CLI: health, each command the repair
 * names, the next plain sync. The setup around it (the first sync, the
 * sync that brings the code about, the last verify) goes through the
 * library the CLI runs, with the CLI's exit codes: a CLI run costs half a
 * second of start-up. The codes are walked one after another, so that
 * each one's time is its own, also on a busy machine.
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

/** `sluice sync SRC TGT [--projection FILE...]` through the library, for the setup (the CLI's sync is walked by the repair steps). */
async function syncs(w: World, status: number, files: readonly string[] = []): Promise<void> {
  expect(await syncByLibrary(w.src, w.tgt, files), `sync ${w.src} ${w.tgt} ${files.join(' ')}`).toBe(status);
}

/** A sync that suspends the projection: it exits 3. */
const suspendingSync = (w: World) => syncs(w, 3);

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
  // The target was deleted and made again by a plain sync: the source still acknowledges the map given with --projection.
  CONSUMER_NOT_BUILT: {
    projection: 'named',
    definitions: () => ({ named: { name: 'named', source: 'items', kind: 'map', columns: { id: 'id', name: 'name' } } }),
    cause: async (w) => {
      for (const f of [w.tgt, `${w.tgt}-wal`, `${w.tgt}-shm`]) fs.rmSync(f, { force: true });
      await syncs(w, 3);
    },
    repair: (w) => [sync(w, '--projection', w.at('named.json'))],
  },
  // The source stopped capturing the table: capture re-created with other tables only.
  TABLE_UNTRACKED: {
    cause: async (w) => {
      onSource(w, (db) => {
        disable(db);
        enable(db, ['other']);
      });
      await suspendingSync(w);
    },
    repair: (w) => [{ run: ['enable', w.src, 'items'] }, sync(w)],
  },
  // A UNIQUE index over an expression unarms the table, and sync cannot re-arm it: the fix status gives (rearmFix), not enable alone, which refuses it.
  TABLE_UNARMED: {
    cause: async (w) => {
      write(w.src, 'CREATE UNIQUE INDEX items_lower ON items (lower(name)); UPDATE items SET n = 9 WHERE id = 1');
      await suspendingSync(w);
    },
    printed: (w) =>
      `TABLE_UNARMED: fix the source: change items as the UNIQUE_EXPRESSION_INDEX refusal says (enable refuses it as it is, and says how), then run sluice enable ${w.src} items, then run sluice sync again`,
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
  // A map expression that raises on one source value: the journal keeps the value, so only a rebuild after the fix gets past it.
  EXPRESSION_FAILED: {
    projection: 'named',
    definitions: () => ({ named: { name: 'named', source: 'items', kind: 'map', columns: { id: 'id', j: { expr: 'json(name)' } } } }),
    prepare: (w) => write(w.src, `UPDATE items SET name = '"' || name || '"'`),
    cause: async (w) => {
      write(w.src, "UPDATE items SET name = 'not json' WHERE id = 2");
      await suspendingSync(w);
    },
    repair: (w) => [
      findCause(w, /"expression":"column j".*"key":\[2\]|"key":\[2\].*"expression":"column j"/),
      { fix: 'fix the value', apply: () => write(w.src, `UPDATE items SET name = '"b"' WHERE id = 2`) },
      reinit(w, 'named'),
    ],
  },
  // The stored definition no longer validates (a target written by another sluice, or edited).
  DEFINITION_INVALID: {
    cause: async (w) => {
      write(w.tgt, `UPDATE _sluice_projections SET definition = '{"name":"items","source":"items","kind":"bogus"}' WHERE name = 'items'`);
      await suspendingSync(w);
    },
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
  // target's log: test/apply/edits/hand-edit-watch.test.ts); undone, verify clears it.
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
  // A user's trigger on the target's items that writes the mirror of other: items is suspended before the trigger fires.
  USER_TRIGGER_WRITES_PROJECTION: {
    cause: async (w) => {
      write(w.tgt, "CREATE TRIGGER audit AFTER INSERT ON items BEGIN UPDATE other SET v = 'touched' WHERE id = 1; END");
      write(w.src, "INSERT INTO items VALUES (4, 'd', 4)");
      await suspendingSync(w);
    },
    // health prints the suspension's own message, which names the trigger and the command that drops it (the catalog's repair cannot).
    printed: (w) =>
      `Drop the trigger (sluice query ${w.tgt} 'DROP TRIGGER "audit"') or make it write only tables that are no projection's; then run sluice sync again`,
    repair: (w) => [{ fix: 'drop the trigger', apply: () => write(w.tgt, 'DROP TRIGGER audit') }, sync(w)],
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
  // A table enabled after the first sync of a target built by the default ("*"): its mirror is not built yet.
  MIRROR_NOT_BUILT: {
    projection: 'more',
    cause: (w) => {
      write(w.src, "CREATE TABLE more (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO more VALUES (1, 'later')");
      onSource(w, (db) => enable(db, ['more']));
    },
    repair: (w) => [sync(w)],
  },
  // A table enabled after the first sync of a "*" target whose mirror cannot be made as it is (its key compares with
  // another collation than the column's): sync leaves it out (exit 0) every time; declaring the key as the refusal
  // says, the next sync builds it (re-arming the table made again).
  MIRROR_REFUSED: {
    projection: 'codes',
    cause: (w) => {
      write(
        w.src,
        "CREATE TABLE codes (code TEXT COLLATE NOCASE, v TEXT, PRIMARY KEY (code COLLATE BINARY)); INSERT INTO codes VALUES ('a', 'x')",
      );
      onSource(w, (db) => enable(db, ['codes']));
    },
    printed: (w) =>
      `MIRROR_REFUSED: change codes as that refusal says, then run sluice sync ${w.src} ${w.tgt}, which builds its mirror; or, if no target needs codes, stop capturing it: sluice disable ${w.src} codes`,
    repair: (w) => [
      {
        fix: "declare the key with the column's collation",
        apply: () =>
          write(
            w.src,
            "DROP TABLE codes; CREATE TABLE codes (code TEXT COLLATE NOCASE, v TEXT, PRIMARY KEY (code)); INSERT INTO codes VALUES ('a', 'x')",
          ),
      },
      sync(w),
    ],
  },
  // A column declared anew in place (writable_schema, rows not written again): items.n, declared TEXT now, holds the
  // integers it held, which a copy into a column declared TEXT stores as text.
  SOURCE_AFFINITY: {
    cause: async (w) => {
      runPython(
        `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
sv = c.execute('PRAGMA schema_version').fetchone()[0]
c.execute('PRAGMA writable_schema=ON')
c.execute("UPDATE sqlite_schema SET sql = replace(sql, 'n INTEGER', 'n TEXT') WHERE name = 'items'")
c.execute('PRAGMA schema_version=%d' % (sv + 1))
c.execute('PRAGMA writable_schema=OFF')
`,
        [w.src],
      );
      await suspendingSync(w);
    },
    printed: (w) =>
      `SOURCE_AFFINITY: items.n holds values that its declared type stores in another class (sluice health --json: detail.message), which no copy can hold as they are; store them again in the source, each as its declared type stores it: sluice query ${w.src} 'UPDATE "items" SET "n" = "n" WHERE typeof("n") IN ('\\''integer'\\'')' (the capture journals each value it changes), or declare the column as before; then rebuild: sluice reinit ${w.src} ${w.tgt} items`,
    repair: (w) => [
      {
        fix: 'store the values again in the source',
        apply: () => write(w.src, `UPDATE "items" SET "n" = "n" WHERE typeof("n") IN ('integer')`),
      },
      reinit(w),
    ],
  },
  // A custom handler that throws an Error with no code.
  APPLY_FAILED: {
    projection: 'seen',
    prepare: (w) => fs.writeFileSync(w.at('seen.mjs'), SEEN_THROWS),
    definitions: () => ({ seen: { name: 'seen', source: 'items', kind: 'custom', module: './seen.mjs' } }),
    cause: async (w) => {
      write(w.src, "UPDATE items SET name = 'boom' WHERE id = 1");
      await syncs(w, 1);
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
  const files = Object.entries(s.definitions?.(w) ?? {}).map(([name, d]) => {
    fs.writeFileSync(at(`${name}.json`), JSON.stringify(d));
    return at(`${name}.json`);
  });
  await syncs(w, 0, files);
  return w;
}

async function health(w: World) {
  const [json, text] = await Promise.all([runCliAsync(['health', w.tgt, '--json']), runCliAsync(['health', w.tgt])]);
  return { json, text, h: parseJson(json, S.healthOutput) };
}

/**
 * Whether the printed repair names this command: spelled out; with the
 * definition file it cannot know said in words ("pass it with --projection
 * to sluice sync SRC TGT", or "--projection FILE, FILE being its
 * definition"); or "run sluice sync again" for the plain sync.
 */
function names(printed: string, args: readonly string[], w: World): boolean {
  if (printed.includes(`sluice ${args.join(' ')}`)) return true;
  const file = args.indexOf('--projection');
  if (
    file >= 0 &&
    printed.includes('with --projection') &&
    printed.includes(`sluice ${args.filter((_, i) => i !== file && i !== file + 1).join(' ')}`)
  )
    return true;
  // The file said as FILE, with what it is ("--projection FILE, FILE being its definition").
  if (file >= 0 && printed.includes(`sluice ${[...args.slice(0, file), '--projection', 'FILE', ...args.slice(file + 2)].join(' ')}`))
    return true;
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

describe('each code, end to end', () => {
  test.for(WALKED.filter((c) => NO_REAL_SCENARIO[c] === undefined))(
    '%s: health exits 3 and prints its repair, and doing what it says makes health exit 0',
    async (code) => {
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
      const printed = s.printed?.(w) ?? repairFor(code, { source: w.src, target: w.tgt, projection: name, table: 'items' });
      expect(REASONS[code].repair !== null || s.printed !== undefined, `${code}: a code health reports needs a repair`).toBe(true);
      expect(
        p.problems.some((x) => x.includes(printed)),
        `${JSON.stringify(p.problems)}\nshould include\n${printed}`,
      ).toBe(true);
      expect(broken.text.stdout).toContain(printed);

      // It names real values only: nothing left for the user to fill in.
      expect(printed).not.toMatch(/<[A-Za-z][\w .-]*>|\{[a-z]+\}/);
      // Doing what it says: each fix it describes, then each command it names.
      for (const step of s.repair(w)) {
        if ('fix' in step) {
          step.apply();
          continue;
        }
        expect(names(printed, step.run, w), `"${printed}" should name sluice ${step.run.join(' ')}`).toBe(true);
        const r = await cli(step.run, step.status ?? 0);
        if (step.shows !== undefined) expect(r.stdout + r.stderr).toMatch(step.shows);
      }

      // Repaired for good: the next plain sync keeps it so.
      await cli(['sync', w.src, w.tgt], 0);
      const fixed = await health(w);
      expect(fixed.json.status, fixed.json.stdout + fixed.json.stderr).toBe(0);
      expect(fixed.text.status).toBe(0);
      expect(fixed.h.projections.find((x) => x.name === name)).toMatchObject({ state: 'active', needsAction: false, problems: [] });
      const v = await verify(w.src, w.tgt);
      expect(v.ok, JSON.stringify(v.projections)).toBe(true);
    },
  );
});
