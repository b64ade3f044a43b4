#!/usr/bin/env bash
# tpcc on shoal and on MariaDB, same machine, same options, one after the other:
#
#   cargo build --release -p shoal -p shoal-bench
#   scripts/tpcc-vs-mariadb.sh                    (defaults below)
#   WAREHOUSES=2 THREADS=16 TIME=120 scripts/tpcc-vs-mariadb.sh
#
# For each server in SERVERS: start it on a fresh datadir (1 GB buffer pool, flush at every
# commit, O_DIRECT, the given thread handling), `prepare tpcc` (WAREHOUSES at the spec's scale
# unless ITEMS / CUSTOMERS say otherwise), `check`, `run tpcc` for TIME seconds with THREADS
# clients, `check` again, stop it. Prints one markdown line per server (tpmC, TPS, p95/p99,
# retried deadlocks, load time); every tool output and result JSON is kept in $WORK.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
BENCH=${BENCH:-$TARGET/release/shoal-bench}
SHOAL=${SHOAL:-$TARGET/release/shoal}
PORT=${PORT:-33410}
WORK=${WORK:-/var/tmp/shoal-bench-tpcc}
WAREHOUSES=${WAREHOUSES:-1}
ITEMS=${ITEMS:-100000}
CUSTOMERS=${CUSTOMERS:-3000}
THREADS=${THREADS:-8}
TIME=${TIME:-60}
LOAD_THREADS=${LOAD_THREADS:-4}
THREAD_HANDLING=${THREAD_HANDLING:-pool-of-threads}
SERVERS=${SERVERS:-"mariadb shoal"}
# The servers share this machine with the tool: give its one worker thread a higher priority
# (needs root; see docs/BENCH.md); SB_EXTRA= measures without it.
SB_EXTRA=${SB_EXTRA---client-nice=-10}

for b in "$BENCH" "$SHOAL"; do
  [ -x "$b" ] || { echo "build first: cargo build --release -p shoal -p shoal-bench ($b)"; exit 1; }
done
rm -rf "$WORK"
mkdir -p "$WORK"
SERVER=
stop() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null; SERVER=; }
trap stop EXIT

start() { # name
  case $1 in
    mariadb)
      mkdir -p "$WORK/mariadb"
      "$(command -v mariadbd || echo /usr/sbin/mariadbd)" --no-defaults --datadir="$WORK/mariadb" --socket="$WORK/mariadb.sock" \
        --pid-file="$WORK/mariadb.pid" --port=$PORT --bind-address=127.0.0.1 --user=root \
        --skip-grant-tables --skip-log-bin --performance-schema=OFF --max-connections=2000 \
        --max-prepared-stmt-count=1048576 --innodb-buffer-pool-size=1G \
        --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT \
        --thread-handling="$THREAD_HANDLING" >"$WORK/mariadb.log" 2>&1 & ;;
    shoal)
      "$SHOAL" --port=$PORT --socket="$WORK/shoal.sock" --datadir="$WORK/shoal" --initialize-insecure \
        --thread-handling="$THREAD_HANDLING" --max-connections=2000 --innodb-buffer-pool-size=1G \
        --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT >"$WORK/shoal.log" 2>&1 & ;;
  esac
  SERVER=$!
  for _ in $(seq 300); do
    kill -0 $SERVER 2>/dev/null || { echo "server $1 exited: $WORK/$1.log"; exit 1; }
    mariadb -h127.0.0.1 -P$PORT -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest' >/dev/null 2>&1 && return
    sleep 0.2
  done
  echo "server $1 did not start"; exit 1
}

CONN=(--mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest)
printf '| server | warehouses | clients | time s | tpmC | TPS | p95 ms | p99 ms | retried (1213/1205) | failed | load s |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for srv in $SERVERS; do
  start "$srv"
  t0=$(date +%s.%N)
  "$BENCH" prepare tpcc "${CONN[@]}" --warehouses=$WAREHOUSES --scale-items=$ITEMS \
    --scale-customers=$CUSTOMERS --threads=$LOAD_THREADS >"$WORK/$srv-prepare.log" 2>&1
  load_s=$(echo "$(date +%s.%N) - $t0" | bc)
  "$BENCH" check tpcc "${CONN[@]}" >"$WORK/$srv-check-before.log" 2>&1
  mkdir -p "$WORK/$srv-results"
  # shellcheck disable=SC2086
  "$BENCH" run tpcc "${CONN[@]}" --threads=$THREADS --time=$TIME --report-interval=10 \
    --label="$srv" --output="$WORK/$srv-results" $SB_EXTRA >"$WORK/$srv-run.log" 2>&1
  "$BENCH" check tpcc "${CONN[@]}" >"$WORK/$srv-check-after.log" 2>&1 \
    || { echo "$srv: check failed after the run: $WORK/$srv-check-after.log"; cat "$WORK/$srv-check-after.log"; exit 1; }
  python3 - "$WORK/$srv-results" "$srv" "$WAREHOUSES" "$THREADS" "$load_s" <<'EOF'
import json, os, sys
d, srv, wh, th, load_s = sys.argv[1:]
r = json.load(open(os.path.join(d, sorted(os.listdir(d))[0])))
s = r["summary"]
codes = s.get("errors_by_code", {})
retried = sum(int(v) for k, v in codes.items() if k in ("1213", "1205"))
print(f"| {srv} | {wh} | {th} | {s['secs']:.0f} | {s['tpmc']:.0f} | {s['tps']:.1f} | "
      f"{s['latency_ms']['p95']:.1f} | {s['latency_ms']['p99']:.1f} | {retried} | {s['errors']} | {float(load_s):.0f} |")
EOF
  stop
done
