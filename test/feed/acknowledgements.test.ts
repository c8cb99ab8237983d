// acknowledgements show consumer lag without holding back pruning
import { test, expect, describe, runCli } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { snapshot, readBatch, acknowledge, forgetConsumer } from '../../src/feed/index.ts';

describe('acknowledge', () => {
  test('status lists each consumer with its acknowledged seq and its lag behind the high-water mark', ({ makeDb }) => {
    const { db, file } = makeDb('a.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t']);
    const start = snapshot(db, ['t'], { onRow: () => {} }).cursor;
    const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
    for (let i = 0; i < 10; i++) ins.run(i);
    const b = readBatch(db, start, { limit: 4 });
    acknowledge(db, 'search-index', b.to);
    acknowledge(db, 'cache', start);
    expect(status(db).consumers.map((c) => ({ name: c.name, seq: c.seq, lag: c.lag }))).toEqual([
      { name: 'cache', seq: 0, lag: 10 },
      { name: 'search-index', seq: 4, lag: 6 },
    ]);
    for (let i = 0; i < 5; i++) ins.run(i);
    const b2 = readBatch(db, b.to, { limit: 100 });
    acknowledge(db, 'search-index', b2.to);
    const s = status(db);
    expect(s.consumers.find((c) => c.name === 'search-index')).toMatchObject({ seq: 15, lag: 0 });
    expect(s.consumers.find((c) => c.name === 'cache')).toMatchObject({ seq: 0, lag: 15 });
    db.close();
    const cli = runCli(['status', file, '--json']);
    expect(cli.status).toBe(0);
    expect((JSON.parse(cli.stdout) as { consumers: unknown[] }).consumers).toEqual([
      expect.objectContaining({ name: 'cache', lag: 15 }),
      expect.objectContaining({ name: 'search-index', lag: 0 }),
    ]);
  });

  test('a lagging consumer never holds back pruning, and forgetting it removes it', ({ makeDb }) => {
    const { db } = makeDb('a.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t'], { retention: 1024 });
    acknowledge(db, 'slow', snapshot(db, ['t'], { onRow: () => {} }).cursor);
    const upsert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v');
    db.transaction(() => {
      for (let i = 0; i < 5000; i++) upsert.run(i % 10, i);
    })();
    const s = status(db);
    expect(s.prunedThrough).toBeGreaterThan(0);
    expect(s.journalRows).toBeLessThanOrEqual(1024 + 1024);
    expect(s.consumers).toEqual([expect.objectContaining({ name: 'slow', seq: 0, lag: 5000 })]);
    expect(forgetConsumer(db, 'slow')).toBe(true);
    expect(status(db).consumers).toEqual([]);
  });

  test('refuses an empty consumer name and a cursor of another source', ({ makeDb }) => {
    const { db } = makeDb('a.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t']);
    const { db: other } = makeDb('b.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(other, ['t']);
    const foreign = snapshot(other, ['t'], { onRow: () => {} }).cursor;
    expect(() => acknowledge(db, ' ', foreign)).toThrow(expect.objectContaining({ code: 'BAD_CONSUMER' }));
    expect(() => acknowledge(db, 'x', foreign)).toThrow(expect.objectContaining({ code: 'SOURCE_CHANGED' }));
    expect(status(db).consumers).toEqual([]);
  });
});
