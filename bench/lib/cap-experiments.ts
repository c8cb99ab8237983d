/*
 * Bench only, scratch: capture variants made by rewriting the triggers enable() installed, for
 * instruction counts (npx tsx bench/shape-instructions.ts --rows 2000 --only floor-jdnow,x-src,...).
 * The x-* variants edit format 3's triggers (b578c32: per-event _sluice_last update, big guard and
 * prune bodies); against this build's enable() the noLast edit finds nothing to remove. docs/journal.md
 * (Format 4) has what they measured.
 */
import type { Db } from '../../src/sqlite/connection.ts';
import { enable } from '../../src/capture/enable.ts';
import type { Variant } from './workload.ts';
import { floorDdl } from './steady.ts';

type Edit = (name: string, sql: string) => string | null;

export function rewriteTriggers(db: Db, edit: Edit): void {
  const rows = db
    .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '\\_sluice\\_%' ESCAPE '\\' ORDER BY rowid")
    .all() as { name: string; sql: string }[];
  for (const r of rows) db.exec(`DROP TRIGGER "${r.name}"`);
  for (const r of rows) {
    const s = edit(r.name, r.sql);
    if (s !== null) db.exec(s);
  }
}

const noLast: Edit = (_n, sql) => sql.replace(/\n\s*UPDATE _sluice_last SET seq = last_insert_rowid\(\) WHERE tid = \d+;/g, '');
const noInsGuard: Edit = (n, sql) => (/_(bins|fins)$/.test(n) ? null : sql);
const noTypeofTR: Edit = (_n, sql) =>
  sql.replace(
    /\(OLD\."(name|r)" IS NOT NEW\."\1" COLLATE BINARY OR typeof\(OLD\."\1"\) <> typeof\(NEW\."\1"\)\)/g,
    'OLD."$1" IS NOT NEW."$1" COLLATE BINARY',
  );
const compose =
  (...es: Edit[]): Edit =>
  (n, s) =>
    es.reduce<string | null>((acc, e) => (acc === null ? null : e(n, acc)), s);

const ckptPrune = (db: Db) => {
  db.exec('DROP TRIGGER _sluice_journal_prune');
  db.exec(`CREATE TRIGGER _sluice_journal_prune AFTER INSERT ON _sluice_journal WHEN NEW.seq % 16 = 0 BEGIN
  INSERT INTO _sluice_last (tid, seq) SELECT tid, max(seq) FROM _sluice_journal WHERE seq > NEW.seq - 16 GROUP BY tid ON CONFLICT (tid) DO UPDATE SET seq = excluded.seq;
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = NEW.seq - retention WHERE NEW.seq - retention > pruned_through;
END`);
};

const tickPrune = (db: Db) => {
  db.exec('DROP TRIGGER _sluice_journal_prune');
  db.exec('CREATE VIEW _sluice_tick AS SELECT 0 AS seq');
  db.exec(`CREATE TRIGGER _sluice_tick_run INSTEAD OF INSERT ON _sluice_tick BEGIN
  INSERT INTO _sluice_last (tid, seq) SELECT tid, max(seq) FROM _sluice_journal WHERE seq > NEW.seq - 16 GROUP BY tid ON CONFLICT (tid) DO UPDATE SET seq = excluded.seq;
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = NEW.seq - retention WHERE NEW.seq - retention > pruned_through;
END`);
  db.exec(
    `CREATE TRIGGER _sluice_journal_prune AFTER INSERT ON _sluice_journal WHEN NEW.seq % 16 = 0 BEGIN INSERT INTO _sluice_tick (seq) VALUES (NEW.seq); END`,
  );
};
// Guard bodies moved behind a view (the bodies never run in the bench: no conflicts).
const viewBodies = (db: Db) => {
  db.exec('CREATE VIEW _sluice_g AS SELECT 0 AS op, 0 AS a, 0 AS b, 0 AS c, 0 AS d, 0 AS e');
  db.exec(`CREATE TRIGGER _sluice_g_run INSTEAD OF INSERT ON _sluice_g BEGIN SELECT RAISE(ABORT, 'x'); END`);
  rewriteTriggers(db, (n, sql) => {
    if (/_(fins|fupd)$/.test(n))
      return sql.replace(
        / BEGIN\n[\s\S]*END$/,
        ` BEGIN\n  INSERT INTO _sluice_g (op, a, b) VALUES (1, NEW."id", ${n.endsWith('fupd') ? 'OLD."id"' : 'NULL'});\nEND`,
      );
    if (/_(bins)$/.test(n))
      return sql.replace(/\nBEGIN\n[\s\S]*END$/, `\nBEGIN\n  INSERT INTO _sluice_g (op, a) VALUES (1, NEW."id");\nEND`);
    return sql;
  });
};

