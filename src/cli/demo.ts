import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { DEMO_STEP_COUNT, runDemo } from './demo-steps.ts';
import { DEMO_DATABASES, prepareDemoDir } from './demo-dir.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';
import { outPath } from './out-path.ts';
import { shellWord } from '../internal.ts';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'The tour on a bundled issue tracker: capture, sync into a cache (mirror, map, FTS5, custom), writes from Python, search, verify, a crash and its resume.',
    )
    .option(
      '--dir <dir>',
      'work directory (default: a new temp directory); a folder holding a tracker.db or cache.db the demo did not make is refused',
      outPath,
    )
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice demo --dir /tmp/sluice-demo')
    .action(async (opts: { dir?: string; json?: boolean }) => {
      const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-demo-'));
      prepareDemoDir(dir); // never replaces a file the demo did not make
      const started = performance.now();
      const steps = await runDemo(dir);
      const ok = steps.length === DEMO_STEP_COUNT && steps.every((s) => s.ok);
      const total = Math.round(performance.now() - started);
      emit(opts, S.demoOutput, { ok, dir, ms: total, steps }, () =>
        [
          `sluice demo in ${dir}`,
          ...steps.map(
            (s, i) =>
              `${String(i + 1).padStart(2)}. ${s.ok ? 'ok  ' : 'FAIL'} ${s.step.padEnd(44)} ${String(s.ms).padStart(6)} ms  ${s.detail}`,
          ),
          ok
            ? `all steps checked out in ${total} ms. Try: npx sluice health ${shellWord(path.join(dir, DEMO_DATABASES.cache))}`
            : 'the demo FAILED: see the step marked FAIL',
        ].join('\n'),
      );
      if (!ok) throw new ExitSignal(1);
    });
}
