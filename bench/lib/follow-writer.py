# The external writer of bench/follow.ts: plain Python sqlite3, which knows
# nothing of sluice. One connection, autocommit, synchronous=NORMAL. It
# commits single-row INSERTs on a fixed schedule, one phase per rate: write k
# of a phase is due at k/rate after the phase start (a late write goes at
# once, so the mean rate holds). Write number i (ids are 1, 2, ... across the
# phases) goes to table tables[i % len(tables)].
#
# Each row carries in n the time its statement started (CLOCK_MONOTONIC, in
# microseconds: the clock the reader reads too, shared by every process of
# the machine). The log has, per write, the monotonic time right before the
# INSERT (t0) and right after it returned (t1): an autocommit INSERT returns
# once its COMMIT is done, so t1 is the source commit as the writer sees it.
#
# argv: db, spec (JSON: {"tables": [...], "phases": [{"rate", "seconds", "tag"}], "gapSeconds"}), out.
# Prints {"event": "start"|"end", "tag"} lines (flushed) at each phase's edges.
import json, sqlite3, sys, time

db, spec, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
tables = spec["tables"]
con = sqlite3.connect(db, isolation_level=None, timeout=5.0)
con.execute("PRAGMA busy_timeout = 5000")
con.execute("PRAGMA synchronous = NORMAL")
sql = ["INSERT INTO \"%s\" (id, v, n) VALUES (?, ?, ?)" % t for t in tables]
mono = time.monotonic
ids, t0s, t1s, late = [], [], [], []
next_id = 1
for i, phase in enumerate(spec["phases"]):
    if i > 0:
        time.sleep(spec["gapSeconds"])
    rate, count, tag = phase["rate"], int(phase["rate"] * phase["seconds"]), phase["tag"]
    print(json.dumps({"event": "start", "tag": tag}), flush=True)
    start = mono() + 0.01
    for k in range(count):
        due = start + k / rate
        now = mono()
        if due > now:
            time.sleep(due - now)
        t0 = mono()
        con.execute(sql[next_id % len(sql)], (next_id, tag, int(t0 * 1e6)))
        t1 = mono()
        ids.append(next_id)
        t0s.append(t0)
        t1s.append(t1)
        late.append(t0 - due)
        next_id += 1
    print(json.dumps({"event": "end", "tag": tag}), flush=True)
con.close()
with open(out, "w") as f:
    json.dump({"ids": ids, "t0": t0s, "t1": t1s, "late": late}, f)
