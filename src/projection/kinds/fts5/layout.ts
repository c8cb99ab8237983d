import type { Db } from '../../../sqlite/index.ts';
import { quoteIdent, quoteString, renameTable, columnDecl, declaredType, writeTransactionSync } from '../../../sqlite/index.ts';
import type { CompiledFts5 } from '../../compiled.ts';
import type { SnapshotBuild, TableColumns, TableKey } from '../../kind.ts';
import { errorCode } from '../../../errors.ts';

/*
 * The tables of an fts5 projection, known here only. The FTS5 table `<t>`
 * and beside it the key table `<t>_src`, which maps each source key to the
 * FTS rowid (the key itself when the source has an INTEGER PRIMARY KEY)
 * and, for `content: external`, keeps the indexed values, which FTS5 reads
 * for snippet() and highlight(). FTS5 makes `<t>_data`, `_idx`, `_docsize`,
 * `_config` (and `_content` when it keeps content itself, which sluice never
 * asks for).
 */

/** The key table's name for an fts5 table `table`. */
export const keyTableOf = (table: string): string => `${table}_src`;

/** The key table's column for the source key's column `i`. */
const keyColumn = (i: number): string => `_k${i}`;

/** Every table of an fts5 projection whose FTS5 table is `table`: the key table, and those FTS5 makes. */
export function allTablesOf(table: string): string[] {
  return ['_src', '_data', '_idx', '_content', '_docsize', '_config'].map((x) => `${table}${x}`);
}

/**
 * The tables FTS5 makes beside an FTS5 table `table` of sluice's (its
 * `_content` only for content it keeps itself, which sluice never asks
 * for): a table of one of these names in the target makes its CREATE fail.
 */
export function ftsMadeTablesOf(table: string): string[] {
  return ['_data', '_idx', '_docsize', '_config'].map((x) => `${table}${x}`);
}

/** SQL names of an fts5 projection's tables and columns, with its FTS5 table at `at` (a shadow while built; default its own). */
export function ftsNames(schema: string, p: CompiledFts5, at: string = p.targetTable) {
  const s = quoteIdent(schema);
  return {
    def: p.definition,
    fts: `${s}.${quoteIdent(at)}`,
    /** FTS5's hidden command column ('delete', 'rebuild', ...): the table's own name. */
    cmd: quoteIdent(at),
    content: `${s}.${quoteIdent(keyTableOf(at))}`,
    keys: p.key.map((_, i) => quoteIdent(keyColumn(i))),
    cols: p.columns.map((c) => quoteIdent(c.name)),
    external: p.definition.content === 'external',
    intKey: p.source.rowidAlias,
  };
}

/**
 * The keys of the key table createFtsTables makes: the UNIQUE on the
 * source key, which sync finds a key's row by, and its rowid, which the
 * index reads its rows by (content_rowid).
 */
export function keyTableKeys(p: CompiledFts5): TableKey[] {
  const table = keyTableOf(p.targetTable);
  return [
    {
      table,
      key: p.key.map((_, i) => keyColumn(i)),
      uses: "which sync finds a key's row by",
      without: 'a sync would add a second row for a key',
    },
    {
      table,
      key: ['rowid'],
      rowid: true,
      uses: 'which the FTS5 index reads its rows by',
      without: 'a sync would write rows with a NULL rowid that the index cannot find',
    },
  ];
}

/**
 * The columns of the tables createFtsTables makes: the FTS5 table's
 * (names only: FTS5 declares no types; its values are text to it; and its
 * declaration, which decides how it tokenizes and answers) and the
 * key table's, its rowid, the key as the source declares it and, for
 * external content, the indexed values as they come.
 */
export function ftsTableColumns(p: CompiledFts5): TableColumns[] {
  const keys = p.key.map((k, i) => {
    const c = p.source.columns.find((x) => x.name === k);
    return { name: keyColumn(i), type: c === undefined ? '' : declaredType(c), collate: c?.collate ?? 'BINARY' };
  });
  const values = p.definition.content === 'external' ? p.columns.map((c) => ({ name: c.name, type: '', collate: 'BINARY' })) : [];
  return [
    {
      table: p.targetTable,
      columns: p.columns.map((c) => ({ name: c.name })),
      virtual: { module: 'fts5', args: ftsArguments(p), noun: 'FTS5 index' },
    },
    { table: keyTableOf(p.targetTable), columns: [{ name: 'rowid', type: 'INTEGER', collate: 'BINARY' }, ...keys, ...values] },
  ];
}

