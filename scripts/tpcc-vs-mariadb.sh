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
# retried deadlocks, load time); every tool output and result JSON is kept in $WORK. Exits
# non-zero if a step fails or a server keeps connections after the run (check_drained).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
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

need_bins "$BENCH" "$SHOAL"
rm -rf "$WORK"
mkdir -p "$WORK"

start() { # name
  local opts=(--max-connections=2000 --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1
    --innodb-flush-method=O_DIRECT --thread-handling="$THREAD_HANDLING")
  case $1 in
    mariadb) start_mariadb "$PORT" "$WORK/mariadb" --max-prepared-stmt-count=1048576 "${opts[@]}" ;;
    shoal) start_shoal "$PORT" "$WORK/shoal" "${opts[@]}" ;;
    *) echo "unknown server $1 (SERVERS: mariadb and/or shoal)" >&2; exit 1 ;;
  esac
  sql "$PORT" 'CREATE DATABASE IF NOT EXISTS sbtest'
}

CONN=(--mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest)
printf '| server | warehouses | clients | time s | tpmC | TPS | p95 ms | p99 ms | retried (1213/1205) | failed | load s |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for srv in $SERVERS; do
  start "$srv"
  t0=$(date +%s.%N)
  "$BENCH" prepare tpcc "${CONN[@]}" --warehouses="$WAREHOUSES" --scale-items="$ITEMS" \
    --scale-customers="$CUSTOMERS" --threads="$LOAD_THREADS" >"$WORK/$srv-prepare.log" 2>&1 \
    || { tail -20 "$WORK/$srv-prepare.log"; echo "$srv: prepare failed: $WORK/$srv-prepare.log"; exit 1; }
  load_s=$(echo "$(date +%s.%N) - $t0" | bc)
  "$BENCH" check tpcc "${CONN[@]}" >"$WORK/$srv-check-before.log" 2>&1 \
    || { echo "$srv: check failed before the run: $WORK/$srv-check-before.log"; cat "$WORK/$srv-check-before.log"; exit 1; }
  # shellcheck disable=SC2086 # SB_EXTRA: several options
  bench_run "$WORK/$srv-results" "$WORK/$srv-run.log" tpcc "${CONN[@]}" --threads="$THREADS" \
    --time="$TIME" --report-interval=10 --label="$srv" $SB_EXTRA \
    || { tail -20 "$WORK/$srv-run.log"; echo "$srv: the run failed: $WORK/$srv-run.log"; exit 1; }
  "$BENCH" check tpcc "${CONN[@]}" >"$WORK/$srv-check-after.log" 2>&1 \
    || { echo "$srv: check failed after the run: $WORK/$srv-check-after.log"; cat "$WORK/$srv-check-after.log"; exit 1; }
  check_drained "$PORT"
  read -r secs tpmc tps p95 p99 errors codes < <(bench_json "$BENCH_JSON" summary.secs:.0f \
    summary.tpmc:.0f summary.tps:.1f summary.latency_ms.p95:.1f summary.latency_ms.p99:.1f \
    summary.errors summary.errors_by_code)
  # Deadlocks and lock wait timeouts are retried by the clients (--mysql-ignore-errors).
  retried=$(python3 -c 'import json, sys
print(sum(int(v) for k, v in json.loads(sys.argv[1]).items() if k in ("1213", "1205")))' "$codes")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n' "$srv" "$WAREHOUSES" \
    "$THREADS" "$secs" "$tpmc" "$tps" "$p95" "$p99" "$retried" "$errors" "$load_s"
  stop_server
done
