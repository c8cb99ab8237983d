// the package installs and works from a plain javascript project
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, describe, ROOT, runSqliteCli } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, parseJson } from '../cli/support/cli.ts';

/*
 * The package as another program gets it: `npm pack` makes the real tarball
 * (the `files` list, the `exports` map, dist/ JS and .d.ts), which is
 * unpacked into node_modules/sluice of a temp project with its own
 * package.json ("type": "module"), the way `npm install <tarball>` lays it
 * out. Its dependencies are not fetched from the registry (that needs the
 * network and rebuilds better-sqlite3 natively, minutes): each dependency
 * the packed package.json declares, and only those, is linked to this
 * checkout's installed copy, at the version it pins. A module sluice imports
 * without declaring it does not resolve there. npm itself never runs in the
 * temp project: it would prune the links' targets, this checkout's
 * node_modules. `npm pack --ignore-scripts` skips `prepare` (a second build
 * would rewrite dist/ under the CLI tests running beside this one): the
 * suite's global setup has just built dist/.
 */

const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

interface Run {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(cmd: string, args: readonly string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }),
    );
  });
}

/** The README's "Use it as a library" script: the test runs what the README shows. */
function readmeScript(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const m = /^## Use it as a library\n[\s\S]*?```js\n([\s\S]*?)```/m.exec(readme);
  expect(m, 'the README has a "Use it as a library" section with a js block').not.toBeNull();
  return m?.[1] ?? '';
}

/** Links node_modules/<name> of `project` to this checkout's installed copy, which must be `version`. */
function linkInstalled(project: string, name: string, version: string): void {
  const installed = path.join(ROOT, 'node_modules', name);
  const pkg = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as { version: string };
  expect(pkg.version, `${name} is pinned`).toBe(version);
  const link = path.join(project, 'node_modules', name);
  fs.mkdirSync(path.dirname(link), { recursive: true });
  fs.symlinkSync(fs.realpathSync(installed), link, 'dir');
}

let dir: string | undefined;
let project = '';
let packed: { files: { path: string }[]; size: number } = { files: [], size: 0 };
afterAll(() => removeDir(dir));

beforeAll(async () => {
  dir = makeDir('sluice-package-');
  const p = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT);
  expect(p.status, p.stderr).toBe(0);
  const [info] = JSON.parse(p.stdout) as [{ filename: string; files: { path: string }[]; size: number }];
  packed = info;
  project = path.join(dir, 'app');
  const into = path.join(project, 'node_modules', 'sluice');
  fs.mkdirSync(into, { recursive: true });
  const x = await run('tar', ['-xzf', path.join(dir, info.filename), '-C', into, '--strip-components=1'], ROOT);
  expect(x.status, x.stderr).toBe(0);
  const manifest = JSON.parse(fs.readFileSync(path.join(into, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const [name, version] of Object.entries(manifest.dependencies)) linkInstalled(project, name, version);
  // The project's own dev dependency, for `types: ["node"]`.
  const own = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  linkInstalled(project, '@types/node', own.devDependencies['@types/node'] as string);
  fs.writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'uses-sluice', private: true, type: 'module', dependencies: { sluice: `file:${info.filename}` } }, null, 2),
  );
  fs.writeFileSync(path.join(project, 'use-sluice.js'), readmeScript());
});

