#!/usr/bin/env bash
# Load-generator cost: shoal-bench vs sysbench against the same private MariaDB, in one run.
#
#   crates/bench/scripts/compare-sysbench.sh            (defaults below; ~10 minutes)
#   LEVELS="64 1024" MAX_LEVELS="2048 4096" TIME=30 crates/bench/scripts/compare-sysbench.sh
#
# For each concurrency in LEVELS both tools run oltp_read_write for TIME seconds; the tool's own
# CPU (user+sys from /usr/bin/time, whole process life: connect, prepare, run, teardown) is
# divided by the transactions it reports. For each concurrency in MAX_LEVELS both tools try a
# shorter run; a level counts as driven when the tool exits 0 with every client connected and
# statements executed (at thousands of connections on 2 cores a 20-statement transaction can take
# longer than the run, so completed transactions can be ~0 even though the load is applied).
# Results: $WORK/summary.md (markdown table) plus every tool's raw output in $WORK/logs.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BENCH=${BENCH:-${CARGO_TARGET_DIR:-$ROOT/target}/release/shoal-bench}
PORT=${PORT:-33400}
WORK=${WORK:-/var/tmp/shoal-bench-compare}
TABLES=${TABLES:-8}
SIZE=${SIZE:-100000}
TIME=${TIME:-30}
MAX_TIME=${MAX_TIME:-20}
LEVELS=${LEVELS:-"64 1024"}
MAX_LEVELS=${MAX_LEVELS:-"2048 4096"}
THREAD_HANDLING=${THREAD_HANDLING:-pool-of-threads}
# Extra shoal-bench options. The server shares this machine: a thread-per-connection client gets
# one CFS share per connection, shoal-bench's single worker thread one share in all, so it is
# given a higher priority (needs root); set SB_EXTRA= to measure without it.
SB_EXTRA=${SB_EXTRA---client-nice=-10}

[ -x "$BENCH" ] || { echo "build first: cargo build --release -p shoal-bench (BENCH=$BENCH)"; exit 1; }
command -v sysbench >/dev/null || { echo "sysbench not installed"; exit 1; }
ulimit -n "$(ulimit -Hn)" || true

rm -rf "$WORK"
mkdir -p "$WORK/data" "$WORK/logs" "$WORK/results"
MYSQLD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
"$MYSQLD" --no-defaults --datadir="$WORK/data" --socket="$WORK/sock" --pid-file="$WORK/pid" \
  --log-error="$WORK/err.log" --port="$PORT" --bind-address=127.0.0.1 --user=root \
  --skip-grant-tables --skip-log-bin --performance-schema=OFF \
  --max-connections=6000 --back-log=4096 --max-prepared-stmt-count=1048576 \
  --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=2 \
  --thread-handling="$THREAD_HANDLING" --thread-pool-size=2 >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.2
done
mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'CREATE DATABASE sbtest'

CONN=(--mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=root --mysql-db=sbtest
      --tables="$TABLES" --table-size="$SIZE")
echo "preparing $TABLES x $SIZE rows..."
"$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=2 --quiet

# measure TOOL THREADS SECONDS -> prints "rc txns cpu_s connect_note"
measure() {
  local tool=$1 n=$2 t=$3 log="$WORK/logs/$1-$2.log"
  local rc=0
  if [ "$tool" = sysbench ]; then
    /usr/bin/time -f 'CPUSEC %U %S' -o "$log.time" \
      sysbench oltp_read_write --db-driver=mysql "${CONN[@]}" --threads="$n" --time="$t" run \
      >"$log" 2>&1 || rc=$?
  else
    /usr/bin/time -f 'CPUSEC %U %S' -o "$log.time" \
      "$BENCH" run oltp_read_write "${CONN[@]}" --threads="$n" --time="$t" --quiet \
      --client-threads=1 $SB_EXTRA --output="$WORK/results" --label="$n" >"$log" 2>&1 || rc=$?
  fi
  local txns cpu queries
  txns=$(awk '/transactions:/{print $2; exit}' "$log")
  queries=$(awk '/ queries:/{print $2; exit}' "$log")
  cpu=$(awk '/CPUSEC/{printf "%.2f", $2+$3}' "$log.time" 2>/dev/null || echo 0)
  echo "$rc ${txns:-0} ${cpu:-0} ${queries:-0}"
}

{
  echo "## Load generator cost: shoal-bench vs sysbench (oltp_read_write, $TABLES x $SIZE rows, MariaDB $THREAD_HANDLING, ${TIME}s runs, shoal-bench options: ${SB_EXTRA:-none})"
  echo
  echo "| connections | tool | exit | transactions | TPS | queries | tool CPU s | CPU s per 1000 trx |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|"
} >"$WORK/summary.md"

for n in $LEVELS; do
  for tool in sysbench shoal-bench; do
    read -r rc txns cpu queries < <(measure "$tool" "$n" "$TIME")
    per=$(awk -v c="$cpu" -v x="$txns" 'BEGIN{ if (x>0) printf "%.3f", c*1000/x; else print "n/a"}')
    tps=$(awk -v x="$txns" -v t="$TIME" 'BEGIN{printf "%.1f", x/t}')
    echo "| $n | $tool | $rc | $txns | $tps | $queries | $cpu | $per |" | tee -a "$WORK/summary.md"
  done
done

{
  echo
  echo "## Highest connection count driven (${MAX_TIME}s runs)"
  echo
  echo "| connections | tool | exit | transactions | queries | tool CPU s | note |"
  echo "|---:|---|---:|---:|---:|---:|---|"
} >>"$WORK/summary.md"
for n in $MAX_LEVELS; do
  for tool in sysbench shoal-bench; do
    read -r rc txns cpu queries < <(measure "$tool" "$n" "$MAX_TIME")
    note=$(grep -m1 -E 'FATAL|connect \+ prepare time' "$WORK/logs/$tool-$n.log" | sed 's/  */ /g' | cut -c1-120 || true)
    ok=$([ "$rc" = 0 ] && [ "${queries:-0}" -gt 0 ] && echo driven || echo FAILED)
    echo "| $n | $tool | $rc | $txns | $queries | $cpu | $ok: ${note//|/ } |" | tee -a "$WORK/summary.md"
  done
done
echo
cat "$WORK/summary.md"
