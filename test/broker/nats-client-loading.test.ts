// only sluice broker loads the nats client never the main entry sync health or help
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { test, expect, describe, ROOT } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { BIN } from '../cli/support/cli.ts';

/*
 * The NATS client (@nats-io/*) is the broker's alone: the main entry
 * ('sluice') and every command but publish and subscribe run without it,
 * and 'sluice/broker' is the entry that brings it (docs/architecture.md,
 * "Entries"). Each run below is a plain `node` whose module resolution is
 * recorded by a resolve hook (node:module's register, given on --import),
 * one resolved URL a line: what the process loaded, not what a file says
 * it imports. The library is reached the way a user's project reaches it,
 * by name through package.json's exports, from a project whose
 * node_modules/sluice is this checkout (the dist/ the suite's global setup
 * built).
 */

interface Run {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Every URL the process resolved, in order. */
  readonly resolved: readonly string[];
}

/** `node --import <hook> ...args` in `cwd`, with what it resolved. */
function nodeRecording(dir: string, args: readonly string[], cwd: string): Promise<Run> {
  const log = fs.mkdtempSync(path.join(dir, 'resolved-')) + '/urls.txt';
  const hooks = `import fs from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(${JSON.stringify(log)}, r.url + '\\n');
  return r;
}`;
  const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', `data:text/javascript,${encodeURIComponent(register)}`, ...args],
      { cwd, encoding: 'utf8', maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const resolved = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
        resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr, resolved });
      },
    );
  });
}

const NATS = /\/node_modules\/@nats-io\//;
const nats = (r: Run) => r.resolved.filter((u) => NATS.test(u));

/**
 * Whether the run loaded `name`'s chunk of the CLI's bundle (dist/cli/,
 * scripts/bundle-cli.js): a module that main.ts loads by import() is a
 * chunk of its own, `<name>-<hash>.js`.
 */
const loadedChunk = (r: Run, name: string) =>
  r.resolved.some((u) => u.startsWith(`file://${ROOT}/dist/cli/`) && new RegExp(`/${name}-[A-Z0-9]+\\.js$`).test(u));

/** A project with "type": "module" whose node_modules/sluice is this checkout. */
function project(tmp: string): string {
  const app = path.join(tmp, 'app');
  fs.mkdirSync(path.join(app, 'node_modules'), { recursive: true });
  fs.symlinkSync(ROOT, path.join(app, 'node_modules', 'sluice'), 'dir');
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'uses-sluice', private: true, type: 'module' }));
  return app;
}

describe('only sluice/broker loads the NATS client', () => {
  test('the main entry, imported by name and used to enable, sync, verify and check health, resolves no @nats-io module and exports no broker name', async ({
    tmp,
  }) => {
    const app = project(tmp);
    fs.writeFileSync(
      path.join(app, 'use.js'),
      `import * as sluice from 'sluice';
const [source, target] = process.argv.slice(2);
const db = sluice.openDatabase(source, { create: true });
db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
sluice.enable(db, ['notes']);
db.prepare('INSERT INTO notes VALUES (1, ?), (2, ?)').run('a', 'b');
db.close();
const report = await sluice.sync(source, target);
const verified = await sluice.verify(source, target);
console.log(JSON.stringify({
  applied: report.projections.map((p) => [p.name, p.state]),
  verified: verified.ok,
  health: sluice.health(target).ok,
  broker: ['Publisher', 'subscribe', 'readStreamLags', 'openStreamLag', 'encodeToken', 'subjectsOf', 'batchMsgId'].filter((n) => n in sluice),
}));
`,
    );
    const r = await nodeRecording(tmp, ['use.js', path.join(tmp, 'app.db'), path.join(tmp, 'cache.db')], app);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ applied: [['notes', 'active']], verified: true, health: true, broker: [] });
    // The hook saw the library load (so an empty list below means something).
    expect(r.resolved).toContain(`file://${ROOT}/dist/src/index.js`);
    expect(r.resolved).toContain(`file://${ROOT}/dist/src/apply/sync/sync.js`);
    expect(nats(r)).toEqual([]);
  });

  test("sluice/broker resolves through the package's exports map to the broker's JS and .d.ts, and it is what loads the NATS client", async ({
    tmp,
  }) => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; import: string }>;
    };
    expect(pkg.exports['./broker']).toEqual({ types: './dist/src/broker/index.d.ts', import: './dist/src/broker/index.js' });
    expect(fs.existsSync(path.join(ROOT, 'dist/src/broker/index.d.ts'))).toBe(true);
    const app = project(tmp);
    fs.writeFileSync(
      path.join(app, 'use.js'),
      `import * as broker from 'sluice/broker';
console.log(JSON.stringify({
  functions: Object.keys(broker).filter((n) => typeof broker[n] === 'function').sort(),
  token: broker.encodeToken('a.b'),
  stream: broker.defaultStreamName('s'),
}));
`,
    );
    const r = await nodeRecording(tmp, ['use.js'], app);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      functions: [
        'Publisher',
        'defaultStreamName',
        'encodeToken',
        'openStreamLag',
        'readRecordedStreamLags',
        'readStreamLags',
        'subjectsOf',
        'subscribe',
      ],
      token: 'a=2Eb',
      stream: 'SLUICE_s',
    });
    expect(r.resolved).toContain(`file://${ROOT}/dist/src/broker/index.js`);
    expect(nats(r)).not.toEqual([]);
  });

  test('the CLI runs its bundle: dist/cli/main.js, and none of the compiled modules of dist/src/', async ({ tmp }) => {
    const r = await nodeRecording(tmp, [BIN, '--version'], tmp);
    expect(r.status, r.stderr).toBe(0);
    expect(r.resolved).toContain(`file://${ROOT}/dist/cli/main.js`);
    expect(r.resolved.filter((u) => u.startsWith(`file://${ROOT}/dist/src/`))).toEqual([]);
  });

  test('the CLI resolves no @nats-io module for sync, health, or --help, which lists publish and subscribe', async ({ tmp, makeDb }) => {
    const { db, file: src } = makeDb('app.db', 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
    enable(db, ['notes']);
    db.prepare('INSERT INTO notes VALUES (1, ?)').run('a');
    const tgt = path.join(tmp, 'cache.db');
    // --help (every command's module) beside sync, then health of what sync wrote.
    const [sync, help] = await Promise.all([
      nodeRecording(tmp, [BIN, 'sync', src, tgt, '--json'], tmp),
      nodeRecording(tmp, [BIN, '--help'], tmp),
    ]);
    expect(sync.status, sync.stderr).toBe(0);
    expect((JSON.parse(sync.stdout) as { projections: { name: string }[] }).projections.map((p) => p.name)).toEqual(['notes']);
    expect(loadedChunk(sync, 'sync')).toBe(true);
    expect(nats(sync)).toEqual([]);

    const health = await nodeRecording(tmp, [BIN, 'health', tgt, '--json'], tmp);
    expect(health.status, health.stderr).toBe(0);
    expect(loadedChunk(health, 'health')).toBe(true);
    expect(nats(health)).toEqual([]);

    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^ {2}publish \[options\] <db>/m);
    expect(help.stdout).toMatch(/^ {2}subscribe \[options\] <target>/m);
    expect(loadedChunk(help, 'publish')).toBe(true);
    expect(loadedChunk(help, 'subscribe')).toBe(true);
    // The broker is a chunk of its own, which --help does not load.
    expect(loadedChunk(help, 'broker')).toBe(false);
    expect(nats(help)).toEqual([]);
  });
});
