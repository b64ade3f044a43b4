#!/usr/bin/env bash
# System calls per transaction (or per statement), counted exactly by the kernel's syscall
# tracepoints (`perf stat -e syscalls:sys_enter_<name>` on the server process), for each server
# in turn under the same sysbench load. `strace -c` is not used: its stops make the server's
# threads contend and it counts about one futex call per statement that does not happen
# without it (docs/perf-log, session 25). Counting starts WARM seconds into each run and lasts
# WINDOW seconds; the unit is the delta of Com_commit (read-write) or Questions (any other
# workload) over the same window, read just before and after it, so compare columns within a
# row against `sendto` (one per answered statement) rather than trusting the absolute figure.
#   cargo build --release -p shoal && THREADS=64 scripts/syscall-cost.sh
#   WL=oltp_point_select THREADS=8 SERVERS="shoal-pool-of-threads shoal-one-thread-per-connection" \
#     scripts/syscall-cost.sh
# SERVERS: shoal-<thread handling> and/or mariadb (default all three). Needs `perf` with
# tracepoint access (root). Exits non-zero if a server does not start, sysbench fails, or a
# server keeps connections or CLOSE-WAIT sockets afterwards.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-syscall-cost}
WL=${WL:-oltp_read_write}
TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}; THREADS=${THREADS:-64}
WARM=${WARM:-4}; WINDOW=${WINDOW:-6}
PORT=${PORT:-33610}
SERVERS=${SERVERS:-"shoal-pool-of-threads shoal-one-thread-per-connection mariadb"}
CALLS=${CALLS:-"recvfrom sendto poll ppoll epoll_ctl epoll_pwait epoll_wait futex read write readv writev recvmsg sendmsg timerfd_settime fdatasync fsync pread64 pwrite64 madvise mmap munmap sched_yield clock_nanosleep setsockopt"}
case $SERVERS in *shoal-*) need_bins "$SHOAL" ;; esac
command -v perf >/dev/null || { echo "perf not found (apt-get install -y linux-perf)" >&2; exit 1; }
rm -rf "$WORK"; mkdir -p "$WORK"
events=$(for c in $CALLS; do printf 'syscalls:sys_enter_%s,' "$c"; done)
events=${events%,}
unit=Com_commit; [ "$WL" = oltp_read_write ] || unit=Questions
connected() { [ "$(status_var "$PORT" Threads_connected)" -ge "$THREADS" ]; }

for srv in $SERVERS; do
  case $srv in
    mariadb)
      start_mariadb "$PORT" "$WORK/$srv" --max-connections=2000 --max-prepared-stmt-count=1048576 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT --thread-handling=one-thread-per-connection ;;
    shoal-*)
      start_shoal "$PORT" "$WORK/$srv" --thread-handling="${srv#shoal-}" --max-connections=2000 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT ;;
    *) echo "unknown server $srv (SERVERS: shoal-<thread handling> or mariadb)" >&2; exit 1 ;;
  esac
  sql "$PORT" "CREATE DATABASE sbtest"
  sb=(sysbench "$WL" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT"
    --mysql-user=root --mysql-db=sbtest --tables="$TABLES" --table-size="$SIZE")
  "${sb[@]}" --threads=4 prepare >"$WORK/$srv-prepare.log" 2>&1 ||
    { echo "$srv: prepare failed: $WORK/$srv-prepare.log" >&2; exit 1; }
  "${sb[@]}" --threads="$THREADS" --time=$((WARM + WINDOW + 4)) run >"$WORK/$srv-run.log" 2>&1 &
  load=$!
  poll 30 connected ||
    { echo "$srv: the clients never connected" >&2; exit 1; }
  sleep "$WARM" # the load's warm-up, not a wait for a state
  u0=$(status_var "$PORT" "$unit")
  perf stat -x, -e "$events" -p "$SERVER" -o "$WORK/$srv-perf.csv" -- sleep "$WINDOW" >/dev/null 2>&1 ||
    { echo "$srv: perf stat failed (tracepoints need root)" >&2; exit 1; }
  u1=$(status_var "$PORT" "$unit")
  wait "$load" || { echo "$srv: sysbench failed: $WORK/$srv-run.log" >&2; exit 1; }
  n=$((u1 - u0))
  [ "$n" -gt 0 ] || { echo "$srv: no $unit in the window" >&2; exit 1; }
  printf '%-34s %s per %s (%d in %d s):' "$srv" "$WL" "$unit" "$n" "$WINDOW"
  awk -F, -v n="$n" '$1 + 0 > 0 { sub("syscalls:sys_enter_", "", $3); printf " %s %.3f", $3, $1 / n; t += $1 }
    END { printf " | all %.2f\n", t / n }' "$WORK/$srv-perf.csv"
  check_drained "$PORT"
  stop_server
done
