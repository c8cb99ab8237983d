import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../sqlite/index.ts';
import { openUntouched, listTables, describeTable, foldIdent, type TableInfo, requireOutputPath } from '../sqlite/index.ts';
import { capturable, checkNamespace, readTables, refuseTarget, type CaptureMode } from '../capture/index.ts';
import { CaptureRefusedError, errorCode, InvalidInputError } from '../errors.ts';
import { defaultProjectionName, isProjectionName } from '../projection/index.ts';

/*
 * The first pipeline file of a database (`sluice init DB`): its tables as
 * the capture list, a target with a mirror of every one ("*"), and an fts5
 * index over the text columns of one table, commented out, as an example to
 * take or leave. Every line a newcomer would ask about carries a comment.
 * A table the source captures already is declared in the mode it has (a
 * map, when one is not images): the file describes the source as it is, so
 * that run re-arms nothing. When each table is in keys or counter mode,
 * "*" would mirror none (sync refuses such a target: NOTHING_TO_SYNC), so
 * the target is written commented out, with why.
 * The text loads as it is (loadPipeline, checkPipelineSources), and still
 * does with the example uncommented.
 */

export interface InitFile {
  /** The file's text. */
  readonly text: string;
  /** The tables it captures. */
  readonly tables: readonly string[];
  /** Tables it leaves out, listed commented out with why (a capture refusal code and its message). */
  readonly skipped: readonly { readonly table: string; readonly code: string; readonly message: string }[];
  /** The commented fts5 example, when a captured table has text columns. */
  readonly search: { readonly name: string; readonly table: string; readonly columns: readonly string[] } | null;
  /** The target it declares, absolute. */
  readonly target: string;
  /**
   * False when every table is captured in keys or counter mode: "*" would mirror none, and sync refuses a target
   * with nothing to build (NOTHING_TO_SYNC), so the target is written commented out, with why.
   */
  readonly declaresTarget: boolean;
}

/**
 * The text of a pipeline file for the source `dbFile` (read from `db`), to
 * be written at `outFile`: every path in it is relative to that file's
 * folder.
 *
 * @example
 * const f = initFile(openDatabase('app.db', { readonly: true }), 'app.db', 'sluice.yml');
 * fs.writeFileSync('sluice.yml', f.text, { flag: 'wx' });
 */
