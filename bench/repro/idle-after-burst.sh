#!/bin/bash
# Idle CPU of a `sync --follow` in the seconds after a 30,000-row burst (ticks of CPU per second,
# 100 = one core, with the target row count). Usage: bench/repro/idle-after-burst.sh REPO_DIR
# Main at the end of round 3 session 4: about 13 per second for 7 s, then 0-1; before the follow
# changes (37ceac7) 0-1 throughout. Found and bisected to b3f11de or c7c42ed (the follower changes), not yet fixed. The target -wal
# stays at about 54 MB (13k frames) until the CPU stops. Ruled out by instrumenting the built CLI: the
# target watch (its between() under 6 ms, 5 checkpoints in the window), the follower's onIdle and idle
# edit check (under 2 ms of CPU each), GC (none in the window), passes (none) and file events (1-2 a
# second). The CPU is user time on the main thread; perf shows it in futex waits, and it goes away with
# SLUICE_NO_WATCH=1. Next step: perf with JS symbols (--perf-basic-prof) on the main thread.
# $1 = repo
R=$1; D=$(mktemp -d)
sqlite3 $D/src.db "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);" >/dev/null
node $R/bin/sluice.js enable $D/src.db t >/dev/null
node $R/bin/sluice.js sync $D/src.db $D/tgt.db --follow >/dev/null 2>&1 &
P=$!
sleep 2
python3 -c "
import sqlite3,time
c=sqlite3.connect('$D/src.db', isolation_level=None)
for i in range(30000):
    c.execute('INSERT INTO t(name) VALUES (?)', ('x%d'%i,)); pass
"
sleep 2
for k in 1 2 3 4 5 6 7 8 9 10 11 12; do a=$(awk "{print \$14+\$15}" /proc/$P/stat); sleep 1; b=$(awk "{print \$14+\$15}" /proc/$P/stat); echo -n "$((b-a)):$(sqlite3 $D/tgt.db "select count(*) from t" 2>/dev/null) "; done; echo
echo "idle ticks over 5s: $((b-a)) (100/s = 1 core)"
kill $P; wait $P 2>/dev/null; rm -rf $D