// Everything folded into the capture triggers: flush and tick as conditional view inserts.
const fold = (db: Db, inlineTick: boolean) => {
  db.exec('DROP TRIGGER _sluice_journal_prune');
  db.exec('CREATE VIEW _sluice_tick AS SELECT 0 AS seq');
  db.exec(`CREATE TRIGGER _sluice_tick_run INSTEAD OF INSERT ON _sluice_tick BEGIN
  INSERT INTO _sluice_last (tid, seq) SELECT tid, max(seq) FROM _sluice_journal WHERE seq > NEW.seq - 16 GROUP BY tid ON CONFLICT (tid) DO UPDATE SET seq = excluded.seq;
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = NEW.seq - retention WHERE NEW.seq - retention > pruned_through;
END`);
  if (!inlineTick)
    db.exec(
      `CREATE TRIGGER _sluice_journal_prune AFTER INSERT ON _sluice_journal WHEN NEW.seq % 16 = 0 BEGIN INSERT INTO _sluice_tick (seq) VALUES (NEW.seq); END`,
    );
  db.exec('CREATE VIEW _sluice_g AS SELECT 0 AS op, 0 AS a, 0 AS b, 0 AS c, 0 AS d, 0 AS e');
  db.exec(`CREATE TRIGGER _sluice_g_run INSTEAD OF INSERT ON _sluice_g BEGIN SELECT RAISE(ABORT, 'x'); END`);
  const tick = inlineTick ? '\n  INSERT INTO _sluice_tick (seq) SELECT last_insert_rowid() WHERE last_insert_rowid() % 16 = 0;' : '';
  rewriteTriggers(db, (n, sql) => {
    if (/_(fins|fupd)$/.test(n)) return null;
    if (/_(bins)$/.test(n))
      return sql.replace(/\nBEGIN\n[\s\S]*END$/, `\nBEGIN\n  INSERT INTO _sluice_g (op, a) VALUES (1, NEW."id");\nEND`);
    if (/_(ins|upd)$/.test(n)) {
      const op = n.endsWith('ins') ? 1 : 2;
      const flush = `INSERT INTO _sluice_g (op, a, b) SELECT ${op}, NEW."id", ${op === 2 ? 'OLD."id"' : 'NULL'} WHERE EXISTS (SELECT 1 FROM _sluice_pending WHERE tid = 1 AND op = ${op});`;
      return sql.replace(/BEGIN\n {2}/, `BEGIN\n  ${flush}\n  `).replace(/\nEND$/, `${tick}\nEND`);
    }
    if (/_del$/.test(n)) return sql.replace(/\nEND$/, `${tick}\nEND`);
    return sql;
  });
};

