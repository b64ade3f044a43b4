#!/usr/bin/env bash
# One shoal server, one handler, consecutive load points on ONE datadir (the datadir of
# scripts/handler-ab.sh): TPS, p99 and the server's CPU per query at each client count, in the
# order given, so a sweep can go up and back down and show drift next to the curve. Used for the
# pool's peak-retention check (docs/perf-log/2026-11-30-session-4-third-pass.md).
#
#   cargo build --release -p shoal -p shoal-bench
#   scripts/handler-ab.sh                     # once, creates and fills the datadir
#   scripts/pool-sweep.sh pool-of-threads "8 32 128 512 1024 2048 4096 4096 2048 1024 512 128 32 8"
#   WL=oltp_read_write EXTRA=--innodb-buffer-pool-size=11M scripts/pool-sweep.sh pool-of-threads "8 2048"
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=${WORK:-/var/tmp/shoal-handler-ab}; P=${PORT:-33811}
TIME=${TIME:-10}; WARMUP=${WARMUP:-5}; WL=${WL:-oltp_point_select}; EXTRA=${EXTRA:-}
BENCH_EXTRA=${BENCH_EXTRA:-}
# SERVER_CPUS / CLIENT_CPUS (taskset lists, e.g. 0 and 1): give the server and the load generator
# cores of their own, so the client's cost cannot be read as the server's. Unset: both share all.
[ -n "${SERVER_CPUS:-}" ] && SERVER_WRAP=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && BENCH_WRAP=(taskset -c "$CLIENT_CPUS")
h=${1:?handler}; points=${2:?"client counts"}
need_bins "$SHOAL" "$BENCH"
[ -d "$W/data" ] || { echo "no datadir: run scripts/handler-ab.sh once first"; exit 1; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# shellcheck disable=SC2086 # EXTRA: several options
start_shoal "$P" "$W" --thread-handling="$h" --max-connections=6000 \
  --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size=1G \
  --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT $EXTRA
ticks() { awk '{print $14+$15}' "/proc/$SERVER/stat"; }
for n in $points; do
  # The pool's own queueing and execution percentiles restart at every point (they then cover
  # warm-up + run): the server's side of the latency, next to the client's p99 (printed: the
  # larger of the groups' p99s).
  [ "$h" = pool-of-threads ] && sql "$P" 'FLUSH THREAD_POOL_LATENCY'
  c0=$(ticks)
  # shellcheck disable=SC2086 # BENCH_EXTRA: several options
  bench_run "$W/results" "$W/sweep-last.txt" "$WL" --mysql-host=127.0.0.1 --mysql-port="$P" \
    --mysql-user=root --mysql-db=sbtest --tables=8 --table-size=50000 --threads="$n" \
    --time="$TIME" --warmup-time="$WARMUP" --client-nice=-10 --connect-concurrency=128 \
    --label="$h" $BENCH_EXTRA \
    || { cat "$W/sweep-last.txt" >&2; echo "FAIL: $h n=$n: shoal-bench run failed" >&2; exit 1; }
  c1=$(ticks)
  # Server CPU (user+sys, ticks of 10 ms) over warm-up + run, per query of the measured run:
  # comparable between points, not an absolute cost (it includes connecting and disconnecting).
  # srv_us / cli_us: the server's and the load generator's CPU per transaction over the measured
  # run alone, from shoal-bench's own sampling: where the time per transaction goes as the
  # connection count grows, server and client apart (they share the machine's cores).
  read -r tps p99 q u s c < <(bench_json "$BENCH_JSON" summary.tps:.2f summary.latency_ms.p99:.2f \
    summary.queries sys.server_cpu_user_pct sys.server_cpu_sys_pct sys.tool_cpu_pct)
  per=$(awk -v t="$tps" -v u="$u" -v s="$s" -v c="$c" -v q="$q" -v dt=$((c1 - c0)) 'BEGIN {
    printf "us_per_query=%.1f ", dt * 1e4 / (q > 0 ? q : 1)
    if (t > 0) printf "srv_us=%.1f cli_us=%.1f", (u + s) * 1e4 / t, c * 1e4 / t
    else printf "srv_us=? cli_us=?" }')
  if [ "$h" = pool-of-threads ]; then
    per="$per $(sql "$P" 'SELECT QUEUEING_P99_US, EXECUTION_P99_US
      FROM information_schema.THREAD_POOL_LATENCY' | awk '$1>q{q=$1} $2>x{x=$2}
      END{printf "srv_queue_p99=%.1fms srv_exec_p99=%.1fms", q/1000, x/1000}')"
  fi
  echo "$h n=$n tps=$tps p99=${p99}ms server_cpu_ticks=$((c1 - c0)) $per"
  check_drained "$P"
done
