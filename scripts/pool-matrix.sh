#!/usr/bin/env bash
# Issue 4 benchmark matrix, every side in one run: shoal one-thread-per-connection, shoal
# pool-of-threads and MariaDB pool-of-threads (the reference), oltp_point_select and oltp_read_write
# at THREADS client connections, with the data fully cached and I/O-bound (buffer pool about 1/8 of
# the data, direct reads). The load comes from shoal-bench (sysbench-compatible workloads; sysbench
# 1.0 itself cannot start 2048 threads on this 2-core machine within its 30 s init alarm). Per point:
# TPS, p95, p99, server threads, context switches/s, server CPU user/sys, and the client's CPU share.
#
#   cargo build --release -p shoal -p shoal-bench && scripts/pool-matrix.sh
#   THREADS="8 32" CACHES=cached SERVERS="shoal-pool" TIME=5 scripts/pool-matrix.sh   (quick look)
#
# Results: $WORK/results/<cache>/*.json (full shoal-bench results) and $WORK/matrix.md. Exits
# non-zero if a run fails (after the summary) or a server keeps connections after a point.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/var/tmp/shoal-pool-matrix}
TABLES=${TABLES:-8}; SIZE=${SIZE:-50000}
TIME=${TIME:-10}; WARMUP=${WARMUP:-5}
THREADS=${THREADS:-"8 32 128 512 1024 2048 4096"}
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_write"}
CACHES=${CACHES:-"cached iobound"}
SERVERS=${SERVERS:-"shoal-per-thread shoal-pool mariadb-pool"}
PORT=${PORT:-33700}
# I/O-bound: the same buffer pool for every server, 1/8 of the logical data (a sysbench row is
# about 240 bytes with its k-index entry; on-disk sizes differ by engine and are reported).
IOBOUND_BP=${IOBOUND_BP:-$(( TABLES * SIZE * 240 / 8 / 1048576 < 6 ? 6 : TABLES * SIZE * 240 / 8 / 1048576 ))M}
# The client shares the 2 cores; a higher priority keeps its single worker from being starved by
# thousands of server threads (see docs/BENCH.md). Set SB_EXTRA= to run without.
SB_EXTRA=${SB_EXTRA---client-nice=-10}

need_bins "$SHOAL" "$BENCH"
ulimit -n "$(ulimit -Hn)" || true
rm -rf "$WORK"; mkdir -p "$WORK"

# start_server NAME BUFFER_POOL: each server keeps its datadir in $WORK/NAME/data.
start_server() {
  local name=$1 bp=$2
  local opts=(--max-connections=6000 --max-prepared-stmt-count=4000000
    --innodb-buffer-pool-size="$bp" --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT)
  case $name in
    mariadb-pool)
      start_mariadb "$PORT" "$WORK/$name" "${opts[@]}" --back-log=4096 --innodb-log-file-size=256M \
        --thread-handling=pool-of-threads --thread-pool-size=2 ;;
    shoal-per-thread) start_shoal "$PORT" "$WORK/$name" "${opts[@]}" --thread-handling=one-thread-per-connection ;;
    shoal-pool) start_shoal "$PORT" "$WORK/$name" "${opts[@]}" --thread-handling=pool-of-threads ;;
    *) echo "unknown server $name (SERVERS: shoal-per-thread, shoal-pool, mariadb-pool)" >&2; exit 1 ;;
  esac
}

CONN=(--mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
      "--tables=$TABLES" "--table-size=$SIZE")
datasize_mb() { # NAME -> MiB of table data on disk
  case $1 in
    mariadb-pool) du -sm "$WORK/$1/data/sbtest" | cut -f1 ;;
    *) du -sm "$WORK/$1/data" | cut -f1 ;;
  esac
}

failed=0
for srv in $SERVERS; do
  # Prepare once per server with a big cache, then restart for each cache size.
  start_server "$srv" 1G
  sql "$PORT" 'CREATE DATABASE IF NOT EXISTS sbtest'
  echo "$(date +%T) $srv: preparing $TABLES x $SIZE rows"
  "$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$WORK/$srv-prepare.log" 2>&1 \
    || { tail -20 "$WORK/$srv-prepare.log" >&2; echo "prepare failed: $WORK/$srv-prepare.log" >&2; exit 1; }
  stop_server
  mb=$(datasize_mb "$srv")
  echo "$srv data on disk: ${mb} MiB" | tee -a "$WORK/sizes.txt"
  for cache in $CACHES; do
    bp=1G
    [ "$cache" = iobound ] && bp=$IOBOUND_BP
    echo "$srv $cache buffer pool $bp" >>"$WORK/sizes.txt"
    start_server "$srv" "$bp"
    out="$WORK/results/$cache"; mkdir -p "$out"
    for wl in $WORKLOADS; do
      for n in $THREADS; do
        echo "$(date +%T) $srv $cache $wl $n"
        # shellcheck disable=SC2086 # SB_EXTRA: several options
        bench_run "$out" "$WORK/$srv-$cache-$wl-$n.log" "$wl" "${CONN[@]}" --threads="$n" \
          --time="$TIME" --warmup-time="$WARMUP" --quiet --server-pid="$SERVER" \
          --connect-concurrency=128 $SB_EXTRA --label="$srv" \
          || { echo "  (run failed: see $WORK/$srv-$cache-$wl-$n.log)"; failed=1; }
        # The clients of a point can still be finishing (a 2048-client read-write transaction
        # takes seconds): the next point would meet 1040 Too many connections.
        check_drained "$PORT" 120
      done
    done
    stop_server
  done
done

python3 "$ROOT/scripts/pool-matrix-summary.py" "$WORK" | tee "$WORK/matrix.md"
[ "$failed" = 0 ] || { echo "some runs failed" >&2; exit 1; }
