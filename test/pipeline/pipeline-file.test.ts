import fs from 'node:fs';
import path from 'node:path';
import { checkPipelineSources, convergeOnce, declaredInputs, loadPipeline, planPipeline } from '../../src/pipeline/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { pipelineJsonSchema } from '../../scripts/pipeline-schema.ts';
import { SluiceError } from '../../src/errors.ts';
import { describe, expect, ROOT, test } from '../support/fixtures.ts';

/*
 * The pipeline file sluice.yml: what a user declares is read exactly
 * (shorthands spelt out, paths relative to the file, variables expanded),
 * and what is wrong is refused with FILE:LINE:COL and the fix before
 * anything is written.
 */

const SCHEMA =
  'CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, state TEXT); CREATE TABLE comments (id INTEGER PRIMARY KEY, body TEXT);';

function write(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

/** The error loadPipeline (then checkPipelineSources) raises for `yaml`, with the files of `dir` checked unchanged. */
async function refusal(dir: string, yaml: string, env: NodeJS.ProcessEnv = {}): Promise<SluiceError> {
  const file = write(dir, 'sluice.yml', yaml);
  const before = fs.readdirSync(dir).sort();
  let caught: unknown;
  try {
    checkPipelineSources(await loadPipeline(file, env));
  } catch (err) {
    caught = err;
  }
  expect(fs.readdirSync(dir).sort(), 'nothing is created').toEqual(before);
  expect(caught).toBeInstanceOf(SluiceError);
  return caught as SluiceError;
}

describe('a pipeline file', () => {
  test('is read with every shorthand spelt out and every path relative to the file', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA + 'CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT);');
    write(
      tmp,
      'projections/issues-search.json',
      JSON.stringify({ name: 'issues_search', source: 'issues', kind: 'fts5', columns: ['title'] }),
    );
    const file = write(
      tmp,
      'sluice.yml',
      `# the issue's example, variables included
sources:
  - path: app.db
    capture: {issues: {mode: images}, comments: images, audit: keys}
    targets:
      - path: out/cache.db
        projections:
          - "*"
          - projections/issues-search.json
          - {name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}
        health: {maxLagEvents: 10000, maxLagMs: 60000}
    publish: {nats: "\${NATS_URL}"}
subscribe:
  - {nats: "nats://127.0.0.1:4222", source: SOURCE_ID, path: replica.db}
listen: 9464
`,
    );
    const p = await loadPipeline(file, { NATS_URL: 'nats://10.0.0.7:4222' });
    checkPipelineSources(p);
    expect(p.file).toBe(file);
    expect(p.listen).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(p.prune).toBe(false);
    const [source] = p.sources;
    expect(source?.path).toBe(path.join(tmp, 'app.db'));
    expect(source?.capture.map((c) => [c.table, c.mode])).toEqual([
      ['issues', 'images'],
      ['comments', 'images'],
      ['audit', 'keys'],
    ]);
    expect(source?.capture[2]?.declaredAt).toBe(`${file}:4:57`);
    expect(source?.publish).toEqual({ servers: ['nats://10.0.0.7:4222'] });
    const target = source?.targets[0];
    expect(target?.path).toBe(path.join(tmp, 'out', 'cache.db'));
    expect(target?.health).toEqual({ maxLagEvents: 10000, maxLagMs: 60000 });
    expect(target?.projections.map((e) => [e.kind, e.kind === 'all' ? '*' : e.definitions.map((d) => d.name).join()])).toEqual([
      ['all', '*'],
      ['file', 'issues_search'],
      ['inline', 'open_issues'],
    ]);
    expect(target?.projections[1]).toMatchObject({ path: path.join(tmp, 'projections', 'issues-search.json') });
    expect(p.subscriptions).toEqual([
      expect.objectContaining({ servers: ['nats://127.0.0.1:4222'], sourceId: 'SOURCE_ID', path: path.join(tmp, 'replica.db') }),
    ]);
    expect(p.subscriptions[0]?.projections.map((e) => e.kind)).toEqual(['all']);
    // Reading the file builds nothing: the target is made by run.
    expect(fs.existsSync(path.join(tmp, 'out'))).toBe(false);
  });

  test('in JSON is read the same, and a list of tables captures each in images mode', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    const file = write(
      tmp,
      'sluice.json',
      JSON.stringify({
        sources: [{ path: 'app.db', capture: ['issues', 'comments'], targets: [{ path: 'c.db', projections: ['*'] }] }],
        listen: '[::1]:9000',
      }),
    );
    const p = await loadPipeline(file, {});
    expect(p.sources[0]?.capture.map((c) => `${c.table}:${c.mode}`)).toEqual(['issues:images', 'comments:images']);
    expect(p.listen).toEqual({ host: '::1', port: 9000 });
  });

  test('with an unknown key is refused at the key, naming it', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    const err = await refusal(
      tmp,
      'sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: c.db\n        projections: ["*"]\n        helth: {maxLagMs: 5}\n',
    );
    expect(err.code).toBe('PIPELINE_INVALID');
    expect(err.message).toContain(`${path.join(tmp, 'sluice.yml')}:7:9: sources[0].targets[0] has no key "helth"`);
  });

  test('with an unset variable is refused at its line; a set one expands, and $${ stays literal', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    const yaml = 'sources:\n  - path: ${DB}\n    capture: [issues]\n    publish: {nats: "${NATS_URL}"}\nlisten: "$${x}"\n';
    const err = await refusal(tmp, yaml, { DB: 'app.db' });
    expect(err.code).toBe('PIPELINE_ENV_UNSET');
    expect(err.message).toMatch(/sluice\.yml:4:21: environment variable NATS_URL is not set/);
    // Set but empty is the user's own value, not an unset one (and an empty URL is refused as one).
    const empty = await refusal(tmp, yaml, { DB: 'app.db', NATS_URL: '' });
    expect(empty.code).toBe('PIPELINE_INVALID');
    expect(empty.message).toMatch(/sluice\.yml:4:21: sources\[0\]\.publish\.nats: /);
    // A set one expands (the source path came from DB), and $${ is a literal ${.
    const literal = await refusal(tmp, yaml, { DB: 'app.db', NATS_URL: 'nats://h:1' });
    expect(literal.message).toContain('listen is "${x}"');
  });

  test('a ${ with no closing brace is refused at its line, not kept as text', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    // publish: {nats: "${NATS_URL"} would otherwise connect to a server named "${NATS_URL" (or a path would name a file so).
    const err = await refusal(tmp, 'sources:\n  - path: app.db\n    capture: [issues]\n    publish: {nats: "${NATS_URL"}\n', {
      NATS_URL: 'nats://h:1',
    });
    expect(err.code).toBe('PIPELINE_INVALID');
    expect(err.message).toMatch(/sluice\.yml:4:21: \$\{NATS_URL has no closing \}/);
    expect(err.message).toContain('Write ${NAME}');
  });

  test('naming a projection file, a source or a table that does not exist is refused at its line', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    const file = await refusal(
      tmp,
      'sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: c.db\n        projections: ["*", search.json]\n',
    );
    expect(file.message).toMatch(/sluice\.yml:6:28: projection file search\.json does not exist/);
    const source = await refusal(tmp, 'sources:\n  - path: ap.db\n    capture: [issues]\n');
    expect(source.message).toMatch(/sluice\.yml:2:11: source ap\.db does not exist/);
    const table = await refusal(tmp, 'sources:\n  - path: app.db\n    capture:\n      issues:\n      comment: keys\n');
    expect(table.message).toMatch(/sluice\.yml:5:7: table comment does not exist in source/);
  });

  test('with an inline definition that does not validate, or reads a table it does not capture, is refused at the entry', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA);
    const head = 'sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - path: c.db\n        projections:\n';
    const bad = await refusal(tmp, `${head}          - {name: x, source: issues, kind: map, colums: {id: id}}\n`);
    expect(bad.message).toMatch(/sluice\.yml:7:50: sources\[0\]\.targets\[0\]\.projections\[0\] has no key "colums"/);
    const uncaptured = await refusal(tmp, `${head}          - {name: c, source: comments, kind: mirror}\n`);
    expect(uncaptured.message).toMatch(
      /sluice\.yml:7:13: projection c reads table comments, which this source does not capture\. Add comments/,
    );
    const twice = await refusal(
      tmp,
      `${head}          - {name: c, source: issues, kind: mirror}\n          - {name: C, source: issues, kind: mirror}\n`,
    );
    expect(twice.message).toMatch(/sluice\.yml:8:13: projection C is declared twice in this target/);
  });

  test('with a definition that reads a column the file leaves out of capture is refused at the entry, before capture is enabled', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA);
    const head =
      'sources:\n  - path: app.db\n    capture: {issues: {exclude: [title]}}\n    targets:\n      - path: c.db\n        projections:\n';
    const map = await refusal(
      tmp,
      `${head}          - "*"\n          - {name: m, source: issues, kind: map, columns: {id: id, t: title}}\n`,
    );
    expect(map.code).toBe('PIPELINE_INVALID');
    expect(map.message).toMatch(/sluice\.yml:8:13: Projection m: .*reads column title of issues, which is left out of capture/);
    const fts = await refusal(tmp, `${head}          - {name: s, source: issues, kind: fts5, columns: [Title]}\n`);
    expect(fts.message).toMatch(/sluice\.yml:7:13: Projection s: .*reads column title of issues/);
    // The capture entry names the table in another case than the definition: the same table.
    const cased = await refusal(
      tmp,
      `${head.replace('{issues: {exclude', '{Issues: {exclude')}          - {name: m, source: issues, kind: map, columns: {id: id, t: title}}\n`,
    );
    expect(cased.message).toMatch(/Projection m: .*reads column title of issues, which is left out of capture/);
    // What it does not read, it may: the mirror leaves the column out, and a map of other columns is built.
    const ok = write(
      tmp,
      'sluice.yml',
      `${head}          - "*"\n          - {name: m, source: issues, kind: map, columns: {id: id, s: state}}\n`,
    );
    checkPipelineSources(await loadPipeline(ok));
  });

  test('keeps a table and a column named __proto__ (a capture map key, a map projection column, a definition file), which a plain record dropped silently, and a pass captures and builds them', async ({
    tmp,
    makeDb,
  }) => {
    const { db, file: app } = makeDb(
      'app.db',
      `CREATE TABLE "__proto__" (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO "__proto__" VALUES (1, 'x'); CREATE TABLE k (id INTEGER PRIMARY KEY);`,
    );
    db.close();
    write(tmp, 'p.json', '{"name": "from_file", "source": "__proto__", "kind": "map", "columns": {"id": "id", "__proto__": "v"}}');
    const file = write(
      tmp,
      'sluice.yml',
      `sources:
  - path: app.db
    capture:
      __proto__: images
      k: keys
    targets:
      - path: cache.db
        projections:
          - "*"
          - {name: m, source: __proto__, kind: map, columns: {id: id, __proto__: v}}
          - p.json
`,
    );
    const p = await loadPipeline(file, {});
    checkPipelineSources(p);
    expect(p.sources[0]?.capture.map((c) => [c.table, c.mode])).toEqual([
      ['__proto__', 'images'],
      ['k', 'keys'],
    ]);
    const defs = declaredInputs(p.sources[0]?.targets[0]?.projections ?? []).filter((d) => d !== '*');
    expect(defs.map((d) => (d.kind === 'map' ? Object.keys(d.columns) : []))).toEqual([
      ['id', '__proto__'],
      ['id', '__proto__'],
    ]);
    const plan = await planPipeline(p);
    expect(plan.sources[0]?.enable.map((e) => [e.table, e.mode])).toEqual([
      ['__proto__', 'images'],
      ['k', 'keys'],
    ]);
    const report = await convergeOnce(p);
    expect(report.sources[0]?.error).toBeNull();
    expect(report.targets[0]?.error).toBeNull();
    const cache = openDatabase(path.join(tmp, 'cache.db'), { readonly: true });
    try {
      for (const t of ['m', 'from_file']) expect(cache.prepare(`SELECT "__proto__" FROM "${t}"`).pluck().all(), t).toEqual(['x']);
      expect(cache.prepare('SELECT v FROM "__proto__"').pluck().all()).toEqual(['x']); // "*"'s mirror of it
    } finally {
      cache.close();
    }
    expect(fs.existsSync(app)).toBe(true);
  });

  test('refuses a capture map or map columns that are not an object of names, at the line', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    const head = 'sources:\n  - path: app.db\n';
    const capture = await refusal(tmp, `${head}    capture: 3\n`);
    expect(capture.message).toMatch(/^.*sluice\.yml:3:14: sources\[0\]\.capture: /);
    const columns = await refusal(
      tmp,
      `${head}    capture: [issues]\n    targets:\n      - path: c.db\n        projections:\n          - {name: m, source: issues, kind: map, columns: [id]}\n`,
    );
    expect(columns.message).toContain('columns: expected an object of NAME: VALUE, not a list');
    const empty = await refusal(
      tmp,
      `${head}    capture: [issues]\n    targets:\n      - path: c.db\n        projections:\n          - {name: m, source: issues, kind: map, columns: {}}\n`,
    );
    expect(empty.message).toContain('a map needs at least one column');
  });

  test('that is not YAML, repeats a key or declares one database twice is refused at the line', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA);
    const syntax = await refusal(tmp, 'sources:\n  - path: app.db\n    capture: [issues\n');
    expect(syntax.message).toMatch(/sluice\.yml:\d+:\d+: not valid YAML/);
    const dup = await refusal(tmp, 'listen: 1\nlisten: 2\n');
    expect(dup.message).toMatch(/sluice\.yml:2:1: not valid YAML: Map keys must be unique/);
    const twice = await refusal(
      tmp,
      'sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - {path: c.db, projections: ["*"]}\n      - {path: ./c.db, projections: ["*"]}\n',
    );
    expect(twice.message).toMatch(/sluice\.yml:6:16: .*c\.db is declared again as a target; it is already a target at .*sluice\.yml:5:16/);
  });
});

