/*
 * Per-column collations of a table, read from its CREATE TABLE text.
 * pragma_table_xinfo does not report them, and projections must evaluate
 * expressions with the same collation as the source column, so both the
 * snapshot and the incremental path compare text the same way.
 */
import type { Db } from './connection.ts';
import { collationSql } from './column-decl.ts';
import { foldIdent } from './quote.ts';

/** A token of SQL text: a bare word as written, a quoted name unquoted, a string literal as written (its quotes kept, doubled quotes made single), other punctuation. */
export type SqlToken = { readonly text: string; readonly kind: 'word' | 'quoted' | 'punct' };
type Token = SqlToken;

function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i] as string;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === '-' && sql[i + 1] === '-') {
      while (i < sql.length && sql[i] !== '\n') i++;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (ch === '"' || ch === '`' || ch === "'" || ch === '[') {
      const close = ch === '[' ? ']' : ch;
      let j = i + 1;
      let text = '';
      for (;;) {
        if (j >= sql.length) break;
        if (sql[j] === close) {
          if (close !== ']' && sql[j + 1] === close) {
            text += close;
            j += 2;
            continue;
          }
          break;
        }
        text += sql[j];
        j++;
      }
      out.push({ text: ch === "'" ? `'${text}'` : text, kind: ch === "'" ? 'punct' : 'quoted' });
      i = j + 1;
    } else if (/[A-Za-z0-9_\u0080-\uffff$]/.test(ch)) {
      let j = i;
      while (j < sql.length && /[A-Za-z0-9_\u0080-\uffff$]/.test(sql[j] as string)) j++;
      out.push({ text: sql.slice(i, j), kind: 'word' });
      i = j;
    } else {
      out.push({ text: ch, kind: 'punct' });
      i++;
    }
  }
  return out;
}

const CONSTRAINT_STARTS = new Set(['CONSTRAINT', 'PRIMARY', 'UNIQUE', 'CHECK', 'FOREIGN']);

/** The column and table-constraint definitions of a CREATE TABLE, split at its top-level commas. */
function definitions(createSql: string): Token[][] {
  const tokens = tokenize(createSql);
  const open = tokens.findIndex((t) => t.text === '(');
  const defs: Token[][] = [];
  if (open < 0) return defs;
  let depth = 0;
  let current: Token[] = [];
  for (let i = open + 1; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === 'punct' && t.text === '(') depth++;
    if (t.kind === 'punct' && t.text === ')') {
      if (depth === 0) {
        defs.push(current);
        break;
      }
      depth--;
    }
    if (depth === 0 && t.kind === 'punct' && t.text === ',') {
      defs.push(current);
      current = [];
      continue;
    }
    current.push(t);
  }
  return defs;
}

/**
 * The module and arguments of a CREATE VIRTUAL TABLE, each argument as its
 * tokens; undefined for another statement (a CREATE TABLE).
 */
export function virtualTableArguments(createSql: string): { module: string; args: SqlToken[][] } | undefined {
  const tokens = tokenize(createSql);
  const head = tokens.slice(0, 3).map((t) => t.text.toUpperCase());
  if (head[0] !== 'CREATE' || head[1] !== 'VIRTUAL' || head[2] !== 'TABLE') return undefined;
  const open = tokens.findIndex((t) => t.text === '(');
  const using = tokens.findIndex((t) => t.kind === 'word' && t.text.toUpperCase() === 'USING');
  const module = tokens[using + 1];
  if (using < 0 || module === undefined) return undefined;
  // A module given no arguments has no parentheses.
  const args = open < 0 ? [] : definitions(createSql);
  return { module: module.text, args: args.length === 1 && args[0]?.length === 0 ? [] : args };
}

/**
 * Column name (as written) to every name its definition mentions after the
 * name: bare words, quoted names and string literals (which SQLite may read
 * as a name; `literals: false` leaves them out, for an expression, where
 * a quoted string is always a string), all unquoted. A superset of the
 * columns a generated column's expression reads; table constraints are
 * left out.
 */
export function columnDefinitionNames(createSql: string, options: { readonly literals?: boolean } = {}): Map<string, string[]> {
  const literals = options.literals !== false;
  const result = new Map<string, string[]>();
  for (const def of definitions(createSql)) {
    const first = def[0];
    if (first === undefined) continue;
    if (first.kind === 'word' && CONSTRAINT_STARTS.has(first.text.toUpperCase())) continue;
    const names = def
      .slice(1)
      .flatMap((t) => (t.kind !== 'punct' ? [t.text] : literals && t.text.startsWith("'") ? [t.text.slice(1, -1)] : []));
    result.set(first.text, names);
  }
  return result;
}

/** Column name (as written) to collation name, for columns that declare one. */
export function columnCollations(createSql: string): Map<string, string> {
  const result = new Map<string, string>();
  const defs = definitions(createSql);
  for (const def of defs) {
    const first = def[0];
    if (first === undefined) continue;
    if (first.kind === 'word' && CONSTRAINT_STARTS.has(first.text.toUpperCase())) continue;
    let depthInDef = 0;
    for (let i = 1; i < def.length; i++) {
      const t = def[i] as Token;
      if (t.text === '(') depthInDef++;
      else if (t.text === ')') depthInDef--;
      else if (depthInDef === 0 && t.kind === 'word' && t.text.toUpperCase() === 'COLLATE') {
        const name = def[i + 1];
        if (name !== undefined) result.set(first.text, name.text);
      }
    }
  }
  return result;
}

/** The collation of a column (BINARY when none is declared). Column names compare as in SQLite (ASCII case folded). */
export function collationOf(collations: ReadonlyMap<string, string>, column: string): string {
  for (const [k, v] of collations) if (foldIdent(k) === foldIdent(column)) return v.toUpperCase();
  return 'BINARY';
}

/**
 * Whether connection `db` has collation `name`: SQLite's built-in BINARY,
 * NOCASE and RTRIM. One an application registers on its own connections
 * (Python's create_collation) is unknown to sluice's, where any statement
 * naming it fails ("no such collation sequence"). Compiles only.
 */
export function collationKnown(db: Db, name: string): boolean {
  try {
    db.prepare(`SELECT '' = '' COLLATE ${collationSql(name)}`); // (a collation is looked up where it compares)
    return true;
  } catch {
    return false;
  }
}