describe('the npm package, installed in a plain JavaScript project on Node 20', () => {
  test('the tarball holds the compiled JS, its .d.ts, the CLI and what the demo reads, and no sources, maps or test fixtures', () => {
    const files = packed.files.map((f) => f.path);
    for (const f of [
      'package.json',
      'README.md',
      'bin/sluice.js',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/cli/main.js',
      'dist/cli/main.js',
      'dist/cli/target-worker.js',
      'src/cli/demo-tracker.sql',
      'dist/src/cli/demo-tracker.js',
      'projections/comment-counts.ts',
    ]) {
      expect(files).toContain(f);
    }
    // The demo's schema is the one source file shipped (tsc does not copy .sql into dist/).
    expect(
      files.filter((f) => f !== 'src/cli/demo-tracker.sql' && /^(src|test|bench)\/|\.map$|\.sqlite$|^fixtures\/format1\//.test(f)),
    ).toEqual([]);
  });

  test("the README's script enables capture, syncs a mirror that equals the source and reads a health that is ok", async () => {
    const r = await run(process.execPath, ['use-sluice.js'], project);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { target: string; applied: unknown; source: unknown[]; mirror: unknown; health: unknown };
    try {
      expect(out.source).toEqual([
        { id: 2, body: 'call Ada back' },
        { id: 3, body: 'fix the roof' },
      ]);
      expect(out.mirror).toEqual(out.source);
      // The second run applied the insert, the update and the delete, as the README says.
      expect(out.applied).toEqual([{ name: 'notes', applied: 3 }]);
      const h = S.healthOutput.parse(out.health);
      expect(h.ok).toBe(true);
      expect(h.projections.map((p) => [p.name, p.state, p.lagEvents])).toEqual([['notes', 'active', 0]]);
      // The package's own CLI reads the same target.
      const cli = await run(
        process.execPath,
        [path.join('node_modules', 'sluice', 'bin', 'sluice.js'), 'health', out.target, '--json'],
        project,
      );
      expect(cli.status, cli.stderr).toBe(0);
      expect(parseJson(cli, S.healthOutput).ok).toBe(true);
    } finally {
      removeDir(path.dirname(out.target));
    }
  });

  // tsc checks every .d.ts the script reaches (sluice's, and Node's, zod's and kysely's through them): ~10 s of one
  // core alone, several times that beside other work (the timeout at the end). All of it is the point.
  test('tsc resolves sluice through its exports map to its .d.ts and type-checks the script, and the types are not any', async () => {
    // Probes that fail to compile only if sluice's types (and better-sqlite3's, which they name) arrive.
    fs.writeFileSync(
      path.join(project, 'types-probe.js'),
      [
        "import { openDatabase, health, Syncer } from 'sluice';",
        "const db = openDatabase('app.db');",
        '// @ts-expect-error better-sqlite3 prepares SQL text',
        'db.prepare(42);',
        '// @ts-expect-error health takes the path of a target',
        'health(42);',
        '// @ts-expect-error Syncer.open takes a source and a target',
        "await Syncer.open('app.db');",
        '/** @type {boolean} */',
        "export const ok = health('cache.db').ok;",
        '',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          types: ['node'],
          allowJs: true,
          checkJs: true,
          noEmit: true,
          strict: true,
          // sluice's .d.ts are checked as well, not only used.
          skipLibCheck: false,
        },
        include: ['*.js'],
      }),
    );
    const r = await run(process.execPath, [TSC, '-p', '.', '--traceResolution'], project);
    expect(
      r.status,
      r.stdout
        .split('\n')
        .filter((l) => /error TS/.test(l))
        .join('\n'),
    ).toBe(0);
    expect(r.stdout).toMatch(/Module name 'sluice' was successfully resolved to '[^']*node_modules\/sluice\/dist\/src\/index\.d\.ts'/);
  }, 120_000);

  test("the tarball's broker entry, sluice/broker, resolves through the exports map for node and tsc, and the main entry holds none of it", async () => {
    expect(packed.files.map((f) => f.path)).toEqual(expect.arrayContaining(['dist/src/broker/index.js', 'dist/src/broker/index.d.ts']));
    fs.writeFileSync(
      path.join(project, 'broker-probe.js'),
      [
        "import { subscribe, Publisher } from 'sluice/broker';",
        "import * as main from 'sluice';",
        "console.log(JSON.stringify({ subscribe: typeof subscribe, open: typeof Publisher.open, inMain: ['subscribe', 'Publisher'].filter((n) => n in main) }));",
        '// @ts-expect-error subscribe takes the path of a target',
        "export const probe = () => subscribe(42, 'nats://127.0.0.1:4222', { sourceId: 's' });",
        '',
      ].join('\n'),
    );
    const r = await run(process.execPath, ['broker-probe.js'], project);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ subscribe: 'function', open: 'function', inMain: [] });
    // Only the probe, and sluice's .d.ts used, not checked: which file tsc resolves the name to is the point here.
    fs.writeFileSync(
      path.join(project, 'tsconfig.broker.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          types: ['node'],
          allowJs: true,
          checkJs: true,
          noEmit: true,
          strict: true,
          skipLibCheck: true,
        },
        files: ['broker-probe.js'],
      }),
    );
    const t = await run(process.execPath, [TSC, '-p', 'tsconfig.broker.json', '--traceResolution'], project);
    expect(
      t.status,
      t.stdout
        .split('\n')
        .filter((l) => /error TS/.test(l))
        .join('\n'),
    ).toBe(0);
    expect(t.stdout).toMatch(
      /Module name 'sluice\/broker' was successfully resolved to '[^']*node_modules\/sluice\/dist\/src\/broker\/index\.d\.ts'/,
    );
  }, 120_000);

  test('the packaged CLI runs its demo (projections/, fixtures/ and a .ts custom handler through tsx) from the package alone', async () => {
    const r = await run(
      process.execPath,
      [path.join('node_modules', 'sluice', 'bin', 'sluice.js'), 'demo', '--dir', path.join(project, 'demo'), '--json'],
      project,
    );
    expect(r.status, r.stderr).toBe(0);
    const d = parseJson(r, S.demoOutput);
    expect(d.steps.filter((s) => !s.ok)).toEqual([]);
    expect(d.ok).toBe(true);
  });

  // npx reads the project's tree as for a user: seconds of npm's own work alone, several times that beside other work.
  test("the package's bin, linked into the project as npm links it, runs `npx sluice init` on a database in another folder, writes only the pipeline file beside it, and refuses to overwrite it", async () => {
    // What `npm install` makes for a dependency with a bin: node_modules/.bin/sluice, a link to its bin file.
    const bin = path.join(project, 'node_modules', '.bin');
    fs.mkdirSync(bin, { recursive: true });
    if (!fs.existsSync(path.join(bin, 'sluice'))) fs.symlinkSync(path.join('..', 'sluice', 'bin', 'sluice.js'), path.join(bin, 'sluice'));
    const data = path.join(path.dirname(project), 'data');
    fs.mkdirSync(data, { recursive: true });
    const db = path.join(data, 'app.db');
    runSqliteCli(db, 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL); INSERT INTO notes VALUES (1, 2);');
    const before = fs.readFileSync(db);
    const r = await run('npx', ['--no-install', 'sluice', 'init', path.join('..', 'data', 'app.db'), '--json'], project);
    expect(r.status, r.stderr).toBe(0);
    const out = parseJson(r, S.initOutput);
    expect([out.out, out.tables, out.search?.name]).toEqual([path.join(data, 'sluice.yml'), ['notes'], 'notes_search']);
    expect(fs.readdirSync(data).sort()).toEqual(['app.db', 'sluice.yml']);
    expect(fs.readFileSync(db).equals(before)).toBe(true);
    // The packaged CLI refuses to write it again, from the database's own folder.
    const again = await run(process.execPath, [path.join(project, 'node_modules', 'sluice', 'bin', 'sluice.js'), 'init', 'app.db'], data);
    expect([again.status, again.stderr]).toEqual([1, expect.stringMatching(/^sluice: OUTPUT_EXISTS: /)]);
  }, 120_000);
});
