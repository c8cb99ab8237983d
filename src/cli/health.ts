import fs from 'node:fs';
import type { Command } from 'commander';
import { health, isReasonCode, openDatabase, REASONS, type FedLag, type ProjectionHealth } from '../index.ts';
import { readProjections } from '../internal.ts';
import * as S from './json-schemas.ts';
import { addNatsOptions, natsAccess, natsConnectionOf, type NatsCliOptions } from './nats-options.ts';
import { parseWholeNumber } from './enable.ts';
import { emit, ExitSignal } from './output.ts';

export function registerHealth(program: Command): void {
  const command = program
    .command('health')
    .description(
      'Show each projection of a target: state, lag (events and ms), failed syncs, whether its cursor can continue, its tables. Read-only. Exits 3 when anything needs action.',
    )
    .argument('<target>', 'target SQLite database');
  addNatsOptions(command, {
    optional: true,
    description:
      'for a target fed by sluice subscribe: read the lag from the NATS stream at this URL (default: the URL and stream subscribe recorded in the target; a lag that cannot be read needs action); the other --nats-* options log in there, or to the recorded URL',
  })
    .option('--max-lag-events <n>', 'a projection more than n events behind needs action', parseWholeNumber)
    .option('--max-lag-ms <n>', 'a projection whose oldest unapplied event waited more than n ms needs action', parseWholeNumber)
    .option('--stream <name>', "with --nats: the publisher's stream (default: the one subscribe recorded, else SLUICE_<source id>)")
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  $ sluice health cache.db --max-lag-events 10000 --max-lag-ms 60000 --json\n  $ sluice health subscribed.db --nats nats://127.0.0.1:4222 --max-lag-ms 60000',
    )
    .action(
      async (target: string, opts: NatsCliOptions & { json?: boolean; maxLagEvents?: number; maxLagMs?: number; stream?: string }) => {
        const fedLag = await streamLags(target, opts, command);
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
      },
    );
}

/**
 * The lags health reads from NATS: with --nats, from that URL; without it, a
 * subscribed projection's lag is read where its subscriber reads, the URL
 * and stream the target records. The broker (and the NATS client) is loaded
 * only then: a target no subscriber feeds, the usual one, gets no lags from
 * it either way, and health of it loads no NATS (docs/architecture.md, "Entries").
 */
async function streamLags(
  target: string,
  opts: NatsCliOptions & { stream?: string },
  command: Command,
): Promise<ReadonlyMap<string, FedLag> | undefined> {
  const nats = natsConnectionOf(opts, command);
  if (nats === undefined && !recordsSubscriber(target)) return undefined;
  const broker = await import('../broker/index.ts');
  return nats === undefined
    ? await broker.readRecordedStreamLags(target, natsAccess(opts, command))
    : await broker.readStreamLags(target, nats, opts.stream === undefined ? {} : { stream: opts.stream });
}

/** Whether the target records a projection fed by sluice subscribe (the ones readRecordedStreamLags reads are among them). */
function recordsSubscriber(target: string): boolean {
  if (!fs.existsSync(target)) return false; // health says so itself
  const db = openDatabase(target, { readonly: true, role: 'target' });
  try {
    return readProjections(db, 'main').some((p) => p.fedBy?.via === 'subscribe');
  } catch {
    return false; // a target health cannot read: health reports it
  } finally {
    db.close();
  }
}

/** A cursor the next sync rebuilds from by itself: not a problem, but said. */
function rebuildNote(p: ProjectionHealth): string {
  const r = p.rebuild;
  if (r === null || !isReasonCode(r) || !(REASONS[r].kinds as readonly string[]).includes('rebuilt')) return '';
  return `\n   .. the next sluice sync rebuilds it by itself (${r})`;
}
