import type { Command } from 'commander';
import { openSource, forget } from '../index.ts';
import * as S from './json-schemas.ts';
import { emit } from './output.ts';

export function registerForget(program: Command): void {
  program
    .command('forget')
    .description(
      "Remove one consumer's acknowledgement row from a source (sluice status lists them; a sync's is the projection's name, @, and its target's real path), in one short write transaction. Nothing else is written.",
    )
    .argument('<db>', 'source SQLite database')
    .argument('<consumer>', 'the consumer name, exactly as sluice status prints it')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice forget app.db issues_search@/srv/cache.db --json')
    .action((dbPath: string, consumer: string, opts: { json?: boolean }) => {
      const db = openSource(dbPath);
      try {
        const r = forget(db, consumer);
        const out = { consumer: r.name, seq: r.seq, projection: r.projection, target: r.target };
        emit(opts, S.forgetOutput, out, () => `forgot consumer ${r.name} (it had acknowledged seq ${r.seq})`);
      } finally {
        db.close();
      }
    });
}
