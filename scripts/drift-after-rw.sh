#!/usr/bin/env bash
# Does a read-write run leave the server dearer for what comes after it? On one shoal server
# (pool, 8 x 10,000 rows, 1 GiB buffer pool): point select at 8 clients twice, read-write at 64
# clients once, GAP seconds of quiet, three times over; then point select once more, and again
# after 20 s. Each line: server CPU ms a transaction (user + system from /proc/PID/stat),
# Threadpool_cpu_affinity_engaged before / after, block cache usage, RSS and SST files.
# Session 37 found affinity stuck engaged and the cache filling with dead files' blocks with it.
#   cargo build --release -p shoal && scripts/drift-after-rw.sh
# SHOAL_BIN picks another binary; SERVER_EXTRA adds server options; PS_THREADS sets the point
# selects' clients (8). Exits non-zero when a run
# fails or connections are left open.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-drift}; PORT=${PORT:-33731}; GAP=${GAP:-12}; PS=${PS_THREADS:-8}
SHOAL=${SHOAL_BIN:-$SHOAL}
if port_in_use "$PORT"; then echo "port $PORT is already in use: set PORT" >&2; exit 1; fi
need_bins "$SHOAL"
rm -rf "$WORK"; mkdir -p "$WORK"
# shellcheck disable=SC2086
start_shoal "$PORT" "$WORK/srv" --thread-handling=pool-of-threads --max-connections=2000 \
  --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT \
  ${SERVER_EXTRA:-}
sql "$PORT" 'CREATE DATABASE sbtest'
SB=(--db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root
    --mysql-db=sbtest --tables=8 --table-size=10000)
sysbench oltp_read_write "${SB[@]}" --threads=4 prepare >"$WORK/prepare.log" 2>&1
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
one() { # label workload threads
  local e0 c0 c1 q
  e0=$(status_var "$PORT" Threadpool_cpu_affinity_engaged)
  c0=$(cpu)
  sysbench "$2" "${SB[@]}" --threads="$3" --time=10 run >"$WORK/run.log" 2>&1 \
    || { tail -20 "$WORK/run.log" >&2; echo "FAIL: sysbench $2 failed" >&2; exit 1; }
  c1=$(cpu)
  q=$(awk '/transactions:/ {print $2}' "$WORK/run.log")
  [ "${q:-0}" -gt 0 ] || { echo "FAIL: no transactions in $2" >&2; exit 1; }
  printf '%-8s %-20s engaged=%s/%s cache=%sM rss=%sM ssts=%s trx=%s ms/trx=%s\n' "$1" "$2/$3" \
    "$e0" "$(status_var "$PORT" Threadpool_cpu_affinity_engaged)" \
    "$(( $(status_var "$PORT" Shoal_block_cache_usage) >> 20 ))" \
    "$(( $(awk '/VmRSS/ {print $2}' "/proc/$SERVER/status") >> 10 ))" \
    "$(find "$WORK/srv/data/rocksdb" -name '*.sst' | wc -l)" "$q" \
    "$(python3 -c "print(round(($c1 - $c0) / $TCK * 1000 / $q, 5))")"
}
for r in 1 2 3; do
  one "r$r" oltp_point_select "$PS"
  one "r$r" oltp_point_select "$PS"
  one "r$r" oltp_read_write 64
  sleep "$GAP"
done
one end oltp_point_select "$PS"
sleep 20
one end+20s oltp_point_select "$PS"
check_drained "$PORT"
stop_server
