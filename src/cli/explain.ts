import type { Command } from 'commander';
import { explainAlter, type ExplainReport } from '../index.ts';
import { collect } from './enable.ts';
import { loadInputs } from './sync.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';

/** explain's human output (alter --target prints its forecast with it too). */
export function describeExplain(r: ExplainReport): string {
  if (r.projections.length === 0) return 'no projections to explain';
  return r.projections
    .map((p) => {
      const cost =
        p.classification === 'Compatible'
          ? ''
          : ` (rebuild: ${p.cost.rows ?? '?'} rows${p.cost.neededBytes === null ? '' : `, about ${p.cost.neededBytes} bytes of disk, ${p.cost.freeBytes ?? '?'} free`})`;
      const head = `${p.name} [${p.kind}]: ${p.classification} ${p.reason}${p.affected.length > 0 ? `, affects ${p.affected.join(', ')}` : ''}${cost}`;
      const lines = p.changes.map((c) => {
        const unproved = c.affected.map((part) => `${part}: ${c.proof[part]?.why ?? 'no proof'}`);
        return `   - ${c.change.kind} ${c.classification} ${c.reason}${c.why === undefined ? '' : `: ${c.why}`}${unproved.length > 0 && c.classification !== 'Compatible' ? ` [${unproved.join('; ')}]` : ''}`;
      });
      const next =
        p.sync.does === 'continue'
          ? 'continues from its cursor'
          : p.sync.does === 'rebuild'
            ? `rebuilds it${p.sync.reason === null ? ' (first build)' : ` (${p.sync.reason})`}${p.sync.swapped ? ', beside the live one, then swaps it in' : ', in one transaction'}`
            : p.sync.does === 'refuse'
              ? `refuses ${p.sync.run ? 'the whole run' : 'it'} (${p.sync.code}), writing nothing`
              : `suspends it (${p.sync.reason})`;
      const fp = `   next sync: ${next}\n   fingerprint ${p.inputs.old?.fingerprint ?? '(none)'} -> ${p.inputs.new.fingerprint ?? '(does not compile)'}`;
      return [head, ...lines, fp, ...(p.repair === undefined ? [] : [`   -> ${p.repair}`])].join('\n');
    })
    .join('\n');
}

export function registerExplain(program: Command): void {
  program
    .command('explain')
    .description(
      'Classify each change to a projection (its definition, its source table, its cursor) as Compatible, Rebuildable or Rejected, with the reason, the state it affects and the rebuild cost. Writes nothing. Exits 3 when anything is not Compatible.',
    )
    .argument('<source>', 'source SQLite database (capture enabled)')
    .argument('<target>', 'target SQLite database written by sync')
    .option(
      '--projection <file>',
      'projection definition file, .json or .ts (repeatable; default: the stored definitions)',
      collect,
      [] as string[],
    )
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice explain app.db cache.db --projection projections/open-issues.json --json')
    .action(async (source: string, target: string, opts: { projection: string[]; json?: boolean }) => {
      const projections = await loadInputs(opts.projection);
      const r = await explainAlter(source, target, projections === undefined ? {} : { projections });
      emit(opts, S.explainOutput, r, () => describeExplain(r));
      if (!r.ok) throw new ExitSignal(3);
    });
}
