import type { Db } from '../../sqlite/index.ts';
import {
  schemaVersion,
  type SqlToken,
  virtualTableArguments,
  affinityOf,
  collationOf,
  columnCollations,
  connectionState,
  foldIdent,
  quoteIdent,
  slot,
} from '../../sqlite/index.ts';
import { kindOf, ownedTablesAt, type CompiledProjection } from '../../projection/index.ts';

/*
 * The one rule for the shape of a projection's tables in the target, which
 * sync (before each batch it applies: apply/sync/batch-path.ts, also for
 * import and subscribe) and health (health-target.ts) share: each table its
 * kind makes has the columns create() gives it (tableColumns), each
 * declared with a type of the same affinity and with the same collation,
 * and the keys its writes find or replace rows by (keyedBy), under those
 * collations. A table changed by hand (a column dropped, renamed or added;
 * made again by the 12-step recipe with `v INTEGER` for `v TEXT`, or with
 * its key COLLATE NOCASE) would have a batch fail on a column it writes,
 * store the source's text '3' as the integer 3, or take two keys the source
 * holds apart for one: the projection is suspended (TARGET_TABLE_CHANGED)
 * before anything is written, and health and verify say the same. A
 * virtual table (an FTS5 index) is also held to the declaration create()
 * writes (its module, columns and options, compared as SQLite reads them):
 * one made again by hand with a column UNINDEXED, another tokenizer, detail
 * or prefix, or other content options answers searches unlike the
 * definition's index even where FTS5's integrity-check agrees. A table that is
 * missing is another problem (health-target.ts says it). A custom handler's
 * tables are its own: its kind lists none.
 *
 * A follower asks before each batch, and sync's step also when it has
 * nothing to apply (a table dropped, renamed away or reshaped while the
 * source was idle: missingTable for the first), so the answers are kept
 * per connection and schema while the schema's schema_version is unchanged
 * (any DDL changes it): when nothing changed, the cost is that one PRAGMA.
 */

/** What is wrong with a table of a projection: the table, the column or the key, and the message. */
export interface ShapeProblem {
  readonly table: string;
  readonly column?: string;
  readonly key?: readonly string[];
  readonly message: string;
}

/** The first problem with the shape of projection `p`'s tables in `schema`, or undefined when each is as its kind makes it. */
export function tableShapeProblem(db: Db, schema: string, p: CompiledProjection): ShapeProblem | undefined {
  return answerOf(db, schema, p).shape;
}

/**
 * The first of projection `p`'s tables that its kind makes (not a custom
 * handler's) missing from `schema` (dropped or renamed away by hand), or
 * undefined; health-target.ts says it with its repair.
 */
export function missingTable(db: Db, schema: string, p: CompiledProjection): string | undefined {
  return answerOf(db, schema, p).missing;
}

/** What `schema` holds of `p`'s tables: read once per schema_version of it and rule (ruleOf), on this connection. */
interface Answer {
  readonly missing: string | undefined;
  readonly shape: ShapeProblem | undefined;
}

function answerOf(db: Db, schema: string, p: CompiledProjection): Answer {
  const version = schemaVersion(db, schema);
  const all = connectionState(db).get(shapeAnswers);
  let at = all.get(schema);
  if (at === undefined || at.version !== version) all.set(schema, (at = { version, answers: new Map() }));
  const id = ruleOf(p);
  let answer = at.answers.get(id);
  if (answer === undefined) at.answers.set(id, (answer = { missing: missingOf(db, schema, p), shape: shapeProblem(db, schema, p) }));
  return answer;
}

/** Per schema of a connection: its schema_version when the answers were read, and the answer for each rule (ruleOf). */
const shapeAnswers = slot('target-shape-answers', () => new Map<string, { version: number; answers: Map<string, Answer> }>());

