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
HERE=$(cd "$(dirname "$0")" && pwd)
TARGET=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
SHOAL=${SHOAL:-$TARGET/release/shoal}
PORT=${PORT:-33420}
ROWS=${ROWS:-5000}
ROUNDS=${ROUNDS:-5}
WORK=$(mktemp -d /var/tmp/shoal-join.XXXXXX)
PY=${SHOAL_VENV:-/var/tmp/shoal-venv}/bin/python3
SERVER=
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT

start() {
  case $1 in
    mariadb)
      mkdir -p "$WORK/mariadb"
      "$(command -v mariadbd || echo /usr/sbin/mariadbd)" --no-defaults --datadir="$WORK/mariadb" \
        --socket="$WORK/mariadb.sock" --pid-file="$WORK/mariadb.pid" --port=$PORT \
        --bind-address=127.0.0.1 --user=root --skip-grant-tables --skip-log-bin \
        --performance-schema=OFF --innodb-buffer-pool-size=256M >"$WORK/mariadb.log" 2>&1 & ;;
    shoal)
      "$SHOAL" --port=$PORT --socket="$WORK/shoal.sock" --datadir="$WORK/shoal" --initialize-insecure \
        --innodb-buffer-pool-size=256M >"$WORK/shoal.log" 2>&1 & ;;
  esac
  SERVER=$!
  for _ in $(seq 300); do
    kill -0 $SERVER 2>/dev/null || { echo "server $1 exited: $WORK/$1.log"; cat "$WORK/$1.log"; exit 1; }
    mariadb -h127.0.0.1 -P$PORT -uroot -e 'SELECT 1' >/dev/null 2>&1 && return
    sleep 0.2
  done
  echo "server $1 did not start"; exit 1
}

for srv in mariadb shoal; do
  start $srv
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
  kill $SERVER; wait $SERVER 2>/dev/null || true; SERVER=
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