export function initFile(db: Db, dbFile: string, outFile: string): InitFile {
  const dir = path.dirname(path.resolve(outFile));
  const source = path.resolve(dbFile);
  const target = path.join(path.dirname(source), `${path.basename(source).replace(/\.(db|sqlite3?)$/i, '')}-cache.db`);
  const tables: TableInfo[] = [];
  const skipped: { table: string; code: string; message: string }[] = [];
  // In the order they were made (the schema's), which is how their author thinks of them.
  const made = db.prepare("SELECT name FROM main.sqlite_schema WHERE type = 'table'").pluck().all() as string[];
  const order = new Map(made.map((n, i) => [n, i]));
  const names = listTables(db)
    .filter((name) => !/^_sluice_/i.test(name)) // sluice's own tables, when capture is enabled already
    .sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  // Each table as enable takes it (its own gates, foreign keys included); a refused one is listed commented out with why.
  const gated = capturable(db, names);
  const refused = new Map(gated.refused.map((e) => [e.table, e]));
  for (const name of names) {
    const info = gated.tables.find((t) => t.name === name);
    const err = refused.get(name);
    if (info !== undefined) tables.push(info);
    else if (err !== undefined) skipped.push({ table: name, code: err.code, message: err.message });
  }
  const captured = readTables(db);
  const modes = new Map<string, CaptureMode>(captured.map((t) => [t.name, t.mode]));
  const mode = (t: string) => modes.get(t) ?? 'images';
  // An fts5 index needs images: over a keys or counter table, sync would suspend it. A column left out of capture
  // (enable --exclude) is in no snapshot or event: an example reading one would refuse the target (EXCLUDED_COLUMN_READ).
  const excluded = new Map(captured.map((t) => [t.name, new Set(t.excluded.map(foldIdent))]));
  const search = searchExample(
    db,
    tables.filter((t) => mode(t.name) === 'images'),
    (table, column) => excluded.get(table)?.has(foldIdent(column)) === true,
  );
  const rel = (p: string) => written(dir, p);
  // A list when every table is in images mode (the default); else a map from each table to its mode.
  const asMap = tables.some((t) => mode(t.name) !== 'images');

  // "*" mirrors images-mode tables only: with none, its target has nothing to build (sync refuses it, NOTHING_TO_SYNC).
  const declaresTarget = tables.length === 0 || tables.some((t) => mode(t.name) === 'images');
  const targetLines = [
    '    targets:',
    `      - path: ${scalar(rel(target))}   # a derived database, built when missing`,
    '        projections:',
    '          - "*"   # a mirror of every captured table, tables captured later included',
    ...(search === null
      ? ['          # - {name: NAME, source: TABLE, kind: fts5, columns: [COLUMN]}   # a full-text index (docs/projections.md)']
      : [
          `          # A full-text (FTS5) index of ${scalar(search.table)}; uncomment to build it, then search it with`,
          `          # sluice query ${scalar(rel(target))} "SELECT * FROM ${search.name} WHERE ${search.name} MATCH 'word'"`,
          `          # - {name: ${search.name}, source: ${scalar(search.table)}, kind: fts5, columns: [${search.columns.map((c) => scalar(c)).join(', ')}]}`,
        ]),
    '          # A definition file (JSON or TS) works too: - projections/my-projection.json',
    '        # health: {maxLagEvents: 10000, maxLagMs: 60000}   # past either, /healthz answers 503',
  ];

  const lines = [
    `# sluice.yml: what sluice keeps for ${scalar(path.basename(source))}, written by \`sluice init\`.`,
    '# `sluice run` (in this folder, or with --config FILE) keeps it so: it enables capture of the',
    '# tables below, builds each target, applies every change as it commits, and serves /healthz',
    '# and a status page on `listen`. `sluice plan` prints what run would do and writes nothing.',
    '# The format, every key: docs/pipeline.md of the sluice package. Paths are relative to this file;',
    '# ${NAME} is the environment variable NAME (an unset one is an error).',
    '',
    'sources:',
    `  - path: ${scalar(rel(source))}`,
    '    # The tables to capture: each change, with the row before and after, is recorded in the',
    "    # writer's own transaction. Remove the ones you do not need; `sluice run` never stops",
    '    # capturing a table by itself (sluice disable does).',
    ...(tables.length === 0
      ? ['    capture: []   # no table yet: list them here once they exist']
      : asMap
        ? [
            '    # Each in the mode the source captures it in now: keys records only the key, counter only that the',
            '    # table changed (neither feeds a mirror); changing a mode re-arms the table.',
            '    capture:',
            ...tables.map((t) => `      ${scalar(t.name, 'key')}: ${mode(t.name)}`),
          ]
        : ['    capture:', ...tables.map((t) => `      - ${scalar(t.name)}`)]),
    ...skipped.map(
      (s) =>
        `      # ${asMap ? `${scalar(s.table, 'key')}:` : `- ${scalar(s.table)}`}   # cannot be captured: ${s.code}: ${oneLine(s.message)}`,
    ),
    ...(declaresTarget
      ? targetLines
      : [
          '    # No target: "*" mirrors the tables captured in images mode, and each table above is in keys or',
          '    # counter mode, so a target of "*" would have nothing to build (sync refuses it: NOTHING_TO_SYNC).',
          '    # To keep a mirror, declare a table in images mode above (that re-arms it), then uncomment:',
          ...targetLines.map((l) => `    # ${l.slice(4)}`),
        ]),
    '    # publish: {nats: "${NATS_URL}"}   # also publish the changes to NATS JetStream (docs/broker.md)',
    '',
    '# /metrics, /healthz and the status page. No authentication: keep it on loopback, and put',
    '# a reverse proxy with authentication in front to reach it from elsewhere (docs/deploy.md).',
    'listen: 127.0.0.1:9464',
    '',
  ];
  return { text: lines.join('\n'), tables: tables.map((t) => t.name), skipped, search, target, declaresTarget };
}

/**
 * Writes the first pipeline file of the database `dbFile` at `out`
 * (default: sluice.yml beside it). Refuses a database that does not exist
 * or is not SQLite, a sluice target (TARGET_NOT_SOURCE), one holding a
 * `_sluice_` object sluice did not make (NAMESPACE_COLLISION, as enable
 * does), a file already
 * at `out` (OUTPUT_EXISTS) and an `out` in a folder that does not exist
 * (OUTPUT_FOLDER_MISSING: no folder is made); writes
 * nothing else, to the database or beside it.
 *
 * @example
 * const { out, tables } = writeInitFile('data/app.db'); // data/sluice.yml
 */
