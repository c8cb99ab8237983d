import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../index.ts';
import { withWriteTransaction } from '../internal.ts';
import { packageRoot } from './package-root.ts';

export const TRACKER_TABLES = ['repositories', 'issues', 'comments', 'labels'] as const;

const WORDS = [
  'crash',
  'sqlite',
  'cursor',
  'index',
  'trigger',
  'search',
  'replica',
  'latency',
  'snapshot',
  'schema',
  'journal',
  'wal',
  'vacuum',
  'blob',
  'unicode',
  'collation',
  'fts5',
  'rebuild',
  'timeout',
  'deadlock',
];

/** Small deterministic PRNG (mulberry32): the fixture is the same on every machine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function sentence(rand: () => number, words: number): string {
  return Array.from({ length: words }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
}

export interface TrackerScale {
  readonly repositories: number;
  readonly issuesPerRepo: number;
  readonly commentsPerIssue: number;
}

/** The tracker's schema: src/cli/demo-tracker.sql, read from the package (tsc does not copy it into dist/). */
function trackerSqlPath(): string {
  return path.join(packageRoot(), 'src', 'cli', 'demo-tracker.sql');
}

/** Creates the issue-tracker fixture database at `file` (replacing it). */
export function buildTracker(
  file: string,
  scale: TrackerScale = { repositories: 5, issuesPerRepo: 40, commentsPerIssue: 3 },
  seed = 42,
): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
  const db = openDatabase(file, { create: true, role: 'fixture' });
  try {
    db.exec(fs.readFileSync(trackerSqlPath(), 'utf8'));
    const rand = prng(seed);
    const insRepo = db.prepare('INSERT INTO repositories (id, owner, name, description, stars, created_at) VALUES (?, ?, ?, ?, ?, ?)');
    const insIssue = db.prepare(
      'INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insComment = db.prepare(
      'INSERT INTO comments (repo_id, issue_number, author, body, attachment, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const insLabel = db.prepare('INSERT INTO labels (repo_id, name, color) VALUES (?, ?, ?)');
    // The demo's own new file, which nothing else has open: taking the write lock at BEGIN changes nothing.
    withWriteTransaction(db, () => {
      for (let r = 1; r <= scale.repositories; r++) {
        insRepo.run(
          BigInt(r),
          `owner${r % 3}`,
          `repo-${r}`,
          sentence(rand, 6),
          BigInt(Math.floor(rand() * 5000)),
          `2026-01-${String((r % 28) + 1).padStart(2, '0')}`,
        );
        for (const label of ['bug', 'feature', 'question'])
          insLabel.run(BigInt(r), label, Buffer.from([Math.floor(rand() * 256), Math.floor(rand() * 256), Math.floor(rand() * 256)]));
        for (let n = 1; n <= scale.issuesPerRepo; n++) {
          insIssue.run(
            BigInt(r),
            BigInt(n),
            sentence(rand, 4),
            sentence(rand, 20),
            rand() < 0.7 ? 'open' : 'closed',
            `user${Math.floor(rand() * 50)}`,
            rand() * 100,
            '2026-02-01',
          );
          for (let c = 0; c < scale.commentsPerIssue; c++) {
            const attachment = rand() < 0.2 ? Buffer.from(Array.from({ length: 16 }, () => Math.floor(rand() * 256))) : null;
            insComment.run(BigInt(r), BigInt(n), `user${Math.floor(rand() * 50)}`, sentence(rand, 12), attachment, '2026-02-02');
          }
        }
      }
    });
  } finally {
    db.close();
  }
}
