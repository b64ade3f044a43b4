#!/usr/bin/env bash
# A/B of shoal's two connection handlers with sysbench itself as the client, every run on a FRESH
# COPY of one prepared datadir: read-write runs change the data (the memtable fills, SST files are
# written), and on a shared datadir the same handler moved between 527 and 819 TPS from run to run
# (docs/perf-log/2026-12-01-session-10-eighth-pass.md). Rounds alternate A B B A, which cancels the
# position effect (the second run of a round was about 10 % faster there). Prints each run's TPS,
# p99 and server CPU (ticks over the measured window), then the per-round ratio of the second
# handler to the first and its geometric mean with a 95 % interval.
#
#   cargo build --release -p shoal
#   ROUNDS=8 scripts/sysbench-ab.sh                       (oltp_read_write, 8 threads)
#   ROUNDS=8 WL=oltp_point_select THREADS=8 scripts/sysbench-ab.sh
#   EXTRA=--thread-pool-linger-usec=0 ...                 (server options for both handlers)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=${WORK:-/var/tmp/shoal-sysbench-ab}; P=${PORT:-33822}
ROUNDS=${ROUNDS:-4}; THREADS=${THREADS:-8}; TIME=${TIME:-10}; WARMUP=${WARMUP:-3}
WL=${WL:-oltp_read_write}; TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}
HANDLERS=${HANDLERS:-"one-thread-per-connection pool-of-threads"}
EXTRA=${EXTRA:-}
command -v sysbench >/dev/null || { echo "sysbench is not installed (./run-tests installs it)"; exit 1; }
need_bins "$SHOAL"
SB=(--db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$P" --mysql-user=root --mysql-db=sbtest
    "--tables=$TABLES" "--table-size=$SIZE")
start() { # dir handler
  # shellcheck disable=SC2086 # EXTRA: several options
  start_shoal "$P" "$1" --thread-handling="$2" --max-connections=2000 \
    --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
    --innodb-flush-method=O_DIRECT $EXTRA
}
ticks() { awk '{print $14+$15}' "/proc/$SERVER/stat"; }
mkdir -p "$W/base"
if [ ! -f "$W/base/prepared-$TABLES-$SIZE" ]; then
  rm -rf "${W:?}/base"/*
  start "$W/base" one-thread-per-connection
  sql "$P" 'CREATE DATABASE IF NOT EXISTS sbtest'
  sysbench oltp_read_write "${SB[@]}" --threads=4 prepare >"$W/base/prepare.log" 2>&1
  stop_server
  touch "$W/base/prepared-$TABLES-$SIZE"
fi
REVERSED=$(echo "$HANDLERS" | tr ' ' '\n' | tac | tr '\n' ' ')
: >"$W/rounds.txt"
for r in $(seq "$ROUNDS"); do
  order=$HANDLERS
  [ $((r % 2)) -eq 0 ] && order=$REVERSED
  for h in $order; do
    rm -rf "$W/run"; mkdir -p "$W/run"; cp -a "$W/base/data" "$W/run/data"
    start "$W/run" "$h"
    sysbench "$WL" "${SB[@]}" --threads="$THREADS" --time="$WARMUP" run >"$W/run/warmup.log" 2>&1 \
      || { cat "$W/run/warmup.log" >&2; echo "FAIL: round $r $h: warm-up failed" >&2; exit 1; }
    t0=$(ticks)
    sysbench "$WL" "${SB[@]}" --threads="$THREADS" --time="$TIME" --percentile=99 run >"$W/run/run.log" 2>&1 \
      || { cat "$W/run/run.log" >&2; echo "FAIL: round $r $h: sysbench run failed" >&2; exit 1; }
    t1=$(ticks)
    check_drained "$P"
    stop_server
    read -r tps p99 < <(sysbench_result "$W/run/run.log" tps p99)
    [ "$tps" = n/a ] && tps=0
    [ "$p99" = n/a ] && p99="?"
    echo "round $r $h: tps=$tps p99=${p99}ms server_cpu_ticks=$((t1 - t0))"
    echo "$r $h ${tps:-0}" >>"$W/rounds.txt"
  done
done
# shellcheck disable=SC2086 # one argument per handler
python3 - "$W/rounds.txt" $HANDLERS <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
a, b = sys.argv[2:4]
by = {h: {int(r[0]): float(r[2]) for r in rows if r[1] == h} for h in (a, b)}
rs = [by[b][r] / by[a][r] for r in sorted(by[a]) if r in by[b] and by[a][r] > 0 and by[b][r] > 0]
if not rs:
    sys.exit("no complete round")
logs = [math.log(x) for x in rs]
g = math.exp(statistics.mean(logs))
line = f"{b} / {a} per round: {' '.join(f'{x:.3f}' for x in rs)}; geometric mean {g:.3f}"
if len(rs) > 1:
    # Student's t for n - 1 degrees of freedom (few rounds: 1.96 would be too narrow).
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
         10: 2.23, 11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13}.get(len(rs) - 1, 2.09 if len(rs) <= 21 else 2.0)
    se = statistics.stdev(logs) / math.sqrt(len(rs))
    line += f" (95 % CI {math.exp(math.log(g) - t * se):.3f}-{math.exp(math.log(g) + t * se):.3f})"
print(line + f", median {statistics.median(rs):.3f}")
PY
