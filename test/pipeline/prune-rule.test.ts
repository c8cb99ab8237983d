// plan, a converging pass and sluice run forget the same acknowledgements under prune
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { loadPipeline, planPipeline, convergeOnce, pipelineHealth } from '../../src/pipeline/index.ts';
import type { Spawned } from '../cli/support/cli.ts';
import { acks as sourceAcks, appSource, freePort, kill, put, startRun, waitHealth } from './support/run.ts';

/*
 * With `prune: true` the acknowledgements on a source that the file no
 * longer declares are forgotten, by one rule (src/pipeline/prune.ts): a
 * sync's whose target the file does not declare, or whose projection its
 * declared target does not keep. Before, a converging pass forgot those of
 * projections a declared target no longer declares (and plan said so) while
 * `run` forgot only those of targets no longer declared, and left the
 * others for ever although health said "sluice run forgets it". Here one
 * state, made twice, is brought to the file once by convergeOnce and once
 * by `sluice run`: what is left on the source is the same, and is what plan
 * and health said before.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

const MAP = (name: string) => `{name: ${name}, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}`;

/**
 * cache.db (declared, then deleted, with a map taken out of the file: its
 * acknowledgement is of a projection nothing holds), keep.db (a map taken
 * out of the file that it still holds) and old.db (a target taken out of
 * the file); the file then says prune: true.
 */
async function state(dir: string, port: number): Promise<string> {
  fs.mkdirSync(dir, { recursive: true });
  appSource(path.join(dir, 'app.db'));
  const config = path.join(dir, 'sluice.yml');
  const file = (targets: string, tail = '') =>
    put(config, `sources:\n  - path: app.db\n    capture: [issues, comments]\n    targets:\n${targets}listen: 127.0.0.1:${port}\n${tail}`);
  file(
    `      - {path: cache.db, projections: ["*", ${MAP('open_issues')}]}\n      - {path: keep.db, projections: ["*", ${MAP('open_kept')}]}\n      - {path: old.db, projections: ["*"]}\n`,
  );
  const first = await convergeOnce(await loadPipeline(config));
  expect(first.targets.map((t) => t.error)).toEqual([null, null, null]);
  for (const f of ['cache.db', 'cache.db-wal', 'cache.db-shm']) fs.rmSync(path.join(dir, f), { force: true });
  file(`      - {path: cache.db, projections: ["*"]}\n      - {path: keep.db, projections: ["*"]}\n`, 'prune: true\n');
  return config;
}

/** The acknowledgements on `dir`'s source. */
const acks = (dir: string) => sourceAcks(path.join(dir, 'app.db'));

const short = (name: string) => `${name.slice(0, name.indexOf('@'))}@${path.basename(name.slice(name.indexOf('@') + 1))}`;

describe.skipIf(process.platform === 'win32')('prune: true', () => {
  test('plan, health --config, a converging pass and sluice run agree on the acknowledgements forgotten: of a target no longer declared, and of a projection a declared target no longer keeps', async ({
    tmp,
  }) => {
    const port = await freePort();
    const before = [
      'comments@cache.db',
      'comments@keep.db',
      'comments@old.db',
      'issues@cache.db',
      'issues@keep.db',
      'issues@old.db',
      'open_issues@cache.db',
      'open_kept@keep.db',
    ];
    const forgotten = ['comments@old.db', 'issues@old.db', 'open_issues@cache.db', 'open_kept@keep.db'];
    const after = before.filter((a) => !forgotten.includes(a));

    // By convergeOnce, after what plan and health say.
    const a = path.join(tmp, 'a');
    const configA = await state(a, port);
    expect(acks(a)).toEqual(before);
    const pipeline = await loadPipeline(configA);
    const plan = await planPipeline(pipeline);
    expect(
      plan.sources.flatMap((s) => s.acknowledgements.map((x) => `${x.projection}@${path.basename(x.target)}:${x.does}`)).sort(),
    ).toEqual(forgotten.map((f) => `${f}:forget`));
    const health = pipelineHealth(pipeline);
    expect(
      health.sources
        .flatMap((s) => s.acknowledgements.filter((x) => !x.declared).map((x) => `${x.projection}@${path.basename(x.target ?? '')}`))
        .sort(),
    ).toEqual(forgotten);
    const pass = await convergeOnce(pipeline);
    expect(pass.sources.flatMap((s) => s.forgotten.map(short)).sort()).toEqual(forgotten);
    expect(acks(a)).toEqual(after);

    // By sluice run, from the same state.
    const b = path.join(tmp, 'b');
    const configB = await state(b, port);
    expect(acks(b)).toEqual(before);
    running = startRun(configB);
    await waitHealth(port, 'run converged', (h) => h.code === 200, 30_000);
    expect(acks(b)).toEqual(after);
  }, 90_000);
});
