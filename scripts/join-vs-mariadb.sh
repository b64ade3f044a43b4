#!/usr/bin/env bash
# Join shapes no index serves, on shoal and on MariaDB, same machine, one after the other:
#
#   cargo build --release -p shoal
#   scripts/join-vs-mariadb.sh                  # ROWS=5000 per table, ROUNDS=5
#
# Each server starts on a fresh datadir; two tables of ROWS rows get the same data; every query
# runs ROUNDS times (after one warm-up) and the min / median wall time is printed, then the
# ratio shoal / MariaDB of the medians. Both servers must give the same answer to every query,
# or the script fails.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
PORT=${PORT:-33420}
ROWS=${ROWS:-5000}
ROUNDS=${ROUNDS:-5}
temp_dir
WORK=$TEMP_DIR
PY=${SHOAL_VENV:-/var/tmp/shoal-venv}/bin/python3
need_bins "$SHOAL"

start() {
  case $1 in
    mariadb) start_mariadb "$PORT" "$WORK/mariadb" --innodb-buffer-pool-size=256M ;;
    shoal) start_shoal "$PORT" "$WORK/shoal" --innodb-buffer-pool-size=256M ;;
  esac
}

for srv in mariadb shoal; do
  start "$srv"
  "$PY" - "$PORT" "$ROWS" "$ROUNDS" "$srv" >"$WORK/$srv.out" <<'EOF'
import json, statistics, sys, time
import pymysql
port, rows, rounds, name = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
cur = c.cursor()
cur.execute("DROP DATABASE IF EXISTS j")
cur.execute("CREATE DATABASE j")
cur.execute("USE j")
for t in ("a", "b"):
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, k INT, s VARCHAR(20), pad VARCHAR(60))")
    for lo in range(0, rows, 1000):
        vals = ",".join(
            f"({i}, {(i * 7) % rows}, 'key{(i * 13) % (rows // 2)}', 'padding-{i:08d}')"
            for i in range(lo, min(rows, lo + 1000)))
        cur.execute(f"INSERT INTO {t} VALUES {vals}")
queries = [
    "SELECT COUNT(*) FROM a JOIN b ON a.k = b.k",
    "SELECT COUNT(*) FROM a JOIN b ON a.s = b.s",
    "SELECT COUNT(*) FROM a LEFT JOIN b ON a.k = b.k + 1 WHERE b.id IS NULL",
    "SELECT a.s, COUNT(*) FROM a JOIN b ON a.k = b.k GROUP BY a.s ORDER BY 2 DESC, 1 LIMIT 3",
]
out = []
for q in queries:
    cur.execute(q)
    answer = cur.fetchall()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        cur.execute(q)
        cur.fetchall()
        times.append(time.perf_counter() - t)
    out.append({"query": q, "answer": repr(answer), "min": min(times), "median": statistics.median(times)})
print(json.dumps(out))
EOF
  stop_server
done
"$PY" - "$WORK/mariadb.out" "$WORK/shoal.out" "$ROWS" "$ROUNDS" <<'EOF'
import json, sys
m, s = (json.load(open(p)) for p in sys.argv[1:3])
print(f"{sys.argv[3]} rows per table, {sys.argv[4]} rounds; wall time per query, ms (min / median)\n")
print("| query | MariaDB | shoal | shoal / MariaDB (median) |")
print("|---|---:|---:|---:|")
bad = 0
for a, b in zip(m, s):
    if a["answer"] != b["answer"]:
        print(f"DIFFERENT ANSWERS: {a['query']}: MariaDB {a['answer']} shoal {b['answer']}")
        bad += 1
    print(f"| `{a['query']}` | {a['min']*1e3:.1f} / {a['median']*1e3:.1f} | "
          f"{b['min']*1e3:.1f} / {b['median']*1e3:.1f} | {b['median']/a['median']:.2f} |")
sys.exit(1 if bad else 0)
EOF
