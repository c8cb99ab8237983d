import fc from 'fast-check';

/*
 * Operations for the two-writers property: each is plain data (so fast-check
 * prints a shrunk case readably) rendered to one SQL statement that either
 * writer runs as it is. Rows are picked by position inside the SQL, so an
 * operation means the same thing whatever the tables hold.
 *
 * items: only the PRIMARY KEY is unique. people: a secondary UNIQUE email
 * (NOCASE, so 'a@x' and 'A@X' collide) and a NOCASE name.
 */

export const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, v, updated_at INTEGER);
CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT UNIQUE COLLATE NOCASE, name TEXT COLLATE NOCASE, v, updated_at INTEGER);
`;

/** Rows before capture: they reach consumers by snapshot. */
export const SEED = `
INSERT INTO items VALUES (1, 'ann', 1, NULL), (2, 'Bob', X'', NULL), (3, '', 1.5, 7);
INSERT INTO people VALUES (1, 'a@x', 'ann', NULL, NULL), (2, 'B@x', 'Bob', '', 3), (3, NULL, 'zed', 9223372036854775807, NULL);
`;

export type Table = 'items' | 'people';
export const TABLES: readonly Table[] = ['items', 'people'];
const OTHER: Record<Table, Table> = { items: 'people', people: 'items' };

/** SQL literals: NULL vs '' vs X'', int64 extremes, REAL, NOCASE-equal TEXT, malformed UTF-8. */
const VALUES = [
  'NULL',
  "''",
  "X''",
  "X'00ff'",
  '0',
  '1',
  '-1',
  '9223372036854775807',
  '-9223372036854775808',
  '1.0',
  '1.5',
  '0.1',
  '-2.5e300',
  "'a'",
  "'A'",
  "'é'",
  "CAST(X'ff41' AS TEXT)",
];
const NAMES = ['NULL', "''", "'ann'", "'Ann'", "'ANN'", "'bob'", "'Bob'", "'zed'", "'ann bob'"];
const EMAILS = ['NULL', "''", "'a@x'", "'A@X'", "'b@x'", "'B@X'", "'c@x'"];
const STAMPS = ['NULL', '0', '1', '5'];

const id = fc.integer({ min: 1, max: 6 });
const pick = fc.nat({ max: 20 });
const table = fc.constantFrom<Table>(...TABLES);

const rowArb = fc.record({
  name: fc.constantFrom(...NAMES),
  v: fc.constantFrom(...VALUES),
  email: fc.constantFrom(...EMAILS),
  updated_at: fc.constantFrom(...STAMPS),
});
export type RowValues = typeof rowArb extends fc.Arbitrary<infer T> ? T : never;

const setArb = fc.record(
  {
    name: fc.constantFrom(...NAMES),
    v: fc.constantFrom(...VALUES),
    email: fc.constantFrom(...EMAILS),
    updated_at: fc.constantFrom(...STAMPS),
  },
  { requiredKeys: [] },
);

export type Stmt =
  | { s: 'insert'; verb: 'INSERT' | 'INSERT OR REPLACE' | 'REPLACE' | 'INSERT OR IGNORE'; t: Table; id: number; row: RowValues }
  | { s: 'upsert'; verb: 'INSERT' | 'INSERT OR REPLACE'; t: Table; id: number; row: RowValues; on: 'id' | 'email' | 'any' }
  | { s: 'copy'; verb: 'INSERT OR REPLACE' | 'INSERT OR IGNORE'; t: Table; by: number }
  | { s: 'shift'; t: Table; by: number; orReplace: boolean }
  | { s: 'update'; t: Table; pick: number; set: Partial<RowValues>; orReplace: boolean }
  | { s: 'rekey'; t: Table; pick: number; id: number; orReplace: boolean }
  | { s: 'delete'; t: Table; pick: number }
  | { s: 'recase'; t: Table };

export type Trigger = 'touch' | 'audit' | 'predelete';
export type Writer = 'js' | 'py';

export type Step =
  | { w: Writer; stmt: Stmt }
  | { w: Writer; txn: { before: Stmt[]; savepoint: { stmts: Stmt[]; rollback: boolean } | null; after: Stmt[]; commit: boolean } }
  | { w: Writer; trigger: Trigger; t: Table }
  | { sync: number | null };

const stmtArb: fc.Arbitrary<Stmt> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      s: fc.constant('insert' as const),
      verb: fc.constantFrom('INSERT' as const, 'INSERT OR IGNORE' as const),
      t: table,
      id,
      row: rowArb,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      s: fc.constant('insert' as const),
      verb: fc.constantFrom('INSERT OR REPLACE' as const, 'REPLACE' as const),
      t: table,
      id,
      row: rowArb,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      s: fc.constant('upsert' as const),
      verb: fc.constantFrom('INSERT' as const, 'INSERT OR REPLACE' as const),
      t: table,
      id,
      row: rowArb,
      on: fc.constantFrom('id' as const, 'email' as const, 'any' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      s: fc.constant('copy' as const),
      verb: fc.constantFrom('INSERT OR REPLACE' as const, 'INSERT OR IGNORE' as const),
      t: table,
      by: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ s: fc.constant('shift' as const), t: table, by: fc.constantFrom(1, -1), orReplace: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ s: fc.constant('update' as const), t: table, pick, set: setArb, orReplace: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({ s: fc.constant('rekey' as const), t: table, pick, id: fc.integer({ min: 1, max: 8 }), orReplace: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ s: fc.constant('delete' as const), t: table, pick }) },
  { weight: 1, arbitrary: fc.record({ s: fc.constant('recase' as const), t: table }) },
);

const writer = fc.constantFrom<Writer>('js', 'py');

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ w: writer, stmt: stmtArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      w: writer,
      txn: fc.record({
        before: fc.array(stmtArb, { maxLength: 3 }),
        savepoint: fc.option(fc.record({ stmts: fc.array(stmtArb, { minLength: 1, maxLength: 3 }), rollback: fc.boolean() }), { freq: 2 }),
        after: fc.array(stmtArb, { maxLength: 2 }),
        commit: fc.boolean(),
      }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ w: writer, trigger: fc.constantFrom<Trigger>('touch', 'audit', 'predelete'), t: table }) },
  { weight: 3, arbitrary: fc.record({ sync: fc.option(fc.integer({ min: 1, max: 4 }), { freq: 2 }) }) },
);

/**
 * User triggers that exist before capture is enabled: sluice's triggers are
 * then the newer ones, the order a re-arm after a user trigger would leave.
 */
export const preTriggersArb = fc.subarray(
  (['touch', 'audit', 'predelete'] as const).flatMap((trigger) => TABLES.map((t) => ({ trigger, t }))),
  { maxLength: 3 },
);

function columns(t: Table): (keyof RowValues)[] {
  return t === 'people' ? ['email', 'name', 'v', 'updated_at'] : ['name', 'v', 'updated_at'];
}

/** The id of the (pick mod count)-th row, by id. */
function picked(t: Table, n: number): string {
  return `(SELECT id FROM ${t} ORDER BY id LIMIT 1 OFFSET ${n} % max(1, (SELECT count(*) FROM ${t})))`;
}

export function renderStmt(s: Stmt): string {
  switch (s.s) {
    case 'insert':
    case 'upsert': {
      const cols = columns(s.t);
      const head = `${s.verb} INTO ${s.t} (id, ${cols.join(', ')}) VALUES (${s.id}, ${cols.map((c) => s.row[c]).join(', ')})`;
      if (s.s === 'insert') return head;
      const set = 'DO UPDATE SET name = excluded.name, v = excluded.v, updated_at = coalesce(updated_at, 0) + 1';
      if (s.on === 'any') return `${head} ON CONFLICT ${set}`;
      if (s.on === 'email' && s.t === 'people')
        return `${head} ON CONFLICT (email) ${set} ON CONFLICT (id) DO UPDATE SET email = excluded.email`;
      return `${head} ON CONFLICT (id) ${set}`;
    }
    case 'update': {
      const set = columns(s.t).filter((c) => s.set[c] !== undefined);
      const assignments = set.length === 0 ? 'v = v' : set.map((c) => `${c} = ${s.set[c]}`).join(', ');
      return `UPDATE${s.orReplace ? ' OR REPLACE' : ''} ${s.t} SET ${assignments} WHERE id = ${picked(s.t, s.pick)}`;
    }
    case 'copy': {
      // Many rows in one statement, each onto the next key: for people also onto its source row's email.
      const cols = columns(s.t).join(', ');
      return `${s.verb} INTO ${s.t} (id, ${cols}) SELECT id + ${s.by}, ${cols} FROM ${s.t} WHERE id < 90 ORDER BY id`;
    }
    case 'shift':
      // Many key changes in one statement, each onto the key of a row not moved yet.
      return `UPDATE${s.orReplace ? ' OR REPLACE' : ''} ${s.t} SET id = id + ${s.by} WHERE id < 90`;
    case 'rekey':
      return `UPDATE${s.orReplace ? ' OR REPLACE' : ''} ${s.t} SET id = ${s.id} WHERE id = ${picked(s.t, s.pick)}`;
    case 'delete':
      return `DELETE FROM ${s.t} WHERE id = ${picked(s.t, s.pick)}`;
    case 'recase':
      // A case-only change: equal under NOCASE, a real change to capture.
      return `UPDATE ${s.t} SET name = CASE WHEN name = upper(name) COLLATE BINARY THEN lower(name) ELSE upper(name) END`;
  }
}

/** User triggers a writer creates mid-run, after capture was enabled. */
export function renderTrigger(trigger: Trigger, t: Table): string {
  switch (trigger) {
    case 'touch':
      return `CREATE TRIGGER IF NOT EXISTS user_touch_${t} AFTER UPDATE ON ${t} FOR EACH ROW WHEN NEW.updated_at IS OLD.updated_at BEGIN
  UPDATE ${t} SET updated_at = coalesce(NEW.updated_at, 0) + 1 WHERE id = NEW.id;