function missingOf(db: Db, schema: string, p: CompiledProjection): string | undefined {
  if (!kindOf(p).makesTables) return undefined;
  const exists = db.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`);
  return ownedTablesAt(p, p.targetTable).find((t) => exists.get(t) === undefined);
}

/** What the answer for `p` depends on (its name, tables, columns and keys), as a key; made once per compiled projection. */
const rules = new WeakMap<CompiledProjection, string>();
function ruleOf(p: CompiledProjection): string {
  let id = rules.get(p);
  if (id === undefined) {
    const kind = kindOf(p);
    rules.set(p, (id = JSON.stringify([p.name, kind.tableColumns(p), kind.keyedBy(p)])));
  }
  return id;
}

/** A table's columns as the target has them: name, declared type and collation (by name, ASCII case folded). */
interface Actual {
  readonly columns: readonly { readonly name: string; readonly type: string }[];
  readonly collation: (column: string) => string;
}

function shapeProblem(db: Db, schema: string, p: CompiledProjection): ShapeProblem | undefined {
  const kind = kindOf(p);
  const tables = kind.tableColumns(p);
  const read = new Map<string, Actual | undefined>();
  const actualOf = (table: string) => {
    if (!read.has(foldIdent(table))) read.set(foldIdent(table), actual(db, schema, table));
    return read.get(foldIdent(table));
  };
  const what = (table: string) => `table ${table} of projection ${p.name}`;
  // A plain table (or another module's) made where its definition makes a virtual table first (it has other columns,
  // but that is not what is wrong), then names (a key column dropped is a column missing, not a key), then a virtual
  // table's declaration (its columns' order and flags, its options), then keys, then declared types and collations.
  const declared = new Map<string, { readonly off: Declared; readonly noun: string }>();
  for (const t of tables) {
    if (t.virtual === undefined || actualOf(t.table) === undefined) continue;
    const off = declarationProblem(db, schema, t.table, t.virtual);
    if (off === undefined) continue;
    if (off.module) return { table: t.table, message: virtualMessage(what(t.table), off.text, t.virtual.noun) };
    declared.set(t.table, { off, noun: t.virtual.noun });
  }
  for (const t of tables) {
    const have = actualOf(t.table);
    if (have === undefined) continue;
    const want = new Set(t.columns.map((c) => foldIdent(c.name)));
    const got = new Set(have.columns.map((c) => foldIdent(c.name)));
    const extra = have.columns.map((c) => c.name).filter((c) => !want.has(foldIdent(c)));
    const missing = t.columns.map((c) => c.name).filter((c) => !got.has(foldIdent(c)));
    if (extra.length === 0 && missing.length === 0) continue;
    const parts = [
      ...(extra.length > 0 ? [`not in the definition: ${extra.join(', ')}`] : []),
      ...(missing.length > 0 ? [`missing: ${missing.join(', ')}`] : []),
    ];
    return {
      table: t.table,
      message: `${what(t.table)} has other columns than its definition (${parts.join('; ')}; a column added, dropped or renamed by hand?), so a sync could not write its rows as the definition makes them`,
    };
  }
  for (const [table, d] of declared) return { table, message: virtualMessage(what(table), d.off.text, d.noun) };
  for (const k of kind.keyedBy(p)) {
    const declared = tables.find((t) => foldIdent(t.table) === foldIdent(k.table));
    const collation = (column: string) => declared?.columns.find((c) => foldIdent(c.name) === foldIdent(column))?.collate;
    const lack = keyLack(db, schema, k.table, k.key, k.rowid === true, collation);
    if (lack === undefined) continue;
    const message =
      lack.kind === 'none'
        ? `${what(k.table)} has ${k.rowid === true ? `no INTEGER PRIMARY KEY ${k.key.join(', ')}` : `no PRIMARY KEY or UNIQUE index on its key (${k.key.join(', ')})`}, ${k.uses} (made again by hand, by CREATE TABLE ... AS SELECT?), so ${k.without}`
        : `${what(k.table)} has its key (${k.key.join(', ')}) under collation ${lack.has} where its definition has ${lack.wants} (column ${lack.column}; made again by hand?), so two keys the source holds apart could be one to it, and a sync would replace the row of one by the other's or fail`;
    return { table: k.table, key: k.key, message };
  }
  for (const t of tables) {
    const have = actualOf(t.table);
    if (have === undefined) continue;
    for (const c of t.columns) {
      const got = have.columns.find((x) => foldIdent(x.name) === foldIdent(c.name));
      if (got === undefined) continue;
      if (c.type !== undefined && affinityOf(got.type) !== affinityOf(c.type))
        return {
          table: t.table,
          column: c.name,
          message: `column ${c.name} of ${what(t.table)} is declared ${typeText(got.type)}, but its definition declares ${typeText(c.type)} (made again by hand?), so a sync would store values converted by that affinity, not as the definition makes them (an INTEGER column stores the text '3' as the integer 3)`,
        };
      const coll = have.collation(c.name);
      if (c.collate !== undefined && coll !== c.collate.toUpperCase())
        return {
          table: t.table,
          column: c.name,
          message: `column ${c.name} of ${what(t.table)} has collation ${coll}, where its definition has ${c.collate.toUpperCase()} (made again by hand?), so its values would sort and compare by another rule than the source's`,
        };
    }
  }
  return undefined;
}

