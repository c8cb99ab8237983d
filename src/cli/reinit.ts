import fs from 'node:fs';
import type { Command } from 'commander';
import { InvalidInputError, Syncer } from '../index.ts';
import { collect } from './enable.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';
import { stderr } from './closed-pipe.ts';
import { describeReport, loadInputs, sourceTables } from './sync.ts';
import { reportJson } from './sync-json.ts';

export function registerReinit(program: Command): void {
  program
    .command('reinit')
    .description(
      "Rebuild one projection from a fresh snapshot, whatever its state: the repair of a suspension once its cause is fixed. A mirror, map, fts5 index, or custom projection that declares its tables is built beside the live one in bounded transactions and swapped in atomically (readers see the old rows until the swap); a custom one that declares none is rebuilt in one transaction; the target's other projections sync as usual.",
    )
    .argument('<source>', 'source SQLite database (capture enabled)')
    .argument('<target>', 'target SQLite database')
    .argument('<projection>', 'the projection to rebuild (sluice health lists them)')
    .option(
      '--projection <file>',
      'definition files to sync with (repeatable; default: the ones stored in the target)',
      collect,
      [] as string[],
    )
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice reinit app.db cache.db issues   # after a TARGET_DIVERGED suspension')
    .action(async (source: string, target: string, projection: string, opts: { projection: string[]; json?: boolean }) => {
      // A target path that holds nothing (mistyped, or the empty path SQLite makes a temporary database of) has no projection to rebuild: sync would build a new target there.
      if (target === '' || !fs.existsSync(target))
        throw new InvalidInputError(
          'PROJECTION_NOT_FOUND',
          `Cannot reinit ${projection}: target ${target === '' ? '(an empty path)' : target} does not exist, so it holds no projection to rebuild. Nothing was written. Check the path (sluice sync builds a new target).`,
        );
      const defs = await loadInputs(opts.projection);
      const syncer = await Syncer.open(source, target, { ...(defs === undefined ? {} : { projections: defs }), reinit: [projection] });
      try {
        const report = await syncer.runOnce();
        emit(opts, S.syncOutput, reportJson(report), () => describeReport(report, { source, target, tables: sourceTables(syncer) }));
        for (const p of report.projections)
          if (p.error !== undefined) stderr().write(`sluice: ${p.error.code}: projection ${p.name}: ${p.error.message}\n`);
        if (report.projections.some((p) => p.error !== undefined)) throw new ExitSignal(1);
        if (report.projections.some((p) => p.state !== 'active')) throw new ExitSignal(3);
      } finally {
        syncer.close();
      }
    });
}
