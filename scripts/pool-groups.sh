#!/usr/bin/env bash
# One pool-of-threads run at N connections on the datadir of scripts/handler-ab.sh, then the
# pool's per-group view over the run's last 2 seconds: THREAD_POOL_LATENCY (queueing and
# execution percentiles, reset 2 s before the end), THREAD_POOL_GROUPS and Threadpool_balanced.
# Shows whether the groups wait alike (docs/perf-log/2026-11-30-session-6-fifth-pass.md).
# WINDOW=run resets the percentiles when the warm-up ends instead, so that they cover the
# same window as the load generator's: the difference between its end-to-end percentiles and
# the pool's queueing + execution is what happens outside the pool's queue (epoll, network,
# the load generator itself; "Seventh pass"). CLIENT_NICE (default -10) is the load
# generator's nice value.
#
#   scripts/pool-groups.sh 2048 --innodb-buffer-pool-size=11M                  (I/O-bound)
#   scripts/pool-groups.sh 2048 --innodb-buffer-pool-size=11M --thread-pool-balance-usec=0
#   WINDOW=run CLIENT_NICE=0 scripts/pool-groups.sh 2048 --innodb-buffer-pool-size=11M
#   WINDOW=run BENCH_EXTRA="--client-threads=2 --report-interval=1" scripts/pool-groups.sh 2048 ...
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=${WORK:-/var/tmp/shoal-handler-ab}; P=${PORT:-33811}; TIME=${TIME:-15}
BENCH_EXTRA=${BENCH_EXTRA:---client-threads=2}
WINDOW=${WINDOW:-last}; CLIENT_NICE=${CLIENT_NICE:--10}
n=${1:?connections}; shift
need_bins "$SHOAL" "$BENCH"
[ -d "$W/data" ] || { echo "no datadir: run scripts/handler-ab.sh once first"; exit 1; }
[ "$TIME" -ge 4 ] || { echo "TIME must be at least 4"; exit 1; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
start_shoal "$P" "$W" --thread-handling=pool-of-threads --max-connections=6000 \
  --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size=1G --innodb-flush-method=O_DIRECT "$@"
log=$W/groups-bench.txt
# shellcheck disable=SC2086 # BENCH_EXTRA: several options
bench_run "$W/results" "$log" oltp_point_select --mysql-host=127.0.0.1 --mysql-port="$P" \
  --mysql-user=root --mysql-db=sbtest --tables=8 --table-size=50000 --threads="$n" \
  --time="$TIME" --warmup-time=4 --client-nice="$CLIENT_NICE" --connect-concurrency=128 \
  --label=pool-groups $BENCH_EXTRA &
B=$!
# If the script stops early: the run's shell and its shoal-bench (nothing once they are done).
on_exit "pkill -P $B 2>/dev/null; kill $B 2>/dev/null"
# The sleeps below place a measurement window inside the run (they wait for no state).
if [ "$WINDOW" = run ]; then
  # The warm-up ends 4 s after the connections are up (a second or two for thousands).
  sleep 6.5
  sql "$P" 'FLUSH THREAD_POOL_LATENCY'
  wait $B || { cat "$log" >&2; echo "FAIL: shoal-bench run failed" >&2; exit 1; }
else
  sleep $((TIME + 4 - 2))
  sql "$P" 'FLUSH THREAD_POOL_LATENCY'
  sleep 1.5
fi
mariadb -h127.0.0.1 -P"$P" -uroot -e "SELECT * FROM information_schema.THREAD_POOL_LATENCY;
  SELECT * FROM information_schema.THREAD_POOL_GROUPS;
  SHOW GLOBAL STATUS LIKE 'Threadpool_balanced'"
wait $B || { cat "$log" >&2; echo "FAIL: shoal-bench run failed" >&2; exit 1; }
# Per-interval lines, if BENCH_EXTRA asked for them (--report-interval), then the result.
grep -E '^\[' "$log" || true
read -r trx tps p50 p95 p99 p999 < <(bench_json "$(bench_file "$log")" summary.events \
  summary.tps:.2f summary.latency_ms.p50:.2f summary.latency_ms.p95:.2f \
  summary.latency_ms.p99:.2f summary.latency_ms.p999:.2f)
echo "transactions: $trx ($tps per sec.); latency ms: p50 $p50, p95 $p95, p99 $p99, p99.9 $p999"
check_drained "$P"
