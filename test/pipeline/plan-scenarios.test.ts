import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { describe, expect, runSqliteCli, test, filesIn } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import {
  loadPipeline,
  type Pipeline,
  planPipeline,
  type PipelinePlan,
  convergeOnce,
  type ConvergeReport,
  declaredInputs,
  pipelineHealth,
  readPipelineQuietly,
  withPlannedChanges,
  type PipelineHealth,
} from '../../src/pipeline/index.ts';
import { explainAlter } from '../../src/apply/evolution/index.ts';
import { enable, readConsumers } from '../../src/capture/index.ts';

/*
 * plan is the prediction of the next pass of convergeOnce (what `sluice run`
 * does each time the file or the sources change), as explain is the
 * prediction of the next sync: for each scenario a pipeline is brought to a
 * first state by convergeOnce, the file (or the source) is changed, plan
 * runs (and must leave every file of the folder byte for byte as it was,
 * creating none), then convergeOnce runs, and what plan said is what the
 * pass did: per source the tables enabled, the undeclared capture and the
 * acknowledgements forgotten; per target each projection built, continued,
 * rebuilt (with its reason), refused (with its code), dropped or left
 * undeclared. Each scenario also names what it expects, so that plan and
 * the pass cannot agree on something wrong.
 *
 * And plan is held to `health --config` read at the same moment: what health
 * flags as not declared on a target (a projection it holds, "*" in its
 * stored set) is what plan lists there as undeclared or dropped, and a plan
 * that says "nothing to do" is never beside a health that needs action.
 */

