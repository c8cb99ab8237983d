import type { Command } from 'commander';
import { health } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';

export function registerHealth(program: Command): void {
  program
    .command('health')
    .description('Show each projection of a target: state, lag (events and ms), last error. Exits 3 when anything needs action.')
    .argument('<target>', 'target SQLite database')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice health cache.db --json')
    .action((target: string, opts: { json?: boolean }) => {
      const h = health(target);
      emit(opts, S.healthOutput, h, () =>
        h.projections.length === 0
          ? 'no projections in this target'
          : h.projections
              .map((p) => `${p.needsAction ? '!!' : 'ok'} ${p.name} [${p.kind}] ${p.state}${p.reason !== null ? ` ${p.reason}` : ''} seq ${p.seq}${p.lagEvents !== null ? ` lag ${p.lagEvents} events / ${p.lagMs ?? 0} ms` : ''}${p.action !== undefined ? `\n   -> ${p.action}` : ''}`)
              .join('\n'),
      );
      if (!h.ok) throw new ExitSignal(3);
    });
}
