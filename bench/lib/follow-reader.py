# The reader of bench/follow.ts: another process (plain Python sqlite3) that
# watches a database and notes, for each row id, when it first saw the row:
# what a user of the target sees. Rows ids are 1..expect, spread over the
# tables; each table's ids appear in increasing order (a projection applies
# in seq order), so each table is read past the last id seen in it.
#
# How it learns of a commit, and what that costs the figure: it waits on an
# inotify watch of the database's directory (IN_MODIFY of the file or its
# -wal), with a fallback look every FALLBACK_S. A commit writes its WAL
# frames (each write wakes the watch) before it publishes them in the -shm
# index, so a wake that finds nothing new looks again after 20, 20, 40, 80 us
# ... (2.5 ms in all). Each look is PRAGMA data_version, and only when it moved one SELECT
# (all tables, one read transaction). The time noted for a row is taken right
# right after the first table's SELECT returned: a row the read transaction
# holds was committed before that transaction began, so the noted time is
# never earlier than the commit (a time taken before the SELECT could be), and
# the reader's own wake-up (inotify, scheduling, Python) is counted in the
# figure, not subtracted. bench/follow.ts measures that own delay on its own
# (the same reader on direct writes to a database, no follower) and shows it.
#
# Times are CLOCK_MONOTONIC (time.monotonic()), the clock the writer logs.
# argv: db, tables (comma-separated), expect, out, timeout seconds.
# Writes {"seen": [t per id 1..expect, null if never], "wakes", "looks", "found": {"watch", "recheck", "fallback"}} to out.
import ctypes, ctypes.util, json, os, select, sqlite3, struct, sys, time

db, tables, expect, out, timeout = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
FALLBACK_S = 0.002
# After a wake that found nothing yet: look again after each of these pauses (2.5 ms in all).
RECHECK_S = (0.00002, 0.00002, 0.00004, 0.00008, 0.00016, 0.00032, 0.00064, 0.00124)

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
# Sleeps of tens of microseconds mean what they say (the default timer slack is 50 us).
libc.prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK, 1 ns
IN_MODIFY, IN_NONBLOCK, IN_CLOEXEC = 0x2, 0o4000, 0o2000000
fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
if fd < 0:
    sys.exit("inotify_init1 failed: errno %d" % ctypes.get_errno())
directory = os.path.dirname(os.path.abspath(db))
base = os.path.basename(db)
names = {base.encode(), (base + "-wal").encode()}
if libc.inotify_add_watch(fd, directory.encode(), IN_MODIFY) < 0:
    sys.exit("inotify_add_watch failed: errno %d" % ctypes.get_errno())
ep = select.epoll()
ep.register(fd, select.EPOLLIN)

con = sqlite3.connect(db, isolation_level=None, timeout=5.0)
last = [0] * len(tables)
per_table = [('SELECT id FROM "%s" WHERE id > ?' % t) for t in tables]
mono = time.monotonic
seen = [None] * expect
count = 0
dv = None
wakes = looks = 0
found = {"watch": 0, "recheck": 0, "fallback": 0}


def look():
    """New rows since the last look (0 when data_version has not moved)."""
    global dv, count, looks
    looks += 1
    v = con.execute("PRAGMA data_version").fetchone()[0]
    if v == dv:
        return 0
    dv = v
    # One read transaction for all tables: BEGIN makes the SELECTs share one snapshot, taken at the first.
    con.execute("BEGIN")
    try:
        new = 0
        t = None
        for i, q in enumerate(per_table):
            rows = con.execute(q, (last[i],)).fetchall()
            if t is None:
                t = mono()  # the snapshot is taken: every row it holds was committed before now
            for (rid,) in rows:
                if 1 <= rid <= expect and seen[rid - 1] is None:
                    seen[rid - 1] = t
                    new += 1
                if rid > last[i]:
                    last[i] = rid
    finally:
        con.execute("COMMIT")
    count += new
    return new


def watched(buf):
    """Whether an inotify read names the database or its -wal."""
    off = 0
    hit = False
    while off + 16 <= len(buf):
        _wd, _mask, _cookie, n = struct.unpack_from("iIII", buf, off)
        name = buf[off + 16 : off + 16 + n].rstrip(b"\0")
        if name in names:
            hit = True
        off += 16 + n
    return hit


deadline = mono() + timeout
print("ready", flush=True)
while count < expect and mono() < deadline:
    evs = ep.poll(FALLBACK_S)
    woke = False
    if evs:
        try:
            woke = watched(os.read(fd, 65536))
        except BlockingIOError:
            pass
    if woke:
        wakes += 1
    n = look()
    if n > 0:
        found["watch" if woke else "fallback"] += n
        continue
    if woke:
        for pause in RECHECK_S:
            time.sleep(pause)
            n = look()
            if n > 0:
                found["recheck"] += n
                break
con.close()
with open(out, "w") as f:
    json.dump({"seen": seen, "wakes": wakes, "looks": looks, "found": found}, f)
