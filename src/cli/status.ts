import type { Command } from 'commander';
import { enableCommand, enableHint, openSource, status } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit, ExitSignal } from './output.ts';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'Read-only report: source id, generation, high-water seq, retention, tables and consumers. Exits 3 when a table is unarmed.',
    )
    .argument('<db>', 'source SQLite database')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice status app.db --json')
    .action((dbPath: string, opts: { json?: boolean }) => {
      const db = openSource(dbPath, { readonly: true });
      try {
        const s = status(db);
        emit(opts, S.statusOutput, s, () => {
          if (!s.enabled)
            return `capture is not enabled${s.problem !== undefined ? ` (${s.problem})` : ''}; run: ${enableHint(db, dbPath)}`;
          const lines = [
            `source ${s.sourceId}  generation ${s.generation}  seq ${s.seq}  pruned through ${s.prunedThrough}  retention ${s.retention}`,
            ...(s.lastReason === null ? [] : [`  last change: ${s.lastReason}`]),
            ...s.tables.map(
              (t) =>
                `  ${t.armed ? 'armed  ' : 'UNARMED'} ${t.name} [${t.mode}] key (${t.keyColumns.join(', ')}) last seq ${t.lastSeq}${t.reason !== undefined ? `  ${t.reason}: ${t.detail ?? ''}; fix: ${enableCommand(dbPath, [t.name])}` : ''}`,
            ),
            ...s.consumers.map((c) => `  consumer ${c.name} at seq ${c.seq} (lag ${c.lag})`),
          ];
          return lines.join('\n');
        });
        if (!s.enabled || s.tables.some((t) => !t.armed)) throw new ExitSignal(3);
      } finally {
        db.close();
      }
    });
}
