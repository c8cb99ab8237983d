// prune never forgets the acknowledgements of a target another process follows
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { loadPipeline, planPipeline, convergeOnce, pipelineHealth } from '../../src/pipeline/index.ts';
import { lockFollower } from '../../src/apply/sync/index.ts';
import { acks, appSource, put } from './support/run.ts';

/*
 * Two pipeline files on one source: this one (prune: true) declares
 * cache.db; another pipeline's run follows other.db. The other target's
 * acknowledgements are not this file's to forget: forgetting them let the
 * source prune the journal under a live follower, which then had to
 * rebuild its target. While its follower lock is held, plan, health
 * --config and a converging pass leave them alone; once no process
 * follows it, they are undeclared (and forgotten under prune) as before.
 */

describe('prune: true beside another pipeline', () => {
  test('keeps the acknowledgements of a target another process follows, and forgets them once nothing follows it', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    appSource(src);
    const config = path.join(tmp, 'sluice.yml');
    const file = (targets: string[], prune: boolean) =>
      put(
        config,
        `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n${targets.map((t) => `      - {path: ${t}, projections: ["*"]}\n`).join('')}${prune ? 'prune: true\n' : ''}`,
      );
    // The other pipeline's target, built once (as its run would).
    file(['cache.db', 'other.db'], false);
    await convergeOnce(await loadPipeline(config));
    expect(acks(src)).toEqual(['issues@cache.db', 'issues@other.db']);

    file(['cache.db'], true);
    const other = lockFollower(path.join(tmp, 'other.db'), 'run --config other.yml');
    try {
      const lockFile = fs.readdirSync(tmp).filter((f) => f.startsWith('other.db-follower'));
      const stamp = lockFile.map((f) => fs.statSync(path.join(tmp, f)).mtimeMs);
      const pipeline = await loadPipeline(config);
      const plan = await planPipeline(pipeline);
      expect(plan.sources.flatMap((s) => s.acknowledgements)).toEqual([]);
      const health = pipelineHealth(pipeline);
      expect(health.sources.flatMap((s) => s.acknowledgements.filter((x) => !x.declared))).toEqual([]);
      const pass = await convergeOnce(pipeline);
      expect(pass.sources.flatMap((s) => s.forgotten)).toEqual([]);
      expect(acks(src)).toEqual(['issues@cache.db', 'issues@other.db']);
      // Looking at the lock wrote nothing to it, and made no file beside it.
      expect(fs.readdirSync(tmp).filter((f) => f.startsWith('other.db-follower'))).toEqual(lockFile);
      expect(lockFile.map((f) => fs.statSync(path.join(tmp, f)).mtimeMs)).toEqual(stamp);
    } finally {
      other.release();
    }

    // Nothing follows other.db now: its acknowledgement is undeclared, and prune forgets it.
    const pipeline = await loadPipeline(config);
    const plan = await planPipeline(pipeline);
    expect(plan.sources.flatMap((s) => s.acknowledgements.map((x) => `${x.projection}@${path.basename(x.target)}:${x.does}`))).toEqual([
      'issues@other.db:forget',
    ]);
    const pass = await convergeOnce(pipeline);
    expect(pass.sources.flatMap((s) => s.forgotten).map((n) => n.slice(0, n.indexOf('@')))).toEqual(['issues']);
    expect(acks(src)).toEqual(['issues@cache.db']);
  }, 60_000);
});
