#!/usr/bin/env bash
# A/B of shoal server BINARIES (two builds of the server, e.g. before and after a change) at one
# load point: each binary in turn, ROUNDS rounds, on its own datadir (a binary from before a format
# change may not open a newer datadir), pool-of-threads. Per run: TPS, the server's CPU per
# transaction (user and system, microseconds, from /proc/PID/stat) and, once per binary with
# SYSCALLS=1, the server's system calls per transaction (strace -c; strace slows the run, so its
# TPS is not reported). CPU and system calls per transaction are much steadier than TPS on this
# noisy 2-core machine: a change that adds a syscall per statement shows there first. Except
# futex: strace's own stops make the server's threads contend, so it counts about one futex
# call per statement whatever the build (a perf tracepoint, `perf record -e
# syscalls:sys_enter_futex`, counted 0.003-0.025 per point select; docs/perf-log, session 25).
#
#   BINS="/tmp/shoal-before /tmp/shoal-after" ROUNDS=3 THREADS=8 scripts/binary-ab.sh
#   SYSCALLS=1 BINS=... scripts/binary-ab.sh
#   EXTRA="--innodb-buffer-pool-size=8M --innodb-flush-method=O_DIRECT" TABLES=4 SIZE=100000 \
#     BINS=... scripts/binary-ab.sh             (I/O-bound: 96 MB of data, 12x the pool, direct reads)
# EXTRA: more server options for both binaries; TABLES / SIZE: the data (default 2 x 10,000);
# BENCH_ARGS: more shoal-bench run options. Issue 19's I/O-bound regime at 2048 clients:
#   EXTRA="--innodb-buffer-pool-size=6M --innodb-flush-method=O_DIRECT --max-connections=6000 \
#     --max-prepared-stmt-count=4000000" TABLES=4 SIZE=50000 THREADS=2048 TIME=12 \
#     BENCH_ARGS="--rand-type=uniform --client-nice=-10 --client-threads=2" BINS=... \
#     scripts/binary-ab.sh
# The load comes from shoal-bench (one process), not sysbench (a thread per client): the two
# are woken differently by the kernel, and at 64 clients that changed the pool's figures by a
# third (docs/perf-log, session 28); use bench-vs-mariadb.sh for sysbench's.
# Exits non-zero if a server does not start, a run reports errors (or more than 1 % retried
# deadlocks) or leaves connections open.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=${WORK:-/var/tmp/shoal-binary-ab}; P=${PORT:-33812}
ROUNDS=${ROUNDS:-3}; THREADS=${THREADS:-8}; TIME=${TIME:-8}; WL=${WL:-oltp_point_select}
SYSCALLS=${SYSCALLS:-0}
EXTRA=${EXTRA:-}; TABLES=${TABLES:-2}; SIZE=${SIZE:-10000}
read -r -a BARGS <<<"${BENCH_ARGS:-}"
read -r -a BIN_LIST <<<"${BINS:?set BINS to two or more server binaries}"
need_bins "$BENCH" "${BIN_LIST[@]}"
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$P" --mysql-user=root --mysql-db=sbtest
      "--tables=$TABLES" "--table-size=$SIZE")
mkdir -p "$W"
start() { # binary index
  local dir=$W/b$1
  # Builds from before the first-start root password know no --initialize-insecure.
  local init_opt=
  if grep -qa initialize-insecure "${BIN_LIST[$1]}"; then init_opt=--initialize-insecure; fi
  # shellcheck disable=SC2086 # EXTRA: several options
  SHOAL=${BIN_LIST[$1]} SHOAL_INIT=$init_opt start_shoal "$P" "$dir" --thread-handling=pool-of-threads $EXTRA
  if [ ! -e "$dir/prepared" ]; then
    sql "$P" 'CREATE DATABASE IF NOT EXISTS sbtest'
    "$BENCH" prepare "$WL" "${CONN[@]}" >/dev/null
    touch "$dir/prepared"
  fi
  "$BENCH" run "$WL" "${CONN[@]}" "${BARGS[@]}" --threads="$THREADS" --time=3 >"$W/warmup.log" 2>&1 \
    || { tail -20 "$W/warmup.log" >&2; echo "FAIL: warm-up run failed" >&2; exit 1; } # warms the cache
}
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
run() { # SECS: one measured run; sets N (transactions), ERR (failed), IGN (ignored: deadlocks and
  # lock wait timeouts, retried as sysbench does; read-write's hot rows make a few), TPS
  bench_run "$W/results" "$W/run.log" "$WL" "${CONN[@]}" "${BARGS[@]}" --threads="$THREADS" --time="$1" \
    || { tail -20 "$W/run.log" >&2; echo "FAIL: shoal-bench run failed: $W/run.log" >&2; exit 1; }
  read -r N e1 e2 TPS < <(bench_json "$BENCH_JSON" summary.events summary.errors \
    summary.ignored_errors summary.tps)
  ERR=$e1; IGN=$e2
}
hz=$(getconf CLK_TCK)
for r in $(seq "$ROUNDS"); do
  for i in "${!BIN_LIST[@]}"; do
    start "$i"
    read -r u0 s0 < <(ticks "$SERVER")
    run "$TIME"
    read -r u1 s1 < <(ticks "$SERVER")
    if [ "$N" -eq 0 ] || [ "$ERR" -ne 0 ] || [ "$IGN" -gt $((N / 100)) ]; then
      echo "FAIL: ${BIN_LIST[$i]}: $N transactions, $ERR errors, $IGN ignored (> 1 %)" >&2; exit 1
    fi
    check_drained "$P"
    awk -v r="$r" -v b="${BIN_LIST[$i]}" -v n="$N" -v tps="$TPS" -v hz="$hz" \
      -v du=$((u1 - u0)) -v ds=$((s1 - s0)) 'BEGIN {
        printf "round %d  %-28s tps %9.1f  server user %6.2f us/tx  sys %6.2f us/tx\n",
          r, b, tps, du * 1e6 / hz / n, ds * 1e6 / hz / n }'
    stop_server
  done
done
if [ "$SYSCALLS" = 1 ]; then
  command -v strace >/dev/null || { echo "SYSCALLS=1 needs strace" >&2; exit 1; }
  for i in "${!BIN_LIST[@]}"; do
    start "$i"
    strace -c -f -p "$SERVER" -o "$W/strace-$i.txt" 2>/dev/null &
    st=$!
    on_exit "kill $st 2>/dev/null"
    sleep 1 # strace attaches to each thread in turn
    run 5
    kill -INT $st; wait $st || true
    echo "system calls per transaction, ${BIN_LIST[$i]} ($N transactions):"
    awk -v n="$N" 'NR > 2 && $4 ~ /^[0-9]+$/ && $4 / n >= 0.01 { printf "  %-16s %.3f\n", $NF, $4 / n }' "$W/strace-$i.txt"
    stop_server
  done
fi
