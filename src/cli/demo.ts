import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { buildTracker, TRACKER_TABLES } from '../../fixtures/tracker.ts';
import { openSource } from '../capture/open-source.ts';
import { enable } from '../capture/enable.ts';
import { status } from '../capture/status.ts';
import { emit } from './output.ts';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('Build the bundled issue-tracker fixture, enable capture and show what sluice records.')
    .option('--dir <dir>', 'work directory (default: a new temp directory)')
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  $ sluice demo --dir /tmp/sluice-demo')
    .action((opts: { dir?: string; json?: boolean }) => {
      const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-demo-'));
      fs.mkdirSync(dir, { recursive: true });
      const source = path.join(dir, 'tracker.db');
      buildTracker(source);
      const db = openSource(source);
      try {
        const en = enable(db, [...TRACKER_TABLES]);
        db.prepare("UPDATE issues SET state = 'closed', updated_at = '2026-03-01' WHERE repo_id = 1 AND number <= 5").run();
        db.prepare("INSERT INTO comments (repo_id, issue_number, author, body, created_at) VALUES (1, 1, 'demo', 'closing as fixed', '2026-03-01')").run();
        db.prepare("UPDATE issues SET state = 'closed' WHERE repo_id = 1 AND number = 1").run(); // no-op: already closed
        const s = status(db);
        emit(opts, { dir, source, enable: en, status: s }, () =>
          [
            `fixture: ${source}`,
            `capture ${s.sourceId} generation ${s.generation}: ${s.tables.map((t) => `${t.name}(${t.keyColumns.join(',')})`).join(' ')}`,
            `wrote 5 updates, 1 insert, 1 no-op update -> journal high-water seq ${s.seq} (no-op skipped)`,
            ...s.tables.map((t) => `  ${t.name}: last seq ${t.lastSeq}, ${t.armed ? 'armed' : `UNARMED ${t.reason ?? ''}`}`),
          ].join('\n'),
        );
        if (s.seq !== 6) throw new Error(`demo check failed: expected 6 journaled events, found ${s.seq}`);
      } finally {
        db.close();
      }
    });
}
