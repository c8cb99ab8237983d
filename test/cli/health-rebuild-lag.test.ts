// health does not say "lag 0" for a projection whose cursor cannot continue: its lag is not known, and past --max-lag-* it needs action
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { cli, makeSource } from '../apply/support/target.ts';

/*
 * A table taken off capture, written while off (by the sqlite3 CLI, which
 * nothing records), and captured again: the mirror lacks that row until the
 * next sync rebuilds it (TABLE_REARMED). health said "lag 0 events / 0 ms",
 * so `health --max-lag-events 0 --max-lag-ms 0`, a check a cron job runs,
 * exited 0 over a target missing a row, for as long as no sync ran. The same
 * after `sluice bump` (which says readers must rebuild). Now the lag of such
 * a projection is unknown (null, not printed), and past any lag bound it
 * needs action, naming the sync that rebuilds it; once that sync ran, lag 0
 * again, exit 0.
 */

interface HealthJson {
  readonly ok: boolean;
  readonly projections: readonly {
    readonly name: string;
    readonly lagEvents: number | null;
    readonly lagMs: number | null;
    readonly rebuild: string | null;
    readonly problems: readonly string[];
  }[];
}

const healthOf = (args: readonly string[]) => {
  const r = cli(['health', ...args, '--json']);
  return { status: r.status, json: JSON.parse(r.stdout) as HealthJson };
};

describe('sluice health', () => {
  test('after a table was disabled, written and enabled again, its mirror has no lag 0 and fails the lag bounds until a sync rebuilds it', ({
    tmp,
    makeDb,
  }) => {
    const src = makeSource(makeDb, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');", ['t']);
    src.db.close();
    const tgt = path.join(tmp, 'cache.db');
    expect(cli(['sync', src.file, tgt]).status).toBe(0);
    expect(cli(['disable', src.file, 't']).status).toBe(0);
    runSqliteCli(src.file, "INSERT INTO t VALUES (2, 'written while off');");
    expect(cli(['enable', src.file, 't']).status).toBe(0);

    const plain = healthOf([tgt]);
    const p = plain.json.projections.find((x) => x.name === 't');
    expect(p?.rebuild).toBe('TABLE_REARMED');
    expect(p?.lagEvents, 'the lag of a mirror that lacks a row').toBeNull();
    expect(p?.lagMs).toBeNull();
    // Without bounds it is what the docs say: the next sync rebuilds it by itself, no action.
    expect(plain.status).toBe(0);
    const text = cli(['health', tgt]).stdout;
    expect(text).not.toMatch(/lag 0 events/);
    expect(text).toContain('rebuilds it by itself (TABLE_REARMED)');

    for (const bound of [
      ['--max-lag-events', '0'],
      ['--max-lag-ms', '60000'],
    ]) {
      const h = healthOf([tgt, ...bound]);
      expect(h.status, `health ${bound.join(' ')}`).toBe(3);
      const problems = h.json.projections.find((x) => x.name === 't')?.problems ?? [];
      expect(problems.join('\n')).toMatch(/lag of t is not known.*TABLE_REARMED.*sluice sync/s);
    }

    // The sync that rebuilds it: the row is there, lag 0, within the bounds.
    expect(cli(['sync', src.file, tgt]).status).toBe(0);
    const after = healthOf([tgt, '--max-lag-events', '0', '--max-lag-ms', '60000']);
    expect(after.status).toBe(0);
    expect(after.json.projections.find((x) => x.name === 't')).toMatchObject({ lagEvents: 0, rebuild: null, problems: [] });
  });

  test('after sluice bump, a projection is not within --max-lag-events until the sync that rebuilds it', ({ tmp, makeDb }) => {
    const src = makeSource(makeDb, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');", ['t']);
    src.db.close();
    const tgt = path.join(tmp, 'cache.db');
    expect(cli(['sync', src.file, tgt]).status).toBe(0);
    // A bulk load with capture's triggers out of the way, then the bump that tells readers to rebuild.
    expect(cli(['bump', src.file, '--reason', 'bulk load']).status).toBe(0);
    const h = healthOf([tgt, '--max-lag-events', '0']);
    expect(h.json.projections[0]?.rebuild).toBe('GENERATION_CHANGED');
    expect(h.json.projections[0]?.lagEvents).toBeNull();
    expect(h.status).toBe(3);
    expect(cli(['sync', src.file, tgt]).status).toBe(0);
    expect(healthOf([tgt, '--max-lag-events', '0']).status).toBe(0);
  });
});
