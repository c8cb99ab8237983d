# A soak writer (bench/soak.ts): a mixed workload on items and docs, committed
# by plain Python sqlite3 (which knows nothing of sluice) until the stop file
# exists. argv: db, stop file, seed, recursive_triggers (0/1), pause ms.
# Prints one JSON line at the end: transactions committed and rolled back.
import json, os, random, sqlite3, sys, time

db, stop, seed, recursive, pause_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == '1', float(sys.argv[5])
rnd = random.Random(seed)
con = sqlite3.connect(db, isolation_level=None, timeout=30)
con.execute('PRAGMA busy_timeout = 30000')
con.execute('PRAGMA recursive_triggers = %s' % ('ON' if recursive else 'OFF'))
N = 3000
committed = rolled_back = failed = 0
words = ['alpha', 'beta', 'gamma', 'delta', 'sluice', 'gate', 'river', 'stone', 'Ünïcode', 'naïve']

def text(k):
    return ' '.join(rnd.choice(words) for _ in range(k))

def op(c):
    r = rnd.random()
    i = rnd.randint(1, N)
    if r < 0.2:
        c.execute('INSERT OR REPLACE INTO items(id, k, v, n) VALUES (?, ?, ?, ?)', (i, 'k%d' % rnd.randint(1, N), text(3), rnd.randint(0, 10**12)))
    elif r < 0.4:
        c.execute('INSERT INTO items(id, k, v, n) VALUES (?, ?, ?, 0) ON CONFLICT(id) DO UPDATE SET v = excluded.v, n = n + 1', (i, 'u%d-%d' % (seed, i), text(2)))
    elif r < 0.5:
        c.execute('UPDATE items SET id = ? WHERE id = ?', (rnd.randint(1, N), i))  # a key change
    elif r < 0.6:
        c.execute('DELETE FROM items WHERE id BETWEEN ? AND ?', (i, i + rnd.randint(0, 3)))
    elif r < 0.75:
        c.execute('INSERT OR REPLACE INTO docs(id, title, body) VALUES (?, ?, ?)', (i % 1000, text(2), text(8)))
    elif r < 0.85:
        c.execute('UPDATE docs SET body = body || ? WHERE id = ?', (' ' + text(1), i % 1000))
    elif r < 0.9:
        c.execute('UPDATE docs SET id = ? WHERE id = ?', (rnd.randint(0, 999), i % 1000))
    else:
        c.execute('DELETE FROM docs WHERE id = ?', (i % 1000,))

while not os.path.exists(stop):
    rollback = rnd.random() < 0.1
    try:
        con.execute('BEGIN IMMEDIATE')
        for _ in range(rnd.randint(1, 4)):
            try:
                op(con)
            except sqlite3.IntegrityError:
                pass  # a UNIQUE k or a taken id: that statement is undone, the transaction goes on
        if rollback:
            con.execute('ROLLBACK')
            rolled_back += 1
        else:
            con.execute('COMMIT')
            committed += 1
    except sqlite3.OperationalError as e:
        failed += 1
        if con.in_transaction:
            con.execute('ROLLBACK')
    time.sleep(pause_ms / 1000)
print(json.dumps({'committed': committed, 'rolledBack': rolled_back, 'failed': failed}))