const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER NOT NULL);
INSERT INTO items VALUES (1, 'apple pie', 1), (2, 'banana bread', 5), (3, 'cherry tart', 10), (4, 'date loaf', 50);
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO notes VALUES (1, 'first'), (2, 'second');
`;

/** A table whose key compares its column with another collation than the column's: its mirror cannot be built. */
const MISMATCHED = "CREATE TABLE t (code TEXT COLLATE NOCASE, v TEXT, PRIMARY KEY (code COLLATE BINARY)); INSERT INTO t VALUES ('a', 'x');";

const CHEAP = `{name: cheap, source: items, kind: map, columns: {id: id, label: name}, filter: "qty < 100"}`;

function yml(capture: string, targets: string, prune = false): string {
  return `sources:\n  - path: app.db\n    capture: ${capture}\n${targets === '' ? '' : `    targets:\n${targets}`}${prune ? 'prune: true\n' : ''}`;
}

function target(file: string, ...projections: string[]): string {
  return `      - path: ${file}\n        projections:\n${projections.map((p) => `          - ${p}\n`).join('')}`;
}

type Does = Record<string, string>;

/** What plan says, in the words of the pass: `target:projection` -> does[:reason]; `source:enable:table`, `source:undeclared:table`, `source:forget:consumer`. */
function said(plan: PipelinePlan, dir: string): Does {
  const out: Does = {};
  const rel = (p: string) => path.relative(dir, p);
  for (const s of plan.sources) {
    for (const e of s.enable) out[`enable:${e.table}`] = e.mode;
    // A pass reports the first refusal of its enables (and enables the other calls).
    if (s.enableRefused[0] !== undefined) out['enable-refused'] = s.enableRefused[0].code;
    for (const u of s.undeclaredCapture) out[`undeclared-capture:${u.table}`] = 'kept';
    for (const a of s.acknowledgements) out[`ack:${a.projection}@${path.basename(a.target)}`] = a.does === 'forget' ? 'forgotten' : 'kept';
  }
  for (const t of plan.targets) {
    if (t.refused !== null) out[`${rel(t.path)}`] = `refused:${t.refused.code}`;
    for (const p of t.projections) {
      if (t.refused !== null) break;
      out[`${rel(t.path)}:${p.name}`] =
        p.does === 'rebuild' || p.does === 'refuse' || p.does === 'suspend'
          ? `${p.does}:${p.reason}`
          : p.does === 'undeclared'
            ? 'kept'
            : p.does;
    }
  }
  return out;
}

/** Whether target `file` holds "*" in its stored projection set (read from the set table itself). */
function storesAll(file: string): boolean {
  if (!fs.existsSync(file)) return false;
  const db = openDatabase(file);
  try {
    const set = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = '_sluice_projection_set'").get() !== undefined;
    return set && db.prepare("SELECT 1 FROM _sluice_projection_set WHERE member = '*'").get() !== undefined;
  } finally {
    db.close();
  }
}

/** What the pass did, in the same words, reading its report and the files after it. */
function done(
  report: ConvergeReport,
  before: ReadonlyMap<string, ReadonlySet<string>>,
  acks: readonly string[],
  dir: string,
  pipeline: Pipeline,
): Does {
  const out: Does = {};
  const rel = (p: string) => path.relative(dir, p);
  for (const s of report.sources) {
    if (s.error !== null) out['enable-refused'] = s.error.code;
    for (const e of s.enabled) out[`enable:${e.table}`] = e.mode;
    for (const u of s.undeclaredCapture) out[`undeclared-capture:${u}`] = 'kept';
    for (const a of acks) {
      const [projection, file] = [a.slice(0, a.indexOf('@')), a.slice(a.indexOf('@') + 1)];
      const forgotten = s.forgotten.includes(a);
      // An acknowledgement its declared target keeps (it ran the projection, or its sync was refused as a whole) is not reported.
      const kept = report.targets.some(
        (t) => fs.realpathSync(t.path) === file && (t.sync === null || t.sync.projections.some((p) => p.name === projection)),
      );
      if (forgotten || !kept) out[`ack:${projection}@${path.basename(file)}`] = forgotten ? 'forgotten' : 'kept';
    }
  }
  for (const t of report.targets) {
    if (t.error !== null) {
      out[rel(t.path)] = `refused:${t.error.code}`;
      continue;
    }
    const held = before.get(t.path) ?? new Set<string>();
    for (const p of t.sync?.projections ?? []) {
      out[`${rel(t.path)}:${p.name}`] =
        p.error !== undefined
          ? `refuse:${p.error.code}`
          : p.state === 'suspended'
            ? `suspend:${p.reason}`
            : p.rebuilt !== undefined
              ? `rebuild:${p.rebuilt}`
              : !held.has(p.name)
                ? 'build'
                : 'continue';
    }
    // A table "*" leaves out because its mirror cannot be made (the refusal's CODE: message): plan refuses its mirror.
    for (const u of t.sync?.unmirrored ?? [])
      if (u.mode === 'images' && /^[A-Z_]+: /.test(u.why)) out[`${rel(t.path)}:${u.table}`] = 'refuse:MIRROR_REFUSED';
    for (const d of t.dropped) out[`${rel(t.path)}:${d}`] = 'drop';
    const ran = new Set([...(t.sync?.projections.map((p) => p.name) ?? []), ...t.dropped]);
    for (const name of held) if (!ran.has(name)) out[`${rel(t.path)}:${name}`] = 'kept';
    // "*" still in the target's set after the pass while the file does not declare it: kept (no prune).
    const declared = pipeline.sources.flatMap((s) => s.targets).find((x) => x.path === t.path);
    if (declared !== undefined && !declaredInputs(declared.projections).includes('*') && storesAll(t.path))
      out[`${rel(t.path)}:"*"`] = 'kept';
  }
  return out;
}

/**
 * What health --config flags as not declared on each target, in plan's words: `target:projection` -> 'undeclared'
 * for a projection it holds and the file does not declare, and `target:"*"` for "*" its set stores and the file
 * does not declare (a problem of the target naming it).
 */
function flagged(h: PipelineHealth, dir: string): Does {
  const out: Does = {};
  for (const t of h.targets) {
    const rel = path.relative(dir, t.path);
    for (const p of t.projections) if (!p.declared) out[`${rel}:${p.name}`] = 'undeclared';
    if (t.problems.some((x) => x.includes('stores "*"'))) out[`${rel}:"*"`] = 'undeclared';
  }
  return out;
}

/** What plan lists as not declared on each target (undeclared, or dropped with prune: true), in the words of flagged(). */
function listed(plan: PipelinePlan, dir: string): Does {
  const out: Does = {};
  for (const t of plan.targets)
    for (const p of t.projections)
      if (p.does === 'undeclared' || p.does === 'drop') out[`${path.relative(dir, t.path)}:${p.name}`] = 'undeclared';
  return out;
}

/** Enables capture of `tables` on the source (a table captured after the first pass, by hand). */
function captured(src: string, tables: string[]): void {
  const db = openDatabase(src);
  try {
    enable(db, tables);
  } finally {
    db.close();
  }
}

function heldBy(pipeline: Pipeline): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const t of pipeline.sources.flatMap((s) => s.targets)) {
    if (!fs.existsSync(t.path)) continue;
    const db = openDatabase(t.path, { readonly: true });
    try {
      // A user's own database declared as a target holds none yet.
      const held = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = '_sluice_projections'").get() !== undefined;
      out.set(t.path, new Set(held ? (db.prepare('SELECT name FROM _sluice_projections').pluck().all() as string[]) : []));
    } finally {
      db.close();
    }
  }
  return out;
}

function acksOf(source: string): string[] {
  const db = openDatabase(source, { readonly: true });
  try {
    return readConsumers(db)
      .filter((c) => c.target !== null)
      .map((c) => c.name);
  } finally {
    db.close();
  }
}

interface Scenario {
  readonly name: string;
  readonly first: string;
  readonly then: string;
  /** Run on the source between the first pass and plan. */
  readonly change?: (src: string) => void;
  readonly expected: Does;
  /** More to check of the plan (its fixes). */
  readonly check?: (plan: PipelinePlan) => void;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'a new target: every declared projection is built',
    first: yml('[items]', ''),
    then: yml('[items]', target('cache.db', '"*"', CHEAP)),
    expected: { 'cache.db:items': 'build', 'cache.db:cheap': 'build' },
  },
  {
    name: 'a source not captured yet: its tables are enabled, then every declared projection is built',
    first: 'sources: []\n',
    then: yml('[items, notes]', target('cache.db', '"*"', CHEAP)),
    expected: {
      'enable:items': 'images',
      'enable:notes': 'images',
      'cache.db:items': 'build',
      'cache.db:notes': 'build',
      'cache.db:cheap': 'build',
    },
  },
  {
    name: 'a new table under "*": it is captured, then mirrored, and the others continue',
    first: yml('[items]', target('cache.db', '"*"')),
    then: yml('[items, notes]', target('cache.db', '"*"')),
    expected: { 'enable:notes': 'images', 'cache.db:items': 'continue', 'cache.db:notes': 'build' },
  },
  {
    name: 'an added inline map is built beside the mirrors',
    first: yml('[items]', target('cache.db', '"*"')),
    then: yml('[items]', target('cache.db', '"*"', CHEAP)),
    expected: { 'cache.db:items': 'continue', 'cache.db:cheap': 'build' },
  },
  {
    name: 'a compatible change continues (a filter loosened for rows that do not exist)',
    first: yml('[items]', target('cache.db', CHEAP)),
    then: yml('[items]', target('cache.db', CHEAP.replace('qty < 100', 'qty < 1000'))),
    expected: { 'cache.db:cheap': 'continue' },
  },
  {
    name: 'a rebuildable change is rebuilt with its reason (a filter tightened)',
    first: yml('[items]', target('cache.db', '"*"', CHEAP)),
    then: yml('[items]', target('cache.db', '"*"', CHEAP.replace('qty < 100', 'qty < 10'))),
    expected: { 'cache.db:items': 'continue', 'cache.db:cheap': 'rebuild:DEFINITION_CHANGED' },
  },
  {
    name: 'a rejected change refuses the target with its code (a column that does not exist), and the other target goes on',
    first: yml('[items]', target('cache.db', '"*"', CHEAP) + target('other.db', '"*"')),
    then: yml('[items]', target('cache.db', '"*"', CHEAP.replace('label: name', 'label: nope')) + target('other.db', '"*"')),
    expected: { 'cache.db': 'refused:UNKNOWN_COLUMN', 'other.db:items': 'continue' },
    check: (plan) =>
      expect(plan.targets[0]?.refused?.fix).toMatch(
        /Projection cheap: source table items has no column nope.* \(declared at .*sluice\.yml:\d+:\d+\)/,
      ),
  },
  {
    name: 'a projection removed from the file is undeclared and kept without prune',
    first: yml('[items]', target('cache.db', '"*"', CHEAP)),
    then: yml('[items]', target('cache.db', '"*"')),
    expected: { 'cache.db:items': 'continue', 'cache.db:cheap': 'kept', 'ack:cheap@cache.db': 'kept' },
  },
  {
    name: 'a projection removed from the file is dropped with prune: true, and its acknowledgement forgotten',
    first: yml('[items]', target('cache.db', '"*"', CHEAP)),
    then: yml('[items]', target('cache.db', '"*"'), true),
    expected: { 'cache.db:items': 'continue', 'cache.db:cheap': 'drop', 'ack:cheap@cache.db': 'forgotten' },
  },
  {
    name: '"*" taken out of the file (each table now declared by name) is taken out of the target\'s set with prune: true',
    first: yml('[items, notes]', target('cache.db', '"*"')),
    then: yml(
      '[items, notes]',
      target('cache.db', '{name: items, source: items, kind: mirror}', '{name: notes, source: notes, kind: mirror}'),
      true,
    ),
    expected: { 'cache.db:items': 'continue', 'cache.db:notes': 'continue', 'cache.db:"*"': 'drop' },
    check: (plan) => expect(plan.converged).toBe(false),
  },
  {
    name: 'and the mirrors "*" made that the file no longer declares are dropped with it',
    first: yml('[items, notes]', target('cache.db', '"*"')),
    then: yml('[items, notes]', target('cache.db', '{name: items, source: items, kind: mirror}'), true),
    expected: { 'cache.db:items': 'continue', 'cache.db:notes': 'drop', 'cache.db:"*"': 'drop', 'ack:notes@cache.db': 'forgotten' },
  },
  {
    name: 'without prune, "*" taken out of the file while a table was captured since (which "*" would mirror) is kept and listed undeclared, with its repair, as health flags it',
    first: yml('[items]', target('cache.db', '"*"')),
    change: (src) => captured(src, ['notes']),
    then: yml('[items, notes]', target('cache.db', '{name: items, source: items, kind: mirror}')),
    expected: { 'cache.db:items': 'continue', 'cache.db:"*"': 'kept' },
    check: (plan) => {
      expect(plan.converged).toBe(false);
      expect(plan.targets[0]?.projections.find((p) => p.name === '"*"')?.fix).toMatch(
        /^declare "\*", or set prune: true and sluice run takes "\*" out of the projection set of .*cache\.db .*every table captured later/,
      );
    },
  },
  {
    name: 'and so without a table captured since: "*" the file does not declare is kept and listed undeclared',
    first: yml('[items, notes]', target('cache.db', '"*"')),
    then: yml(
      '[items, notes]',
      target('cache.db', '{name: items, source: items, kind: mirror}', '{name: notes, source: notes, kind: mirror}'),
    ),
    expected: { 'cache.db:items': 'continue', 'cache.db:notes': 'continue', 'cache.db:"*"': 'kept' },
    check: (plan) => expect(plan.converged).toBe(false),
  },
  {
    name: 'the acknowledgements of a target removed from the file are forgotten with prune: true',
    first: yml('[items]', target('cache.db', '"*"') + target('old.db', CHEAP)),
    then: yml('[items]', target('cache.db', '"*"'), true),
    expected: { 'cache.db:items': 'continue', 'ack:cheap@old.db': 'forgotten' },
  },
  {
    name: 'a table switched to keys mode: capture is switched, and its mirror suspended, since it needs images',
    first: yml('[items, notes]', target('cache.db', '"*"')),
    then: yml('{items: images, notes: keys}', target('cache.db', '"*"')),
    expected: { 'enable:notes': 'keys', 'cache.db:items': 'continue', 'cache.db:notes': 'suspend:NEEDS_IMAGES_MODE' },
  },
  {
    name: 'a map over a table declared in keys mode, not captured yet: capture is enabled in keys mode, and the map suspended, not built',
    first: 'sources: []\n',
    then: yml('{items: keys}', target('cache.db', CHEAP)),
    expected: { 'enable:items': 'keys', 'cache.db:cheap': 'suspend:NEEDS_IMAGES_MODE' },
  },
  {
    name: 'a map added over a table already captured in keys mode is suspended, not built, and stays so',
    first: yml('{items: keys, notes: images}', target('cache.db', '"*"')),
    then: yml('{items: keys, notes: images}', target('cache.db', '"*"', CHEAP)),
    expected: { 'cache.db:notes': 'continue', 'cache.db:cheap': 'suspend:NEEDS_IMAGES_MODE' },
  },
  {
    name: 'a table dropped from the capture list stays captured (undeclared capture) and its mirror continues',
    first: yml('[items, notes]', target('cache.db', '"*"')),
    then: yml('[items]', target('cache.db', '"*"')),
    expected: { 'undeclared-capture:notes': 'kept', 'cache.db:items': 'continue', 'cache.db:notes': 'continue' },
  },
  {
    name: 'a source holding a _sluice_ table sluice did not make: enable is refused (NAMESPACE_COLLISION), so the new target is refused for want of capture, not built',
    first: 'sources: []\n',
    change: (src) => runSqliteCli(src, 'CREATE TABLE _sluice_journal (id INTEGER PRIMARY KEY);'),
    then: yml('[items, notes]', target('cache.db', '"*"', CHEAP)),
    expected: { 'enable-refused': 'NAMESPACE_COLLISION', 'cache.db': 'refused:CAPTURE_ABSENT' },
    check: (plan) => {
      expect(plan.converged).toBe(false);
      expect(plan.sources[0]?.enableRefused).toEqual([
        { tables: ['items', 'notes'], mode: 'images', code: 'NAMESPACE_COLLISION', fix: expect.stringContaining('_sluice_journal') },
      ]);
      expect(plan.targets[0]?.refused?.fix).toContain('NAMESPACE_COLLISION');
    },
  },
  {
    name: 'a table whose foreign keys enable refuses (FK_UPDATE_CYCLE) declared beside a new one of the same mode (one enable call): only it is refused, the new one is enabled and mirrored, and the captured table continues',
    first: yml('[items]', target('cache.db', '"*"')),
    change: (src) => runSqliteCli(src, 'CREATE TABLE node (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES node(id) ON UPDATE CASCADE);'),
    then: yml('[items, node, notes]', target('cache.db', '"*"')),
    expected: { 'enable-refused': 'FK_UPDATE_CYCLE', 'enable:notes': 'images', 'cache.db:items': 'continue', 'cache.db:notes': 'build' },
    check: (plan) => expect(plan.sources[0]?.enableRefused.map((r) => r.tables)).toEqual([['node']]),
  },
  {
    name: "a declared target that is the user's own database, holding a table of a mirror's name: that mirror is refused (TARGET_TABLE_EXISTS), the others are built",
    first: yml('[items, notes]', ''),
    change: (src) =>
      runSqliteCli(path.join(path.dirname(src), 'mine.db'), 'CREATE TABLE notes (x); CREATE TABLE other (id INTEGER PRIMARY KEY);'),
    then: yml('[items, notes]', target('mine.db', '"*"')),
    expected: { 'mine.db:items': 'build', 'mine.db:notes': 'refuse:TARGET_TABLE_EXISTS' },
    check: (plan) =>
      expect(plan.targets[0]?.projections.find((p) => p.name === 'notes')?.fix).toMatch(/target table notes already exists .* Drop it/),
  },
  {
    name: "the same for a source not captured yet: its tables are enabled, and the mirror whose table the user's target holds is refused (TARGET_TABLE_EXISTS), the others built",
    first: 'sources: []\n',
    change: (src) => runSqliteCli(path.join(path.dirname(src), 'mine.db'), 'CREATE TABLE cheap (x); CREATE TABLE notes (x);'),
    then: yml('[items, notes]', target('mine.db', '"*"', CHEAP)),
    expected: {
      'enable:items': 'images',
      'enable:notes': 'images',
      'mine.db:items': 'build',
      'mine.db:notes': 'refuse:TARGET_TABLE_EXISTS',
      'mine.db:cheap': 'refuse:TARGET_TABLE_EXISTS',
    },
  },
  {
    name: "a source not captured yet, with an fts5 index into a target that holds a table of one of its FTS5 tables' names (search_idx): the index is refused (TARGET_TABLE_EXISTS), the mirror built",
    first: 'sources: []\n',
    change: (src) =>
      runSqliteCli(path.join(path.dirname(src), 'mine.db'), "CREATE TABLE search_idx (x); INSERT INTO search_idx VALUES ('kept');"),
    then: yml('[items]', target('mine.db', '"*"', '{name: search, source: items, kind: fts5, columns: [name]}')),
    expected: { 'enable:items': 'images', 'mine.db:items': 'build', 'mine.db:search': 'refuse:TARGET_TABLE_EXISTS' },
    check: (plan) =>
      expect(plan.targets[0]?.projections.find((p) => p.name === 'search')?.fix).toMatch(
        /target table search_idx already exists .* Drop it/,
      ),
  },
  {
    name: 'a new target of "*" over a source whose tables are all declared in keys or counter mode, not captured yet: they are enabled, and the target is refused (NOTHING_TO_SYNC), since "*" has nothing to mirror',
    first: 'sources: []\n',
    then: yml('{items: keys, notes: counter}', target('cache.db', '"*"')),
    expected: { 'enable:items': 'keys', 'enable:notes': 'counter', 'cache.db': 'refused:NOTHING_TO_SYNC' },
    check: (plan) => {
      expect(plan.converged).toBe(false);
      expect(plan.targets[0]?.refused?.fix).toMatch(
        /items \(keys\), notes \(counter\) are captured in a mode that feeds no mirror.*Declare a table in images mode in "capture"/,
      );
    },
  },
  {
    name: 'the same for a source that captures them so already',
    first: yml('{items: keys, notes: counter}', ''),
    then: yml('{items: keys, notes: counter}', target('cache.db', '"*"')),
    expected: { 'cache.db': 'refused:NOTHING_TO_SYNC' },
  },
  {
    name: 'a source not captured yet with a table whose mirror cannot be built (KEY_COLLATION_MISMATCH): both are enabled, the other is mirrored, and that table is left out of "*" (its mirror refused: MIRROR_REFUSED), not the target refused',
    first: 'sources: []\n',
    change: (src) => runSqliteCli(src, MISMATCHED),
    then: yml('[items, t]', target('cache.db', '"*"')),
    expected: { 'enable:items': 'images', 'enable:t': 'images', 'cache.db:items': 'build', 'cache.db:t': 'refuse:MIRROR_REFUSED' },
  },
  {
    name: 'the same once the source captures: a new table whose mirror cannot be built is enabled and left out of "*"',
    first: yml('[items]', target('cache.db', '"*"')),
    change: (src) => runSqliteCli(src, MISMATCHED),
    then: yml('[items, t]', target('cache.db', '"*"')),
    expected: { 'enable:t': 'images', 'cache.db:items': 'continue', 'cache.db:t': 'refuse:MIRROR_REFUSED' },
  },
  {
    name: 'a new target of "*" whose only table cannot be mirrored is refused (NOTHING_TO_SYNC), naming why',
    first: 'sources: []\n',
    change: (src) => runSqliteCli(src, MISMATCHED),
    then: yml('[t]', target('cache.db', '"*"')),
    expected: { 'enable:t': 'images', 'cache.db': 'refused:NOTHING_TO_SYNC' },
    check: (plan) => expect(plan.targets[0]?.refused?.fix).toContain('the mirror of t cannot be built: KEY_COLLATION_MISMATCH'),
  },
];

describe('plan predicts what one converging pass does, and writes nothing', () => {
  for (const s of SCENARIOS)
    test(s.name, async ({ tmp, makeDb }) => {
      const { db } = makeDb('app.db', SCHEMA);
      db.close();
      const file = path.join(tmp, 'sluice.yml');
      fs.writeFileSync(file, s.first);
      const first = await convergeOnce(await loadPipeline(file));
      expect(first.targets.every((t) => t.error === null)).toBe(true);
      fs.writeFileSync(file, s.then);
      s.change?.(path.join(tmp, 'app.db'));
      const pipeline = await loadPipeline(file);

      const before = filesIn(tmp);
      const plan = await planPipeline(pipeline);
      expect(filesIn(tmp), 'plan leaves every file as it was and makes none').toEqual(before);
      // health --config, read beside it: what it flags as not declared, plan lists; "nothing to do" never beside a health that needs action.
      const health = withPlannedChanges(await readPipelineQuietly(pipeline, () => pipelineHealth(pipeline)), plan);
      expect(listed(plan, tmp), 'plan lists what health --config flags as not declared').toEqual(flagged(health, tmp));
      if (plan.converged) expect(health.problems, 'plan says nothing to do: health --config needs no action').toEqual([]);

      const held = heldBy(pipeline);
      const acks = acksOf(path.join(tmp, 'app.db'));
      const predicted = said(plan, tmp);
      const report = await convergeOnce(pipeline);
      expect(done(report, held, acks, tmp, pipeline), 'the pass does what plan said').toEqual(predicted);
      expect(predicted).toEqual(s.expected);
      s.check?.(plan);
    });

  test('plan classifies a changed definition as explain does', async ({ tmp, makeDb }) => {
    const { db } = makeDb('app.db', SCHEMA);
    db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, yml('[items]', target('cache.db', '"*"', CHEAP)));
    await convergeOnce(await loadPipeline(file));
    fs.writeFileSync(file, yml('[items]', target('cache.db', '"*"', CHEAP.replace('qty < 100', 'qty < 10'))));
    const pipeline = await loadPipeline(file);
    const plan = await planPipeline(pipeline);
    const t = pipeline.sources[0]!.targets[0]!;
    const explained = await explainAlter(pipeline.sources[0]!.path, t.path, { projections: declaredInputs(t.projections) });
    expect(plan.targets[0]?.projections.map((p) => [p.name, p.classification])).toEqual(
      explained.projections.map((p) => [p.name, p.classification]),
    );
  });
});
