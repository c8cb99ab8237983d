import type { Command } from 'commander';
import { verify } from '../index.ts';
import { repairAction } from '../internal.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';
import { stderr } from './closed-pipe.ts';
import { workBar } from './progress.ts';

/** What the bar says the projection being compared is doing, by what its step counts. */
const DOING = { events: 'rewinding to its cursor', rows: 'comparing rows', keys: 'comparing the changed keys at its cursor' } as const;

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('Compare every projection in a target with its source at one consistent seq (per-key checksums).')
    .argument('<source>', 'source SQLite database')
    .argument('<target>', 'target SQLite database')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice verify app.db cache.db --json')
    .action(async (source: string, target: string, opts: { json?: boolean }) => {
      const bar = workBar(opts, 'verify', 'projections');
      let r: Awaited<ReturnType<typeof verify>>;
      try {
        r = await verify(source, target, {
          ...(bar.active
            ? {
                onProgress: (p) =>
                  p.step === undefined
                    ? bar.update(p.done, p.count, `${p.projection} compared`)
                    : bar.update(
                        p.step.done,
                        p.step.total,
                        `${p.projection}: ${DOING[p.step.unit]} (${p.done + 1} of ${p.count} projections)`,
                        p.step.unit,
                      ),
              }
            : {}),
          onNote: (note) => {
            // On its own line, not inside the bar's.
            bar.stop();
            stderr().write(`sluice: note: ${note}\n`);
          },
        });
      } finally {
        bar.stop();
      }
      emit(
        opts,
        S.verifyOutput,
        r,
        () =>
          r.projections
            .map((p) =>
              p.ok
                ? `${p.name}: ok (${p.checked} keys at seq ${p.seq}${p.inFlight > 0 ? `, ${p.inFlight} changed since and skipped` : ''}${p.reason !== undefined ? `, ${p.reason}` : ''})`
                : (p.diffs.length > 0
                    ? `${p.name}: MISMATCH ${p.diffs.map((d) => `${d.kind} ${JSON.stringify(d.key)}`).join(', ')}${p.skipped === undefined ? '' : ` (${p.skipped})`}${p.sourceAffinity === undefined ? '' : ` (${p.reason ?? ''}: ${p.sourceAffinity.message})`}`
                    : `${p.name}: NOT VERIFIED ${p.reason ?? ''}: ${p.skipped ?? ''}`) +
                  // The repair, as health prints it, unless the line already says it.
                  (p.repair === undefined || p.skipped?.includes(p.repair) === true ? '' : `\n   -> ${p.repair}`),
            )
            .concat(
              r.projections.flatMap((p) =>
                p.suspended === true
                  ? [
                      p.sourceAffinity === undefined
                        ? `${p.name}: suspended, as sluice health now says too: ${repairAction(p.name, 'TARGET_EDITED', source, target)}`
                        : `${p.name}: suspended (${p.reason ?? ''}), as sluice health now says too, with the repair above`,
                    ]
                  : p.cleared === true
                    ? [
                        `${p.name}: equal to its source again: its TARGET_EDITED suspension is cleared, and the next sync goes on from its cursor`,
                      ]
                    : [],
              ),
            )
            .concat(r.projections.flatMap((p) => (p.caveats ?? []).map((c) => `${p.name}: note: ${c}`)))
            .join('\n') || 'no projections in this target',
      );
      if (!r.ok) throw new ExitSignal(3);
    });
}
