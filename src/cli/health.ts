import type { Command } from 'commander';
import { health, isReasonCode, readRecordedStreamLags, readStreamLags, REASONS, type ProjectionHealth } from '../index.ts';
import * as S from './json-schemas.ts';
import { parseWholeNumber } from './enable.ts';
import { emit, ExitSignal } from './output.ts';

export function registerHealth(program: Command): void {
  program
    .command('health')
    .description(
      'Show each projection of a target: state, lag (events and ms), failed syncs, whether its cursor can continue, its tables. Read-only. Exits 3 when anything needs action.',
    )
    .argument('<target>', 'target SQLite database')
    .option('--max-lag-events <n>', 'a projection more than n events behind needs action', parseWholeNumber)
    .option('--max-lag-ms <n>', 'a projection whose oldest unapplied event waited more than n ms needs action', parseWholeNumber)
    .option(
      '--nats <url>',
      'for a target fed by sluice subscribe: read the lag from the NATS stream at this URL (default: the URL and stream subscribe recorded in the target; a lag that cannot be read needs action)',
    )
    .option('--stream <name>', "with --nats: the publisher's stream (default: the one subscribe recorded, else SLUICE_<source id>)")
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice health cache.db --max-lag-events 10000 --max-lag-ms 60000 --json\n  $ sluice health subscribed.db --nats nats://127.0.0.1:4222 --max-lag-ms 60000',
    )
    .action(async (target: string, opts: { json?: boolean; maxLagEvents?: number; maxLagMs?: number; nats?: string; stream?: string }) => {
      // Without --nats, a subscribed projection's lag is read where its subscriber reads: the URL and stream the target records.
      const fedLag =
        opts.nats === undefined
          ? await readRecordedStreamLags(target)
          : await readStreamLags(target, opts.nats, opts.stream === undefined ? {} : { stream: opts.stream });
      const h = health(target, {
        ...(opts.maxLagEvents === undefined ? {} : { maxLagEvents: opts.maxLagEvents }),
        ...(opts.maxLagMs === undefined ? {} : { maxLagMs: opts.maxLagMs }),
        ...(fedLag === undefined ? {} : { fedLag }),
      });
      emit(opts, S.healthOutput, h, () =>
        h.projections.length === 0
          ? 'no projections in this target'
          : h.projections
              .map(
                (p) =>
                  `${p.needsAction ? '!!' : 'ok'} ${p.name} [${p.kind}] ${p.state}${p.reason !== null ? ` ${p.reason}` : ''} seq ${p.seq}${p.lagEvents !== null ? ` lag ${p.lagEvents} events / ${p.lagMs ?? 0} ms` : ''}${p.problems.map((x) => `\n   -> ${x}`).join('')}${rebuildNote(p)}${p.note === undefined ? '' : `\n   .. ${p.note}`}`,
              )
              .join('\n'),
      );
      if (!h.ok) throw new ExitSignal(3);
    });
}

/** A cursor the next sync rebuilds from by itself: not a problem, but said. */
function rebuildNote(p: ProjectionHealth): string {
  const r = p.rebuild;
  if (r === null || !isReasonCode(r) || !(REASONS[r].kinds as readonly string[]).includes('rebuilt')) return '';
  return `\n   .. the next sluice sync rebuilds it by itself (${r})`;
}