/**
 * The arguments of the FTS5 table createFtsTables makes, whatever name it
 * is made at (it reads the key table by its name once in place): the
 * indexed columns, then the content options and the tokenizer.
 */
export function ftsArguments(p: CompiledFts5): string[] {
  const cols = p.columns.map((c) => quoteIdent(c.name));
  const opts =
    p.definition.content === 'external' ? [`content=${quoteString(keyTableOf(p.targetTable))}`, "content_rowid='rowid'"] : ["content=''"];
  if (p.definition.tokenize !== undefined) opts.push(`tokenize=${quoteString(p.definition.tokenize)}`);
  return [...cols, ...opts];
}

export function createFtsTables(db: Db, schema: string, p: CompiledFts5, at: string): void {
  const n = ftsNames(schema, p, at);
  const keyDecl = p.key.map((k, i) => {
    const c = p.source.columns.find((x) => x.name === k);
    return `${n.keys[i]} ${c === undefined ? '' : columnDecl(c)}`;
  });
  const valueCols = n.external ? p.columns.map((c) => quoteIdent(c.name)) : [];
  db.exec(`CREATE TABLE ${n.content} (rowid INTEGER PRIMARY KEY, ${[...keyDecl, ...valueCols].join(', ')}, UNIQUE (${n.keys.join(', ')}))`);
  db.exec(`CREATE VIRTUAL TABLE ${n.fts} USING fts5(${ftsArguments(p).join(', ')})`);
}

/**
 * Fills the key table and the index from snapshot rows. The index entries
 * are written from the rows themselves, not by FTS5's 'rebuild' (which
 * would read the content table the FTS5 table names: the live one, while a
 * shadow is built).
 */
export function buildFts(db: Db, schema: string, p: CompiledFts5, at: string): SnapshotBuild {
  const n = ftsNames(schema, p, at);
  const srcKeys = p.key.map((k) => `s.${quoteIdent(k)}`);
  const rowid = n.intKey ? `${srcKeys[0]}, ` : '';
  const rowidCol = n.intKey ? 'rowid, ' : '';
  const values = n.external ? `, ${p.columns.map((c) => c.expr).join(', ')}` : '';
  const valueCols = n.external ? `, ${n.cols.join(', ')}` : '';
  const on = p.key.map((k, i) => `s.${quoteIdent(k)} = c.${n.keys[i]}`).join(' AND ');
  let count = 0;
  return {
    async add(rows) {
      for (const part of rows.parts?.() ?? [rows]) {
        const from = part.from('s');
        count += db
          .prepare(
            `INSERT INTO ${n.content} (${rowidCol}${n.keys.join(', ')}${valueCols}) SELECT ${rowid}${srcKeys.join(', ')}${values} FROM ${from}`,
          )
          .run().changes;
        db.exec(
          `INSERT INTO ${n.fts} (rowid, ${n.cols.join(', ')}) SELECT c.rowid, ${p.columns.map((c) => `s.${quoteIdent(c.from ?? c.name)}`).join(', ')} FROM ${from} JOIN ${n.content} c ON ${on}`,
        );
      }
    },
    finish: async () => count,
  };
}

/** Moves an fts5 projection built at `from` to its own names (FTS5 renames its own tables with it). */
export function renameFts(db: Db, schema: string, p: CompiledFts5, from: string): void {
  renameTable(db, schema, from, p.targetTable);
  renameTable(db, schema, keyTableOf(from), keyTableOf(p.targetTable));
}

/**
 * Whether an external-content index holds exactly the entries of its key
 * table's values: FTS5's own 'integrity-check' with rank 1, which reads
 * the content table (an entry planted in the index, or one left of a row
 * of the key table that was changed, fails it). Run in the caller's write
 * transaction, in a savepoint (it writes nothing). Undefined for a
 * contentless index: it keeps no values to check entries against.
 */
export function ftsIndexMatches(db: Db, schema: string, p: CompiledFts5): boolean | undefined {
  const n = ftsNames(schema, p);
  if (!n.external) return undefined;
  try {
    // The check writes nothing it should keep: its savepoint is always rolled back.
    return writeTransactionSync(
      db,
      () => {
        db.exec(`INSERT INTO ${n.fts} (${n.cmd}, rank) VALUES ('integrity-check', 1)`);
        return true;
      },
      { keep: () => false },
    );
  } catch (err) {
    if (errorCode(err) === 'SQLITE_CORRUPT_VTAB') return false;
    throw err;
  }
}
