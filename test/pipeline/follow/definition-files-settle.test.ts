// sluice run takes a changed pipeline file once it stopped changing, never half-written
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { DefinitionFiles } from '../../../src/pipeline/follow/index.ts';

/*
 * run's watch looks at its files every 0.5 s. An editor that truncates the
 * file and then writes it, or a copy in progress, can be seen in between:
 * a file that still parses but declares less (with prune: true, run would
 * drop what it no longer names). A change is taken only once two looks in
 * a row saw the same files.
 */
describe('DefinitionFiles.changedAndSettled', () => {
  test('is true only at the second look that sees the same changed file, and waits again while it keeps changing', ({ tmp }) => {
    const file = path.join(tmp, 'sluice.yml');
    const write = (text: string, mtimeS: number) => {
      fs.writeFileSync(file, text);
      fs.utimesSync(file, mtimeS, mtimeS);
    };
    write('sources: []\n', 1_000);
    const files = new DefinitionFiles([file]);
    expect(files.changedAndSettled()).toBe(false);
    expect(files.changedAndSettled()).toBe(false); // unchanged since loaded

    write('sources:\n', 2_000); // half-written
    expect(files.changedAndSettled()).toBe(false);
    write('sources:\n  - path: app.db\n', 3_000); // still being written
    expect(files.changedAndSettled()).toBe(false);
    expect(files.changedAndSettled()).toBe(true); // the same at two looks in a row
    expect(files.changedAndSettled()).toBe(true); // until run loads it (and watches with a new DefinitionFiles)
    write('sources:\n  - path: app2.db\n', 4_000); // changed again before that: waits again
    expect(files.changedAndSettled()).toBe(false);
  });

  test('a file saved while it was being loaded reads as changed, since the stamps taken before the load win', ({ tmp }) => {
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, 'sources: []\n');
    fs.utimesSync(file, 1_000, 1_000);
    const watching = new DefinitionFiles([file]);
    const before = watching.stampsNow();
    // The reload reads the file, and an editor saves it again before the reload is done.
    fs.writeFileSync(file, 'sources:\n  - path: app.db\n');
    fs.utimesSync(file, 2_000, 2_000);
    const reloaded = new DefinitionFiles([file], before);
    expect(reloaded.changedAndSettled()).toBe(false);
    expect(reloaded.changedAndSettled(), 'loaded again at the next settled look').toBe(true);
    // Without the stamps from before, the save is taken as what was loaded: never loaded (the bug).
    const stampedAfter = new DefinitionFiles([file]);
    stampedAfter.changedAndSettled();
    expect(stampedAfter.changedAndSettled()).toBe(false);
  });
});
