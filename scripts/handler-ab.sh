#!/usr/bin/env bash
# A/B of shoal's two connection handlers at one load point, alternating on ONE datadir, so that
# the LSM state and the page cache are as alike as this machine allows: one-thread-per-connection
# and pool-of-threads in A B B A order, ROUNDS rounds (use an even number). Prints TPS, p99, the server's CPU (user/sys % of a core) and
# the server CPU per transaction, plus the pool's Threadpool_* counters that explain its path
# (linger hits, dequeues, wakes, threads, waits); at the end the pool / per-thread ratio per round
# and its geometric mean.
#
#   cargo build --release -p shoal -p shoal-bench
#   ROUNDS=3 THREADS=8 WL=oltp_point_select scripts/handler-ab.sh
#   ROUNDS=3 THREADS=8 EXTRA=--innodb-buffer-pool-size=11M scripts/handler-ab.sh   (I/O-bound)
#   EXTRA=--thread-pool-linger-usec=0 ...                                           (no lingering)
#   BENCH_EXTRA=--client-threads=2 ...             (more load-generator threads, both handlers)
#   SERVER_CPUS=0 CLIENT_CPUS=1 ...                (a core each for server and load generator)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=${WORK:-/var/tmp/shoal-handler-ab}; P=${PORT:-33811}
ROUNDS=${ROUNDS:-2}; THREADS=${THREADS:-8}; TIME=${TIME:-10}; WL=${WL:-oltp_point_select}
HANDLERS=${HANDLERS:-"one-thread-per-connection pool-of-threads"}
EXTRA=${EXTRA:-}; BENCH_EXTRA=${BENCH_EXTRA:-}
# SERVER_CPUS / CLIENT_CPUS (taskset lists, e.g. 0 and 1): give the server and the load generator
# cores of their own, so the client's cost cannot be read as the server's. Unset: both share all.
[ -n "${SERVER_CPUS:-}" ] && SERVER_WRAP=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && BENCH_WRAP=(taskset -c "$CLIENT_CPUS")
need_bins "$SHOAL" "$BENCH"
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$P" --mysql-user=root --mysql-db=sbtest --tables=8
      --table-size=50000)
start() {
  # shellcheck disable=SC2086 # EXTRA: several options
  start_shoal "$P" "$W" --thread-handling="$1" --max-connections=6000 \
    --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size=1G \
    --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT $EXTRA
}
mkdir -p "$W"
if [ ! -d "$W/data" ]; then
  start one-thread-per-connection
  sql "$P" 'CREATE DATABASE IF NOT EXISTS sbtest'
  "$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$W/prepare.log" 2>&1
  stop_server
fi
# Odd rounds run the handlers in the given order, even rounds reversed (A B B A ...): runs on one
# datadir are not independent (the memtable and L0 carried over from the previous run change
# with a period of about two runs), and an A/A check of one handler against itself showed the
# second slot of every round 5-9 % slower. Alternating the order cancels that position effect.
REVERSED=$(echo "$HANDLERS" | tr ' ' '\n' | tac | tr '\n' ' ')
: >"$W/rounds.txt"
for r in $(seq "$ROUNDS"); do
  order=$HANDLERS
  [ $((r % 2)) -eq 0 ] && order=$REVERSED
  for h in $order; do
    start "$h"
    # shellcheck disable=SC2086 # BENCH_EXTRA: several options
    bench_run "$W/results" "$W/last-$h.txt" "$WL" "${CONN[@]}" --threads="$THREADS" --time="$TIME" \
      --warmup-time=2 --client-nice=-10 --connect-concurrency=128 --label="$h" $BENCH_EXTRA \
      || { cat "$W/last-$h.txt" >&2; echo "FAIL: round $r $h: shoal-bench run failed" >&2; exit 1; }
    read -r tps p99 u s < <(bench_json "$BENCH_JSON" summary.tps:.2f summary.latency_ms.p99:.2f \
      sys.server_cpu_user_pct:.1f sys.server_cpu_sys_pct:.1f)
    # Server CPU (user + sys, % of a core) per transaction, in microseconds.
    per=$(awk -v t="$tps" -v u="$u" -v s="$s" 'BEGIN { if (t > 0) printf "%.1f", (u + s) * 1e4 / t; else print "?" }')
    echo "round $r $h: tps=$tps p99=${p99}ms server_cpu(user/sys)=$u/$s server_us_per_trx=$per"
    [ "$per" = "?" ] && per=0
    echo "$r $h ${tps:-0} $per ${p99:-0}" >>"$W/rounds.txt"
    if [ "$h" = pool-of-threads ]; then
      sql "$P" "SHOW GLOBAL STATUS WHERE Variable_name IN \
        ('Threadpool_threads','Threadpool_linger_hits','Threadpool_dequeues_by_listener', \
         'Threadpool_dequeues_by_worker','Threadpool_wakes','Threadpool_waits_row_lock', \
         'Threadpool_waits_diskio','Threadpool_waits_group_commit','Threadpool_arms', \
         'Threadpool_edge_idles','Threadpool_edge_requeues')" | tr '\n\t' ' =' | sed 's/^/    /'
      echo
    fi
    check_drained "$P"
    stop_server
  done
done
# Summary: per handler the min / median / mean TPS, and the per-round ratio of the last handler
# to the first (as given in HANDLERS) with its geometric mean, the estimate that the A B B A order
# leaves unbiased.
# shellcheck disable=SC2086 # one argument per handler
python3 - "$W/rounds.txt" $HANDLERS <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
hs = sys.argv[2:]
by = {h: {int(r[0]): (float(r[2]), float(r[3]), float(r[4])) for r in rows if r[1] == h}
      for h in hs}
for h in hs:
    t = [v[0] for v in by[h].values()]
    print(f"{h}: tps min {min(t):.1f} median {statistics.median(t):.1f} mean {statistics.mean(t):.1f}")
if len(hs) == 2 and hs[0] != hs[1]:
    a, b = hs
    rs = [by[b][r][0] / by[a][r][0] for r in sorted(by[a]) if r in by[b] and by[a][r][0] > 0]
    if rs:
        g = math.exp(statistics.mean(math.log(x) for x in rs if x > 0))
        print(f"{b} / {a} per round: {' '.join(f'{x:.3f}' for x in rs)}; "
              f"geometric mean {g:.3f}, median {statistics.median(rs):.3f}")
    ps = [by[b][r][2] / by[a][r][2] for r in sorted(by[a]) if r in by[b] and by[a][r][2] > 0]
    if ps:
        print(f"p99 {b} / {a} per round: {' '.join(f'{x:.2f}' for x in ps)}; "
              f"median {statistics.median(ps):.2f}")
PY