/** What is wrong with a virtual table's declaration, as a message says it. */
function virtualMessage(what: string, off: string, noun: string): string {
  return `${what} ${off} (made again by hand?), so it would not answer as the ${noun} its definition makes, whatever rows it holds`;
}

/** A declared type as a message says it: the type and its affinity. */
function typeText(type: string): string {
  return type.trim() === '' ? 'with no type (BLOB affinity)' : `${type} (${affinityOf(type)} affinity)`;
}

/** The columns of `table` in `schema` and their collations; undefined when it is missing (another problem). */
function actual(db: Db, schema: string, table: string): Actual | undefined {
  // The schema as the pragma's argument: a schema before the function's name does not choose where the table is looked up
  // (sync's connection has the source's table of the same name in main).
  const columns = db.prepare('SELECT name, type FROM pragma_table_info(?, ?)').all(table, schema) as { name: string; type: string }[];
  if (columns.length === 0) return undefined;
  const sql = db
    .prepare(`SELECT sql FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`)
    .pluck()
    .get(table) as string | null | undefined;
  const collations = columnCollations(sql ?? '');
  return { columns, collation: (column) => collationOf(collations, column) };
}

/**
 * What `table` lacks of a PRIMARY KEY, or a UNIQUE index that is not
 * partial, on exactly the columns `key` (in any order) under the
 * collations `collation` gives them (as its kind's create() makes it), if
 * anything: none at all, or only one under another collation. `rowid`:
 * only an INTEGER PRIMARY KEY on the one column (the table's rowid)
 * counts. A table that is missing lacks nothing here (another problem).
 */
function keyLack(
  db: Db,
  schema: string,
  table: string,
  key: readonly string[],
  rowid: boolean,
  collation: (column: string) => string | undefined,
): { kind: 'none' } | { kind: 'collation'; column: string; has: string; wants: string } | undefined {
  const want = [...key].map((k) => foldIdent(k)).sort();
  const same = (cols: readonly string[]) =>
    cols.length === want.length &&
    [...cols]
      .map((c) => foldIdent(c))
      .sort()
      .every((c, i) => c === want[i]);
  const columns = db.prepare('SELECT name, type, pk FROM pragma_table_info(?, ?)').all(table, schema) as {
    name: string;
    type: string;
    pk: number | bigint;
  }[];
  if (columns.length === 0) return undefined;
  const pk = columns.filter((c) => Number(c.pk) > 0);
  if (rowid)
    return pk.length === 1 && same(pk.map((c) => c.name)) && pk[0]?.type.toUpperCase() === 'INTEGER' ? undefined : { kind: 'none' };
  const indexes = db.prepare(`SELECT name, origin FROM pragma_index_list(?, ?) WHERE "unique" = 1 AND partial = 0`).all(table, schema) as {
    name: string;
    origin: string;
  }[];
  // A rowid alias (INTEGER PRIMARY KEY) has no index: the rowid is the key, an integer, which no collation compares.
  if (same(pk.map((c) => c.name)) && !indexes.some((i) => i.origin === 'pk')) return undefined;
  let other: { kind: 'collation'; column: string; has: string; wants: string } | undefined;
  for (const i of indexes) {
    const cols = db.prepare('SELECT name, coll FROM pragma_index_xinfo(?, ?) WHERE key = 1').all(i.name, schema) as {
      name: string | null;
      coll: string;
    }[];
    if (cols.some((c) => c.name === null) || !same(cols.map((c) => c.name as string))) continue;
    const off = cols.find((c) => {
      const wants = collation(c.name as string);
      return wants !== undefined && c.coll.toUpperCase() !== wants.toUpperCase();
    });
    if (off === undefined) return undefined;
    other ??= {
      kind: 'collation',
      column: off.name as string,
      has: off.coll.toUpperCase(),
      wants: (collation(off.name as string) ?? '').toUpperCase(),
    };
  }
  return other ?? { kind: 'none' };
}

