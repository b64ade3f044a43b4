#!/usr/bin/env bash
# What sharing prepared statements between sessions (crates/session/src/plans.rs) buys at
# thousands of connections, for one or two builds:
#
#   1. In process: statement_bench's ns per prepared point select at 32 and 2048 sessions,
#      the sessions sharing one plan and (DISTINCT_TEXT=1) each building its own, one and two
#      threads (the shared plan's state moving between CPUs).
#   2. Through the server: N (default 2048) shoal-bench read-write clients, each preparing
#      sysbench's statements; the server's RSS 9 s into the run, its Prepared_stmt_count and
#      Shoal_shared_plan_* counters, and the load generator's connect + prepare time.
#
#   cargo build --release -p shoal -p shoal-bench -p shoal-session --examples
#   scripts/shared-plans.sh                       (the built shoal)
#   BUILDS="old=<shoal> new=<shoal>" ROUNDS=2 scripts/shared-plans.sh
#
# Exits non-zero if a run fails or leaves connections open.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-shared-plans}
N=${N:-2048}; ROUNDS=${ROUNDS:-1}; PORT=${PORT:-33670}; EXECUTES=${EXECUTES:-40000}
TABLES=${TABLES:-4}; SIZE=${SIZE:-20000}
STATEMENT_BENCH=${STATEMENT_BENCH:-$SHOAL_BIN_DIR/examples/statement_bench}
BUILDS=${BUILDS:-"built=$SHOAL"}
if port_in_use "$PORT"; then echo "port $PORT is already in use: set PORT" >&2; exit 1; fi
need_bins "$BENCH"
[ -x "$STATEMENT_BENCH" ] || { echo "no $STATEMENT_BENCH: cargo build --release -p shoal-session --examples" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)" || true
rm -rf "$WORK"; mkdir -p "$WORK"
failed=0

echo "## in process: ns per execute (best / median of 5 passes), statement_bench"
for r in $(seq "$ROUNDS"); do
  for threads in 1 2; do
    for sessions in 32 2048; do
      for distinct in 0 1; do
        DISTINCT_TEXT=$distinct "$STATEMENT_BENCH" "$sessions" "$EXECUTES" "$threads" 2>&1 | tail -1 \
          || { echo "statement_bench failed" >&2; failed=1; }
      done
    done
  done
done

echo "## through the server: $N read-write clients"
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
      "--tables=$TABLES" "--table-size=$SIZE")
for r in $(seq "$ROUNDS"); do
  for b in $BUILDS; do
    name=${b%%=*}; SHOAL=${b#*=}
    need_bins "$SHOAL"
    dir="$WORK/$name-$r"; mkdir -p "$dir"
    start_shoal "$PORT" "$dir" --thread-handling=pool-of-threads --max-connections=$((N + 100)) \
      --max-prepared-stmt-count=4000000
    sql "$PORT" 'CREATE DATABASE IF NOT EXISTS sbtest'
    "$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$dir/prepare.log" 2>&1 \
      || { tail -20 "$dir/prepare.log" >&2; echo "prepare failed" >&2; exit 1; }
    rss0=$(awk '/VmRSS/{print $2}' "/proc/$SERVER/status")
    ( sleep 9
      awk '/VmRSS/{print $2}' "/proc/$SERVER/status" >"$dir/rss"
      sql "$PORT" "SHOW GLOBAL STATUS WHERE Variable_name = 'Prepared_stmt_count' \
        OR Variable_name LIKE 'Shoal_shared_plan%'" | tr '\t\n' '= ' >"$dir/status" ) &
    sampler=$!
    if ! bench_run "$dir/results" "$dir/run.log" oltp_read_write "${CONN[@]}" --threads="$N" \
        --time=12 --warmup-time=2 --quiet --server-pid="$SERVER" --connect-concurrency=128 \
        --client-threads=2 --label="$name"; then
      echo "run of $name failed: see $dir/run.log" >&2; failed=1
    fi
    wait "$sampler" || true
    check_drained "$PORT" 120 || failed=1
    connect=$(grep -o 'connect + prepare time: *[0-9.]*s' "$dir/run.log" | awk '{print $NF}')
    echo "$name round $r: RSS ${rss0} kB idle, $(cat "$dir/rss") kB with $N clients;" \
      "connect + prepare ${connect:-?}; $(cat "$dir/status")"
    stop_server
  done
done
exit "$failed"
