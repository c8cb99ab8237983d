import type { Db } from '../sqlite/index.ts';
import { describeTable, foreignKeys, listTables, foldIdent } from '../sqlite/index.ts';
import type { Reason } from '../reasons.ts';

/*
 * Foreign-key boundaries of contract 002. Both checks depend on the schema
 * only (never on row contents) and include uncaptured intermediate tables.
 *
 * 1. ON UPDATE CASCADE / SET NULL / SET DEFAULT must not form a cycle that
 *    returns to a captured table: a nested action could update the outer row
 *    before its AFTER trigger records the outer change.
 * 2. No path that starts with a delete of a captured table and returns to it
 *    as an update of a primary-key column (DELETE CASCADE continues as a
 *    delete, DELETE SET NULL/DEFAULT as an update, then mutating ON UPDATE
 *    actions): the outer delete is journaled after the nested update, which
 *    could reuse a key still present downstream.
 */

export interface FkViolation {
  readonly code: Reason<'FK_UPDATE_CYCLE' | 'FK_DELETE_KEY_UPDATE'>;
  readonly table: string;
  readonly path: readonly string[];
}

const MUTATING = new Set(['CASCADE', 'SET NULL', 'SET DEFAULT']);

interface Edge {
  readonly parent: string;
  readonly child: string;
  /** Parent columns referenced (resolved to the parent's key when omitted). */
  readonly to: readonly string[];
  /** Child columns that hold the reference. */
  readonly from: readonly string[];
  readonly onUpdate: string;
  readonly onDelete: string;
}

function lower(s: string): string {
  return foldIdent(s);
}

function loadEdges(db: Db): { edges: Edge[]; keys: Map<string, string[]>; names: Map<string, string> } {
  const edges: Edge[] = [];
  const keys = new Map<string, string[]>();
  const names = new Map<string, string>();
  for (const t of listTables(db)) {
    names.set(lower(t), t);
    const info = describeTable(db, t);
    keys.set(lower(t), (info?.keyColumns ?? []).map(lower));
  }
  for (const child of listTables(db)) {
    const byId = new Map<number, { table: string; from: string[]; to: (string | null)[]; onUpdate: string; onDelete: string }>();
    for (const fk of foreignKeys(db, child)) {
      const e = byId.get(fk.id) ?? {
        table: fk.table,
        from: [],
        to: [],
        onUpdate: fk.onUpdate.toUpperCase(),
        onDelete: fk.onDelete.toUpperCase(),
      };
      e.from.push(lower(fk.from));
      e.to.push(fk.to === null ? null : lower(fk.to));
      byId.set(fk.id, e);
    }
    for (const e of byId.values()) {
      const parentKey = keys.get(lower(e.table)) ?? [];
      const to = e.to.map((c, i) => c ?? parentKey[i] ?? '');
      edges.push({ parent: lower(e.table), child: lower(child), to, from: e.from, onUpdate: e.onUpdate, onDelete: e.onDelete });
    }
  }
  return { edges, keys, names };
}

export function checkForeignKeyRules(db: Db, captured: readonly string[]): FkViolation[] {
  const { edges, keys, names } = loadEdges(db);
  const display = (t: string) => names.get(t) ?? t;
  const out: FkViolation[] = [];
  const updateEdges = edges.filter((e) => MUTATING.has(e.onUpdate));
  for (const tableName of captured) {
    const t = lower(tableName);
    // Rule 1: a cycle of mutating ON UPDATE edges through t.
    const cycle = findPath(t, t, (n) => updateEdges.filter((e) => e.parent === n).map((e) => e.child));
    if (cycle !== undefined) out.push({ code: 'FK_UPDATE_CYCLE', table: tableName, path: cycle.map(display) });
    // Rule 2: delete of t ... update of a key column of t.
    const path = deleteToKeyUpdate(t, edges, keys.get(t) ?? []);
    if (path !== undefined) out.push({ code: 'FK_DELETE_KEY_UPDATE', table: tableName, path: path.map(display) });
  }
  return out;
}

function findPath(start: string, goal: string, next: (n: string) => string[]): string[] | undefined {
  const seen = new Set<string>();
  const queue: string[][] = next(start).map((n) => [start, n]);
  while (queue.length > 0) {
    const p = queue.shift() as string[];
    const last = p[p.length - 1] as string;
    if (last === goal) return p;
    if (seen.has(last)) continue;
    seen.add(last);
    for (const n of next(last)) queue.push([...p, n]);
  }
  return undefined;
}

type State =
  { readonly table: string; readonly kind: 'delete' } | { readonly table: string; readonly kind: 'update'; readonly column: string };

function deleteToKeyUpdate(t: string, edges: readonly Edge[], keyCols: readonly string[]): string[] | undefined {
  const id = (s: State) => (s.kind === 'delete' ? `${s.table}|d` : `${s.table}|u|${s.column}`);
  const label = (s: State) => (s.kind === 'delete' ? `delete ${s.table}` : `update ${s.table}.${s.column}`);
  const seen = new Set<string>();
  const queue: { state: State; path: string[] }[] = [{ state: { table: t, kind: 'delete' }, path: [label({ table: t, kind: 'delete' })] }];
  while (queue.length > 0) {
    const { state, path } = queue.shift() as { state: State; path: string[] };
    if (state.kind === 'update' && state.table === t && keyCols.includes(state.column) && path.length > 1) return path;
    if (seen.has(id(state))) continue;
    seen.add(id(state));
    for (const e of edges) {
      if (e.parent !== state.table) continue;
      const nexts: State[] = [];
      if (state.kind === 'delete') {
        if (e.onDelete === 'CASCADE') nexts.push({ table: e.child, kind: 'delete' });
        else if (e.onDelete === 'SET NULL' || e.onDelete === 'SET DEFAULT')
          for (const c of e.from) nexts.push({ table: e.child, kind: 'update', column: c });
      } else if (MUTATING.has(e.onUpdate)) {
        e.to.forEach((c, i) => {
          const from = e.from[i];
          if (c === state.column && from !== undefined) nexts.push({ table: e.child, kind: 'update', column: from });
        });
      }
      for (const n of nexts) queue.push({ state: n, path: [...path, label(n)] });
    }
  }
  return undefined;
}