test('a file that declares neither sources nor subscribe (empty, comments only, a listen alone) is refused; "sources: []" declares nothing on purpose', async ({
  tmp,
}) => {
  for (const yaml of ['', '\n', '# being written\n', '{}\n', 'listen: 9464\nprune: true\n']) {
    const err = await refusal(tmp, yaml);
    expect(err.code).toBe('PIPELINE_INVALID');
    expect(err.message).toMatch(/sluice\.yml:1:1: the file declares nothing \(neither "sources" nor "subscribe"\)/);
  }
  const none = await loadPipeline(write(tmp, 'sluice.yml', 'sources: []\n'));
  expect(none.sources).toEqual([]);
});

test('docs/sluice.schema.json is the pipeline schema as scripts/pipeline-schema.ts writes it', () => {
  const onDisk = fs.readFileSync(path.join(ROOT, 'docs', 'sluice.schema.json'), 'utf8');
  expect(onDisk, 'run `npx tsx scripts/pipeline-schema.ts` and commit docs/sluice.schema.json').toBe(pipelineJsonSchema());
  const schema = JSON.parse(onDisk) as { properties: Record<string, unknown>; additionalProperties: unknown };
  expect(Object.keys(schema.properties).sort()).toEqual(['listen', 'prune', 'sources', 'subscribe']);
  expect(schema.additionalProperties).toBe(false);
});