// The flush as a conditional INSERT ... SELECT from pending into a queue table whose trigger flushes; tick by the journal trigger or an inline UPDATE.
const queue = (db: Db, tick: 'journal' | 'update') => {
  db.exec('DROP TRIGGER _sluice_journal_prune');
  db.exec('CREATE VIEW _sluice_tick AS SELECT 0 AS seq');
  db.exec(`CREATE TRIGGER _sluice_tick_run INSTEAD OF INSERT ON _sluice_tick BEGIN
  INSERT INTO _sluice_last (tid, seq) SELECT tid, max(seq) FROM _sluice_journal WHERE seq > NEW.seq - 16 GROUP BY tid ON CONFLICT (tid) DO UPDATE SET seq = excluded.seq;
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = NEW.seq - retention WHERE NEW.seq - retention > pruned_through;
END`);
  if (tick === 'journal')
    db.exec(
      `CREATE TRIGGER _sluice_journal_prune AFTER INSERT ON _sluice_journal WHEN NEW.seq % 16 = 0 BEGIN INSERT INTO _sluice_tick (seq) VALUES (NEW.seq); END`,
    );
  else {
    db.exec('ALTER TABLE _sluice_state ADD COLUMN tick INTEGER');
    db.exec(
      `CREATE TRIGGER _sluice_state_tick AFTER UPDATE OF tick ON _sluice_state BEGIN INSERT INTO _sluice_tick (seq) VALUES (NEW.tick); END`,
    );
  }
  db.exec('CREATE TABLE _sluice_fq (op, a, b)');
  db.exec(`CREATE TRIGGER _sluice_fq_run AFTER INSERT ON _sluice_fq BEGIN SELECT RAISE(ABORT, 'x'); END`);
  db.exec('CREATE VIEW _sluice_g AS SELECT 0 AS op, 0 AS a, 0 AS b, 0 AS c, 0 AS d, 0 AS e');
  db.exec(`CREATE TRIGGER _sluice_g_run INSTEAD OF INSERT ON _sluice_g BEGIN SELECT RAISE(ABORT, 'x'); END`);
  const t =
    tick === 'update' ? '\n  UPDATE _sluice_state SET tick = last_insert_rowid() WHERE id = 1 AND last_insert_rowid() % 16 = 0;' : '';
  rewriteTriggers(db, (n, sql) => {
    if (/_(fins|fupd)$/.test(n)) return null;
    if (/_(bins)$/.test(n))
      return sql.replace(/\nBEGIN\n[\s\S]*END$/, `\nBEGIN\n  INSERT INTO _sluice_g (op, a) VALUES (1, NEW."id");\nEND`);
    if (/_(ins|upd)$/.test(n)) {
      const op = n.endsWith('ins') ? 1 : 2;
      const flush = `INSERT INTO _sluice_fq (op, a, b) SELECT ${op}, NEW."id", ${op === 2 ? 'OLD."id"' : 'NULL'} FROM _sluice_pending WHERE tid = 1 AND op = ${op} LIMIT 1;`;
      return sql.replace(/BEGIN\n {2}/, `BEGIN\n  ${flush}\n  `).replace(/\nEND$/, `${t}\nEND`);
    }
    if (/_del$/.test(n)) return sql.replace(/\nEND$/, `${t}\nEND`);
    return sql;
  });
};

const v = (name: string, setup: (db: Db) => void): Variant => ({ name, note: name, setup });