/** An argument of a virtual table's declaration as SQLite reads it: an option (`key=value`) or a column and its flags (UNINDEXED). */
interface Argument {
  /** Compared: the option's folded key, or the column's folded name. */
  readonly key: string;
  readonly option: boolean;
  /** Compared: the option's value unquoted, or the column's flags, upper case. */
  readonly value: string;
  /** As a message shows it. */
  readonly text: string;
}

function argumentOf(tokens: readonly SqlToken[]): Argument {
  const shown = (t: SqlToken) => (t.kind === 'quoted' ? quoteIdent(t.text) : t.text);
  const bare = (t: SqlToken) => (t.kind === 'punct' && t.text.startsWith("'") ? t.text.slice(1, -1) : t.text);
  const [first, second] = tokens;
  const name = first === undefined ? '' : first.text;
  if (second?.kind === 'punct' && second.text === '=') {
    const value = tokens.slice(2);
    return {
      key: foldIdent(name),
      option: true,
      value: value.map(bare).join(' ').trim().replace(/\s+/g, ' '),
      text: `${name}=${value.map(shown).join(' ')}`,
    };
  }
  const flags = tokens.slice(1).map((t) => t.text.toUpperCase());
  return { key: foldIdent(name), option: false, value: flags.join(' '), text: [name, ...flags].join(' ') };
}

/** How a virtual table's declaration differs from its definition's: `module`, a plain table or another module's. */
interface Declared {
  readonly module: boolean;
  readonly text: string;
}

/**
 * How the declaration of virtual table `table` differs from `want` (its
 * module and arguments as its kind's create() writes them), as a message
 * part ("is declared otherwise than the FTS5 index its definition makes
 * (...)"), if it does. Columns compare in order, by name (case folded) and flags; options
 * by key, in any order, by value.
 */
function declarationProblem(
  db: Db,
  schema: string,
  table: string,
  want: { readonly module: string; readonly args: readonly string[]; readonly noun: string },
): Declared | undefined {
  const sql = db
    .prepare(`SELECT sql FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`)
    .pluck()
    .get(table) as string | null | undefined;
  const has = virtualTableArguments(sql ?? '');
  if (has === undefined)
    return { module: true, text: `is a plain table, where its definition makes an ${want.noun} (USING ${want.module})` };
  if (foldIdent(has.module) !== foldIdent(want.module))
    return {
      module: true,
      text: `is a virtual table USING ${has.module}, where its definition makes an ${want.noun} (USING ${want.module})`,
    };
  const wanted = virtualTableArguments(`CREATE VIRTUAL TABLE x USING ${want.module}(${want.args.join(', ')})`)?.args ?? [];
  const got = has.args.map(argumentOf);
  const exp = wanted.map(argumentOf);
  const diffs: string[] = [];
  const cols = (a: readonly Argument[]) => a.filter((x) => !x.option);
  const [gc, ec] = [cols(got), cols(exp)];
  if (gc.length !== ec.length || gc.some((c, i) => c.key !== ec[i]?.key))
    diffs.push(`columns ${gc.map((c) => c.text).join(', ')}, where its definition has ${ec.map((c) => c.text).join(', ')}`);
  else
    for (const [i, c] of gc.entries())
      if (c.value !== ec[i]?.value) diffs.push(`column ${c.text}, where its definition has ${ec[i]?.text ?? ''}`);
  const opts = (a: readonly Argument[]) => new Map(a.filter((x) => x.option).map((x) => [x.key, x]));
  const [go, eo] = [opts(got), opts(exp)];
  for (const key of new Set([...go.keys(), ...eo.keys()])) {
    const [g, e] = [go.get(key), eo.get(key)];
    if (g !== undefined && e !== undefined && g.value === e.value) continue;
    diffs.push(
      g === undefined
        ? `no ${e?.text.split('=')[0] ?? key}=, where its definition has ${e?.text ?? ''}`
        : `${g.text}, where its definition has ${e === undefined ? `no ${g.text.split('=')[0] ?? key}=` : e.text}`,
    );
  }
  return diffs.length === 0
    ? undefined
    : { module: false, text: `is declared otherwise than the ${want.noun} its definition makes (${diffs.join('; ')})` };
}