export function writeInitFile(dbFile: string, out?: string): InitFile & { readonly out: string; readonly source: string } {
  const file = out ?? path.join(path.dirname(dbFile), 'sluice.yml');
  const outPath = { given: '--out', command: 'init', example: 'sluice.yml' } as const;
  requireOutputPath(file, outPath);
  const db = openUntouched(dbFile, 'database');
  let init: InitFile;
  try {
    // A target's tables are projections: capture on them is refused by every pass.
    refuseTarget(db, path.resolve(dbFile));
    // So is every table of a source holding a _sluice_ object sluice did not make (enable's namespace gate).
    try {
      checkNamespace(db);
    } catch (err) {
      if (err instanceof CaptureRefusedError)
        throw new CaptureRefusedError(
          err.code,
          err.table,
          `${path.resolve(dbFile)}: ${err.message} Until then enable, and so sluice run, refuse every table of it.`,
          { cause: err },
        );
      throw err;
    }
    init = initFile(db, dbFile, file);
  } finally {
    db.close();
  }
  try {
    // 'wx': never over a file, even one made since the check above.
    fs.writeFileSync(file, init.text, { flag: 'wx' });
  } catch (err) {
    if (errorCode(err) === 'EEXIST')
      throw new InvalidInputError(
        'OUTPUT_EXISTS',
        `${file} already exists; sluice init never overwrites a file. Edit it, remove it first, or pass --out NEW_FILE.`,
      );
    // Its folder gone since the check above: said as the check says it (no folder is made).
    requireOutputPath(file, outPath);
    throw err;
  }
  return { ...init, out: path.resolve(file), source: path.resolve(dbFile) };
}

/** Column names that usually hold prose, and ones that usually hold a date, time or identifier written as text. */
const PROSE = /title|body|text|content|description|summary|message|comment|note|subject/i;
const NOT_PROSE = /(_at|_on|date|time|_id|uuid|guid|hash|url|email|status|state)$/i;

/**
 * The table with the most prose-like text columns (its first one on a tie),
 * as an fts5 example named `<table>_search` over those columns; a table
 * with none but text columns that are not dates or identifiers is taken
 * over those. A column left out of capture (`excluded`) is never taken.
 */
function searchExample(db: Db, tables: readonly TableInfo[], excluded: (table: string, column: string) => boolean): InitFile['search'] {
  const taken = new Set(tables.map((t) => defaultProjectionName(t.name).toLowerCase()));
  let best: { name: string; table: string; columns: string[]; prose: number } | null = null;
  for (const t of tables) {
    const name = `${t.name}_search`;
    // A name that needs no quoting in SQL or YAML, for the example query beside it.
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name) || !isProjectionName(name) || taken.has(name.toLowerCase())) continue;
    const info = describeTable(db, t.name) ?? t;
    // TEXT affinity (SQLite's rule: the declared type contains CHAR, CLOB or TEXT); fts5 reserves rowid, rank and _k<n>.
    const text = info.columns
      .filter((c) => c.hidden === 0 && c.pkIndex === 0 && /CHAR|CLOB|TEXT/i.test(c.type) && !excluded(t.name, c.name))
      .map((c) => c.name)
      .filter((c) => !/^(rowid|rank|_k\d+)$/i.test(c) && c.toLowerCase() !== name.toLowerCase() && !NOT_PROSE.test(c));
    const prose = text.filter((c) => PROSE.test(c));
    const columns = prose.length > 0 ? prose : text;
    if (columns.length > 0 && (best === null || prose.length > best.prose)) best = { name, table: t.name, columns, prose: prose.length };
  }
  return best === null ? null : { name: best.name, table: best.table, columns: best.columns };
}

/**
 * How the file names `p`: relative to its folder `dir` (the file and the
 * databases move together), unless they share nothing but the root
 * (/etc/sluice/sluice.yml for /srv/app/app.db): then the absolute path.
 */
export function written(dir: string, p: string): string {
  const parts = path.relative(dir, p).split(path.sep);
  const ups = parts.findIndex((x) => x !== '..');
  const base = path.resolve(dir, ...parts.slice(0, Math.max(ups, 0)));
  if (path.isAbsolute(parts.join(path.sep)) || (ups > 0 && base === path.parse(base).root)) return p;
  return parts.join('/') || '.';
}

/**
 * A YAML scalar: plain when it cannot be read as anything else, else a
 * double-quoted (JSON) string, a value's `${` kept literal (`$${`); a map
 * key (`as: 'key'`) is written as it is, since the loader never expands
 * keys (yaml-document.ts, docs/pipeline.md). JSON's escapes are YAML's, so
 * a newline, a `#`, a `: ` or a quote stays inside the value. Every name
 * init writes goes through it, in comments too: a newline written raw in a
 * comment would end it, and the rest of the name be live YAML.
 */
export function scalar(s: string, as: 'value' | 'key' = 'value'): string {
  if (/^[A-Za-z_./][A-Za-z0-9_./-]*$/.test(s) && !/^(true|false|null|yes|no|on|off|y|n|\.inf|\.nan)$|^\.[0-9]/i.test(s)) return s;
  const quoted = JSON.stringify(s);
  // A function, not a replacement string: in one, `$$` means a single `$`.
  return as === 'key' ? quoted : quoted.replaceAll('${', () => '$${');
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
