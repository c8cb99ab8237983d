import type { Command } from 'commander';
import { protect } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';

export function registerProtect(program: Command): void {
  program
    .command('protect')
    .description(
      "Refuse hand edits of a target's projections: guard triggers on their tables fail any write made outside sluice (opt-in; costs every row sluice writes a trigger call, see docs/projections.md). An fts5 index itself cannot be guarded.",
    )
    .argument('<target>', 'target SQLite database')
    .option('--off', 'take the protection off (drop the guard triggers)')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExamples:\n  $ sluice protect cache.db --json\n  $ sluice protect cache.db --off')
    .action((target: string, opts: { json?: boolean; off?: boolean }) => {
      const r = protect(target, opts.off !== true);
      emit(opts, S.protectOutput, r, () =>
        [
          r.protected
            ? `protected ${target}: writes outside sluice to ${r.tables.map((t) => `${t.table} (${t.projection})`).join(', ') || 'no table'} now fail`
            : `${target} is no longer protected: the guard triggers are dropped`,
          ...r.unguarded.map((u) => `not guarded: ${u.table} (${u.projection}): ${u.why}`),
          ...r.wasUnguarded.map(
            (u) =>
              `needs action: ${u.table} (${u.projection}) was not guarded (its guard triggers were missing or altered), so writes outside sluice may have gone in: it is guarded again, and sluice health reports it until sluice verify SRC ${target} compares ${u.projection} with its source (suspending it with TARGET_EDITED if they differ; repair: sluice reinit)`,
          ),
        ].join('\n'),
      );
      if (r.wasUnguarded.length > 0) throw new ExitSignal(3);
    });
}