END`;
    case 'audit':
      // Not for audit rows themselves: with recursive_triggers on, two such triggers would recurse without end.
      return `CREATE TRIGGER IF NOT EXISTS user_audit_${t} AFTER INSERT ON ${t} FOR EACH ROW WHEN NEW.id < 100 BEGIN
  INSERT OR IGNORE INTO ${OTHER[t]} (id, name, v) VALUES (NEW.id + 100, 'audit ' || NEW.id, NEW.v);
END`;
    case 'predelete':
      return `CREATE TRIGGER IF NOT EXISTS user_predelete_${t} BEFORE INSERT ON ${t} FOR EACH ROW BEGIN
  DELETE FROM ${t} WHERE id = NEW.id;
END`;
  }
}

/** The statements of one step, in order (a sync step has none). */
export function renderStep(step: Step): string[] {
  if ('sync' in step) return [];
  if ('stmt' in step) return [renderStmt(step.stmt)];
  if ('trigger' in step) return [renderTrigger(step.trigger, step.t)];
  const { before, savepoint, after, commit } = step.txn;
  return [
    'BEGIN IMMEDIATE',
    ...before.map(renderStmt),
    ...(savepoint === null
      ? []
      : ['SAVEPOINT sp', ...savepoint.stmts.map(renderStmt), ...(savepoint.rollback ? ['ROLLBACK TO sp'] : []), 'RELEASE sp']),
    ...after.map(renderStmt),
    commit ? 'COMMIT' : 'ROLLBACK',
  ];
}

/** Constraint failures an application expects and shrugs off: the statement alone is undone. */
export function isExpectedConflict(message: string): boolean {
  return /^(UNIQUE|NOT NULL) constraint failed/.test(message);
}
