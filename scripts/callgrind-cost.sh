#!/usr/bin/env bash
# Instructions per transaction, counted by valgrind (callgrind), for shoal and MariaDB under the
# same sysbench load. This machine has no hardware counters and its CPU time moves ±10-15 % from
# minute to minute; callgrind counts instructions, which repeat for the same binary and input
# whatever else the machine is doing. It is the figure to compare two builds by, and to see where
# the instructions go (callgrind_annotate on the profile it leaves). With THREADS=1 and a fixed
# SEED (sysbench's --rand-seed, default 1) the same build gives the same count within a fraction
# of a percent; more clients interleave differently from run to run.
#   cargo build --release -p shoal && WL=oltp_read_write EVENTS=2000 scripts/callgrind-cost.sh
# Each server starts under callgrind with instrumentation off; sysbench prepares the tables and
# warms the cache and the prepared statements (WARM events); instrumentation goes on for exactly
# EVENTS transactions at THREADS clients, then the counts are dumped and the server stopped.
# Prints instructions per transaction for each server and the ratio to the first; the profiles
# stay in $WORK/<server>.callgrind (read them with callgrind_annotate --inclusive=yes).
# SERVERS: shoal-<thread handling> and/or mariadb (default "shoal-pool-of-threads mariadb").
# OPTS: more sysbench switches for the warm-up and the counted run, e.g. one statement kind alone
# (OPTS="--point_selects=0 --sum_ranges=0 ..."; see scripts/statement-cost.sh).
# VALGRIND_OPTS: more callgrind switches, e.g. "--cache-sim=yes" to count simulated cache misses
# (the profile's I1mr / D1mr / DLmr ... columns; callgrind_annotate shows them).
# SETTLE=1 (default): after shoal's prepare, OPTIMIZE TABLE flushes the prepared rows from the
# memtable and compacts them, so that one-off background work does not fall inside the counted
# window (it was about 16 % of a read-write count of 1,000 transactions); SETTLE=0 counts it.
# MariaDB's tables are left as prepared (InnoDB writes its pages in place).
# PRE_RW=N: N read-write transactions at PRE_RW_THREADS clients (8) after that and before the
# warm-up, to count what a workload costs on a server that has taken writes (the drift after
# read-write, docs/perf-log session 39).
# Instructions are not CPU time: MariaDB and shoal differ in instructions per cycle, so the
# CPU-time comparison stays bench-vs-mariadb.sh's; this one says whether a change made shoal do
# less work.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-callgrind}
WL=${WL:-oltp_read_write}; THREADS=${THREADS:-8}; EVENTS=${EVENTS:-2000}; WARM=${WARM:-500}
TABLES=${TABLES:-4}; SIZE=${SIZE:-10000}; PORT=${PORT:-33700}; SEED=${SEED:-1}
SERVERS=${SERVERS:-"shoal-pool-of-threads mariadb"}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }
case $SERVERS in *shoal-*) need_bins "$SHOAL" ;; esac
rm -rf "$WORK"; mkdir -p "$WORK"

SB=(--db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
    "--tables=$TABLES" "--table-size=$SIZE" "--rand-seed=$SEED")
read -r -a XOPTS <<<"${OPTS:-}"
read -r -a VGOPTS <<<"${VALGRIND_OPTS:-}"
first=
printf '| server | workload | threads | transactions | instructions / transaction | ratio |\n|---|---|---:|---:|---:|---:|\n'
for srv in $SERVERS; do
  out=$WORK/$srv.callgrind
  SERVER_WRAP=(valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$out"
               --dump-instr=no --compress-strings=no ${VGOPTS[@]+"${VGOPTS[@]}"})
  case $srv in
    mariadb)
      # Valgrind has no io_uring: InnoDB's synchronous I/O path instead of native AIO; and it
      # cannot reserve the address space of the default innodb_buffer_pool_size_max.
      start_mariadb "$PORT" "$WORK/$srv" --max-connections=2000 --max-prepared-stmt-count=1048576 \
        --innodb-buffer-pool-size=1G --innodb-buffer-pool-size-max=1G \
        --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT --innodb-use-native-aio=0 \
        --thread-handling=one-thread-per-connection ;;
    shoal-*)
      start_shoal "$PORT" "$WORK/$srv" --thread-handling="${srv#shoal-}" --max-connections=2000 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT ;;
    *) echo "unknown server $srv (SERVERS: shoal-<thread handling> or mariadb)" >&2; exit 1 ;;
  esac
  sql "$PORT" 'CREATE DATABASE sbtest'
  sysbench oltp_read_write "${SB[@]}" --threads=4 prepare >"$WORK/$srv-prepare.log" 2>&1 ||
    { tail -20 "$WORK/$srv-prepare.log" >&2; echo "FAIL: $srv: prepare failed" >&2; exit 1; }
  if [ "${SETTLE:-1}" = 1 ] && [ "$srv" != mariadb ]; then
    tables=$(seq -s, -f 'sbtest%g' 1 "$TABLES")
    sql "$PORT" "OPTIMIZE TABLE sbtest.${tables//,/, sbtest.}" >/dev/null
  fi
  if [ "${PRE_RW:-0}" -gt 0 ]; then
    sysbench oltp_read_write "${SB[@]}" --threads="${PRE_RW_THREADS:-8}" --events="$PRE_RW" --time=0 run \
      >"$WORK/$srv-pre-rw.log" 2>&1 ||
      { tail -20 "$WORK/$srv-pre-rw.log" >&2; echo "FAIL: $srv: read-write before the count failed" >&2; exit 1; }
  fi
  sysbench "$WL" "${SB[@]}" ${XOPTS[@]+"${XOPTS[@]}"} --threads="$THREADS" --events="$WARM" --time=0 run >"$WORK/$srv-warm.log" 2>&1 ||
    { tail -20 "$WORK/$srv-warm.log" >&2; echo "FAIL: $srv: warm-up failed" >&2; exit 1; }
  callgrind_control -i on "$SERVER" >/dev/null
  log=$WORK/$srv-run.log
  sysbench "$WL" "${SB[@]}" ${XOPTS[@]+"${XOPTS[@]}"} --threads="$THREADS" --events="$EVENTS" --time=0 run >"$log" 2>&1 ||
    { tail -20 "$log" >&2; echo "FAIL: $srv: sysbench run failed" >&2; exit 1; }
  callgrind_control -i off "$SERVER" >/dev/null
  read -r trx errs < <(sysbench_result "$log" transactions ignored_errors)
  [ "${errs:-0}" = 0 ] || [ "$errs" = n/a ] || { echo "FAIL: $srv: $errs ignored errors" >&2; exit 1; }
  check_drained "$PORT" 300
  stop_server
  # callgrind writes its counts when the program exits; the totals line holds the sum.
  ir=$(awk '/^totals:/ {print $2; exit}' "$out")
  [ -n "$ir" ] && [ "$trx" != n/a ] && [ "$trx" -gt 0 ] ||
    { echo "FAIL: $srv: no instruction total in $out or no transactions" >&2; exit 1; }
  per=$((ir / trx))
  [ -n "$first" ] || first=$per
  printf '| %s | %s | %s | %s | %s | %s |\n' "$srv" "$WL" "$THREADS" "$trx" "$per" \
    "$(awk -v a="$per" -v b="$first" 'BEGIN{printf "%.2f", a/b}')"
done