export function experimentVariants(): Variant[] {
  return [
    v('floor-jdnow', (db) => {
      for (const s of floorDdl("julianday('now')")) db.exec(s);
    }),
    v('x-src', (db) => void enable(db, ['t'])),
    v('x-keys', (db) => void enable(db, ['t'], { mode: 'keys' })),
    v('keys-floor-jdnow', (db) => {
      for (const s of floorDdl("julianday('now')", ['id'])) db.exec(s);
    }),
    v('x-nolast', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, noLast);
    }),
    v('x-nolast-ckpt', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, noLast);
      ckptPrune(db);
    }),
    v('x-nolast-ckpt-typeof', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      ckptPrune(db);
    }),
    v('x-nolast-noguard', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noInsGuard));
    }),
    v('x-noprune-nolast-noguard', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noInsGuard));
      db.exec('DROP TRIGGER _sluice_journal_prune');
    }),
    v('x-tick', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, noLast);
      tickPrune(db);
    }),
    v('x-tick-views', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, noLast);
      tickPrune(db);
      viewBodies(db);
    }),
    v('x-tick-views-typeof', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      tickPrune(db);
      viewBodies(db);
    }),
    v('x-fold', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      fold(db, true);
    }),
    v('x-fold-jt', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      fold(db, false);
    }),
    v('x-q-jt', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      queue(db, 'journal');
    }),
    v('x-q-up', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      queue(db, 'update');
    }),
    v('x-min-trig', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noInsGuard));
      db.exec('DROP TRIGGER _sluice_journal_prune');
      db.exec('CREATE TRIGGER xx AFTER INSERT ON t WHEN 0 BEGIN SELECT 1; END');
      db.exec('CREATE TRIGGER xy AFTER DELETE ON t WHEN 0 BEGIN SELECT 1; END');
    }),
    ...(
      [
        'SELECT 1',
        'INSERT INTO xv VALUES (NEW.id)',
        'INSERT INTO xp VALUES (NEW.id)',
        'INSERT INTO xt VALUES (NEW.id)',
        'INSERT INTO _sluice_journal (tid, op, ts) VALUES (9, 9, 0)',
      ] as const
    ).map((body, i) =>
      v(`x-mt${i}`, (db) => {
        enable(db, ['t']);
        rewriteTriggers(db, compose(noLast, noInsGuard));
        db.exec('DROP TRIGGER _sluice_journal_prune');
        db.exec('CREATE VIEW xv AS SELECT 0 AS a');
        db.exec(`CREATE TRIGGER xvt INSTEAD OF INSERT ON xv BEGIN SELECT RAISE(ABORT, 'x'); END`);
        db.exec('CREATE TABLE xp (a)');
        db.exec('CREATE TABLE xt (a)');
        db.exec(`CREATE TRIGGER xtt AFTER INSERT ON xt BEGIN SELECT RAISE(ABORT, 'x'); END`);
        db.exec(`CREATE TRIGGER xx AFTER INSERT ON t WHEN NEW.id < 0 BEGIN ${body}; END`);
      }),
    ),
    ...(['bins', 'fins', 'prune', 'none'] as const).map((drop) =>
      v(`x-tv-no${drop}`, (db) => {
        enable(db, ['t']);
        rewriteTriggers(db, compose(noLast, noTypeofTR));
        tickPrune(db);
        viewBodies(db);
        if (drop === 'prune') db.exec('DROP TRIGGER _sluice_journal_prune');
        else if (drop !== 'none') db.exec(`DROP TRIGGER _sluice_t1_${drop}`);
      }),
    ),
    v('x-tv-toptick', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      tickPrune(db);
      viewBodies(db);
      db.exec('DROP TRIGGER _sluice_journal_prune');
      const rows = db
        .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '_sluice_t1_%' ORDER BY rowid")
        .all() as { name: string; sql: string }[];
      for (const r of rows) db.exec(`DROP TRIGGER "${r.name}"`);
      for (const op of ['INSERT', 'UPDATE', 'DELETE'])
        db.exec(
          `CREATE TRIGGER _sluice_t1_tick_${op} AFTER ${op} ON t WHEN (SELECT max(seq) FROM _sluice_journal) % 16 = 0 BEGIN INSERT INTO _sluice_tick (seq) SELECT max(seq) FROM _sluice_journal; END`,
        );
      for (const r of rows) db.exec(r.sql);
    }),
    v('x-tv-viewtick', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      tickPrune(db);
      viewBodies(db);
      db.exec('DROP TRIGGER _sluice_journal_prune');
      db.exec('DROP TRIGGER _sluice_tick_run');
      db.exec(`CREATE TRIGGER _sluice_tick_run INSTEAD OF INSERT ON _sluice_tick WHEN NEW.seq % 16 = 0 BEGIN
  INSERT INTO _sluice_last (tid, seq) SELECT tid, max(seq) FROM _sluice_journal WHERE seq > NEW.seq - 16 GROUP BY tid ON CONFLICT (tid) DO UPDATE SET seq = excluded.seq;
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = NEW.seq - retention WHERE NEW.seq - retention > pruned_through;
END`);
      rewriteTriggers(db, (n, sql) =>
        /_(ins|upd|del)$/.test(n) ? sql.replace(/\nEND$/, '\n  INSERT INTO _sluice_tick (seq) VALUES (last_insert_rowid());\nEND') : sql,
      );
    }),
    v('x-tv-viewtick2', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      tickPrune(db);
      viewBodies(db);
      db.exec('DROP TRIGGER _sluice_journal_prune');
      db.exec('DROP TRIGGER _sluice_tick_run');
      db.exec(`CREATE TRIGGER _sluice_tick_run INSTEAD OF INSERT ON _sluice_tick WHEN NEW.seq % 16 = 0 BEGIN SELECT NEW.seq; END`);
      rewriteTriggers(db, (n, sql) =>
        /_(ins|upd|del)$/.test(n) ? sql.replace(/\nEND$/, '\n  INSERT INTO _sluice_tick (seq) VALUES (last_insert_rowid());\nEND') : sql,
      );
    }),
    v('x-tv-viewtick3', (db) => {
      enable(db, ['t']);
      rewriteTriggers(db, compose(noLast, noTypeofTR));
      tickPrune(db);
      viewBodies(db);
      db.exec('DROP TRIGGER _sluice_journal_prune');
      db.exec('DROP TRIGGER _sluice_tick_run');
      db.exec('CREATE VIEW _sluice_prune AS SELECT 0 AS seq');
      db.exec(`CREATE TRIGGER _sluice_prune_run INSTEAD OF INSERT ON _sluice_prune BEGIN
  INSERT INTO _sluice_last (tid, seq) SELECT tid, max(seq) FROM _sluice_journal WHERE seq > NEW.seq - 16 GROUP BY tid ON CONFLICT (tid) DO UPDATE SET seq = excluded.seq;
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = NEW.seq - retention WHERE NEW.seq - retention > pruned_through;
END`);
      db.exec(
        `CREATE TRIGGER _sluice_tick_run INSTEAD OF INSERT ON _sluice_tick WHEN NEW.seq % 16 = 0 BEGIN INSERT INTO _sluice_prune (seq) VALUES (NEW.seq); END`,
      );
      rewriteTriggers(db, (n, sql) =>
        /_(ins|upd|del)$/.test(n) ? sql.replace(/\nEND$/, '\n  INSERT INTO _sluice_tick (seq) VALUES (last_insert_rowid());\nEND') : sql,
      );
    }),
    // y-*: this build's enable() with the body of _fins (second) or _bins (third) replaced, to price each
    // (docs/journal.md, Format 5). The replaced bodies never run here: the bench writes no conflict.
    ...(
      [
        ['y-cur', null, null],
        ['y-nopfl', null, null],
        [
          'y-bins-view',
          null,
          'INSERT INTO _sluice_flush (tid, op) VALUES (1, -1); INSERT INTO _sluice_pending (tid, op, hw, c0, c1, c2, c3, c4) SELECT 1, 1, (SELECT coalesce(max(seq), 0) FROM _sluice_journal), "id" COLLATE BINARY, "name" COLLATE BINARY, "n" COLLATE BINARY, "r" COLLATE BINARY, "b" COLLATE BINARY FROM "t" WHERE ("id" = NEW."id");',
        ],
        ['y-fins-trivial2', 'SELECT 1;', null],
        ['y-fins-trivial', 'SELECT 1;', null],
        ['y-bins-trivial', null, 'SELECT 1;'],
        ['y-both-trivial', 'SELECT 1;', 'SELECT 1;'],
        [
          'y-fins-mark',
          'UPDATE _sluice_pending SET hw = hw WHERE tid = 1 AND op = 1 AND NOT EXISTS (SELECT 1 FROM "t" AS r WHERE r."id" = _sluice_pending.c0);',
          null,
        ],
        ['y-fins-view', 'INSERT INTO _sluice_g (op, a, b) VALUES (1, NEW."id", NULL);', null],
        [
          'y-bins-nodel',
          null,
          'INSERT INTO _sluice_pending (tid, op, hw, c0, c1, c2, c3, c4) SELECT 1, 1, (SELECT coalesce(max(seq), 0) FROM _sluice_journal), "id" COLLATE BINARY, "name" COLLATE BINARY, "n" COLLATE BINARY, "r" COLLATE BINARY, "b" COLLATE BINARY FROM "t" WHERE ("id" = NEW."id");',
        ],
      ] as const
    ).map(([name, fins, bins]) =>
      v(name, (db) => {
        enable(db, ['t']);
        db.exec('CREATE VIEW _sluice_g AS SELECT 0 AS op, 0 AS a, 0 AS b, 0 AS c, 0 AS d, 0 AS e');
        db.exec(`CREATE TRIGGER _sluice_g_run INSTEAD OF INSERT ON _sluice_g BEGIN SELECT RAISE(ABORT, 'x'); END`);
        rewriteTriggers(db, (n, sql) => {
          if (fins !== null && /_(fins)$/.test(n)) return sql.replace(/ BEGIN\n[\s\S]*END$/, ` BEGIN\n  ${fins}\nEND`);
          if (bins !== null && /_(bins)$/.test(n)) return sql.replace(/\nBEGIN\n[\s\S]*END$/, `\nBEGIN\n  ${bins}\nEND`);
          return sql;
        });
        if (name === 'y-nopfl') db.exec('DROP TRIGGER _sluice_t1_pfl');
      }),
    ),
  ];
}
