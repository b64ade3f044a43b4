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
# Results: $WORK/results/<cache>/*.json (full shoal-bench results) and $WORK/matrix.md.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
SHOAL=${SHOAL:-$TARGET/release/shoal}
BENCH=${BENCH:-$TARGET/release/shoal-bench}
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

for b in "$SHOAL" "$BENCH"; do [ -x "$b" ] || { echo "build first: missing $b"; exit 1; }; done
ulimit -n "$(ulimit -Hn)" || true
rm -rf "$WORK"; mkdir -p "$WORK"
SERVER=
stop_server() {
  if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=; fi
}
trap stop_server EXIT

# start_server NAME BUFFER_POOL
start_server() {
  local name=$1 bp=$2
  case $name in
    mariadb-pool)
      if [ ! -d "$WORK/data-$name" ]; then
        mariadb-install-db --no-defaults --datadir="$WORK/data-$name" \
          --auth-root-authentication-method=normal >/dev/null 2>&1
      fi
      /usr/sbin/mariadbd --no-defaults --datadir="$WORK/data-$name" --socket="$WORK/sock" \
        --pid-file="$WORK/pid" --port=$PORT --bind-address=127.0.0.1 --user=root \
        --skip-grant-tables --skip-log-bin --performance-schema=OFF --max-connections=6000 \
        --back-log=4096 --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size="$bp" \
        --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT \
        --innodb-log-file-size=256M \
        --thread-handling=pool-of-threads --thread-pool-size=2 \
        >"$WORK/$name.log" 2>&1 & ;;
    shoal-*)
      local h=one-thread-per-connection
      [ "$name" = shoal-pool ] && h=pool-of-threads
      "$SHOAL" --port=$PORT --socket="$WORK/sock" --datadir="$WORK/data-$name" --initialize-insecure \
        --thread-handling=$h --max-connections=6000 --max-prepared-stmt-count=4000000 \
        --innodb-buffer-pool-size="$bp" --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT >>"$WORK/$name.log" 2>&1 & ;;
  esac
  SERVER=$!
  for _ in $(seq 600); do
    mariadb -h127.0.0.1 -P$PORT -uroot -e 'SELECT 1' >/dev/null 2>&1 && return
    sleep 0.2
  done
  echo "server $name did not start"; tail -20 "$WORK/$name.log"; exit 1
}

# The clients of a point can still be finishing (a 2048-client read-write transaction takes
# seconds): wait until they are gone, or the next point meets 1040 Too many connections.
wait_drained() {
  for _ in $(seq 240); do
    local n
    n=$(mariadb -h127.0.0.1 -P$PORT -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Threads_connected'" 2>/dev/null | awk '{print $2}')
    [ -n "$n" ] && [ "$n" -le 1 ] && break
    sleep 0.5
  done
  # Then the same check every script makes: nothing left open, in CLOSE-WAIT or recovered.
  check_drained $PORT 1
}

CONN=(--mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest
      --tables=$TABLES --table-size=$SIZE)
datasize_mb() { # NAME -> MiB of table data on disk
  case $1 in
    mariadb-pool) du -sm "$WORK/data-$1/sbtest" | cut -f1 ;;
    *) du -sm "$WORK/data-$1" | cut -f1 ;;
  esac
}

for srv in $SERVERS; do
  # Prepare once per server with a big cache, then restart for each cache size.
  start_server "$srv" 1G
  mariadb -h127.0.0.1 -P$PORT -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest'
  echo "$(date +%T) $srv: preparing $TABLES x $SIZE rows"
  "$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$WORK/$srv-prepare.log" 2>&1
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
        "$BENCH" run "$wl" "${CONN[@]}" --threads="$n" --time="$TIME" --warmup-time="$WARMUP" \
          --quiet --server-pid="$SERVER" --connect-concurrency=128 $SB_EXTRA \
          --label="$srv" --output="$out" >"$WORK/$srv-$cache-$wl-$n.log" 2>&1 \
          || echo "  (run failed: see $WORK/$srv-$cache-$wl-$n.log)"
        wait_drained
      done
    done
    stop_server
  done
done

python3 "$ROOT/scripts/pool-matrix-summary.py" "$WORK" | tee "$WORK/matrix.md"
