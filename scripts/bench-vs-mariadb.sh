#!/usr/bin/env bash
# One run, both sides: sysbench oltp_point_select and oltp_read_write against shoal
# (one-thread-per-connection and pool-of-threads) and MariaDB (one-thread-per-connection), same
# table count and size, buffer pool larger than the data, flush at every commit, direct I/O.
# Prints TPS, p95, p99 and the server's CPU seconds per 1000 transactions (from /proc/PID/stat).
#   cargo build --release -p shoal && TIME=10 THREADS="8 64" scripts/bench-vs-mariadb.sh
# SERVERS selects the sides (default: all three); PORT must be free (checked).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-vs-mariadb}
TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}; TIME=${TIME:-10}; THREADS=${THREADS:-"8 64"}
PORT=${PORT:-33500}
SERVERS=${SERVERS:-"shoal-one-thread-per-connection shoal-pool-of-threads mariadb"}
if port_in_use "$PORT"; then
  echo "port $PORT is already in use: set PORT to a free port" >&2; exit 1
fi
case $SERVERS in *shoal-*) need_bins "$SHOAL" ;; esac
rm -rf "$WORK"; mkdir -p "$WORK"
TCK=$(getconf CLK_TCK)
cpu_of() { awk -v t="$TCK" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }

start_server() { # name
  case $1 in
    mariadb)
      start_mariadb "$PORT" "$WORK/$1" --max-connections=2000 --max-prepared-stmt-count=1048576 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT --thread-handling=one-thread-per-connection ;;
    shoal-*)
      start_shoal "$PORT" "$WORK/$1" --thread-handling="${1#shoal-}" --max-connections=2000 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT ;;
    *) echo "unknown server $1 (SERVERS: shoal-<thread handling> or mariadb)" >&2; exit 1 ;;
  esac
}

SB=(--db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
    "--tables=$TABLES" "--table-size=$SIZE" --percentile=95)
printf '| server | workload | threads | TPS | p95 ms | p99 ms | server CPU s / 1000 trx |\n|---|---|---:|---:|---:|---:|---:|\n'
for srv in $SERVERS; do
  start_server "$srv"
  sql "$PORT" 'CREATE DATABASE sbtest'
  sysbench oltp_read_write "${SB[@]}" --threads=4 prepare >"$WORK/$srv-prepare.log" 2>&1
  for wl in oltp_point_select oltp_read_write; do
    for n in $THREADS; do
      log=$WORK/$srv-$wl-$n.log
      c0=$(cpu_of "$SERVER")
      sysbench "$wl" "${SB[@]}" --threads="$n" --time="$TIME" --histogram=on run >"$log" 2>&1 \
        || { tail -20 "$log" >&2; echo "FAIL: $srv $wl $n: sysbench run failed" >&2; exit 1; }
      c1=$(cpu_of "$SERVER")
      check_drained "$PORT"
      read -r tps trx p95 p99 < <(sysbench_result "$log" tps transactions p95 hist_p99)
      per=$(awk -v a="$c0" -v b="$c1" -v t="$trx" 'BEGIN{ if (t > 0) printf "%.3f", (b-a)*1000/t; else print "n/a"}')
      [ "$tps" = n/a ] && tps=0
      printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$srv" "$wl" "$n" "$tps" "$p95" "$p99" "$per"
    done
  done
  stop_server
done
