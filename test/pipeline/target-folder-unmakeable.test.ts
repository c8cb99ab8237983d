// a declared target whose folder cannot be made is refused naming the part of its path in the way
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../support/fixtures.ts';
import { convergeOnce, loadPipeline, planPipeline } from '../../src/pipeline/index.ts';
import { appSource, put } from './support/run.ts';

/*
 * run and a converging pass make a declared target's missing folder. When
 * a part of its path is a file, or a symbolic link to a folder that does
 * not exist (a disk not mounted), nothing is made and the refusal names
 * that part and what to do about it; "give this user write access" would
 * not help.
 */

describe.skipIf(process.platform === 'win32')('a declared target whose folder cannot be made', () => {
  test('a file, or a link to nothing, in its path is named by plan and by a pass, and nothing is made', async ({ tmp }) => {
    appSource(path.join(tmp, 'app.db'));
    fs.writeFileSync(path.join(tmp, 'notes'), 'a file\n');
    fs.symlinkSync(path.join(tmp, 'disk', 'data'), path.join(tmp, 'data'));
    const config = path.join(tmp, 'sluice.yml');
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - {path: notes/x/a.db, projections: ["*"]}\n      - {path: data/b.db, projections: ["*"]}\n`,
    );
    // plan says so first, as it predicts the pass (it said both would be built), and makes nothing.
    const plan = await planPipeline(await loadPipeline(config));
    expect(plan.converged).toBe(false);
    expect(plan.targets.map((t) => [t.exists, t.refused?.code, t.refused?.projection])).toEqual([
      [false, 'DB_NOT_WRITABLE', null],
      [false, 'DB_NOT_WRITABLE', null],
    ]);
    expect(plan.targets[0]?.refused?.fix).toContain(`${path.join(tmp, 'notes')} is a file, not a folder`);
    expect(plan.targets[1]?.refused?.fix).toContain(`${path.join(tmp, 'data')} is a symbolic link`);
    const pass = await convergeOnce(await loadPipeline(config));
    const [file, link] = pass.targets.map((t) => t.error);
    expect(file?.code).toBe('DB_NOT_WRITABLE');
    expect(file?.message).toContain(`${path.join(tmp, 'notes')} is a file, not a folder`);
    expect(file?.message).not.toContain('write access');
    expect(link?.code).toBe('DB_NOT_WRITABLE');
    expect(link?.message).toContain(
      `${path.join(tmp, 'data')} is a symbolic link to ${path.join(tmp, 'disk', 'data')}, which does not exist`,
    );
    expect(link?.message).not.toContain('write access');
    expect(fs.existsSync(path.join(tmp, 'disk'))).toBe(false);
  });
});
