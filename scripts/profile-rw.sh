#!/usr/bin/env bash
# Where shoal's server CPU goes under sysbench: perf samples the server (DWARF call graphs: the
# release build carries debuginfo, no frame pointers) while a workload runs, and
# scripts/profile-split.py puts every sample in one component by its stack.
#   cargo build --release -p shoal && WL=oltp_read_write THREADS=8 TIME=12 scripts/profile-rw.sh
# Prints the component table and the top leaf functions; leaves perf.data and the folded stacks
# in $WORK. HANDLING selects the thread handling (default pool-of-threads).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-profile}
WL=${WL:-oltp_read_write}; THREADS=${THREADS:-8}; TIME=${TIME:-12}
TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}; PORT=${PORT:-33600}
HANDLING=${HANDLING:-pool-of-threads}; FREQ=${FREQ:-499}
command -v perf >/dev/null || { echo "perf is not installed (apt-get install -y linux-perf)" >&2; exit 1; }
if port_in_use "$PORT"; then echo "port $PORT is already in use: set PORT" >&2; exit 1; fi
need_bins "$SHOAL"
rm -rf "$WORK"; mkdir -p "$WORK"
start_shoal "$PORT" "$WORK/srv" --thread-handling="$HANDLING" --max-connections=2000 \
  --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT
sql "$PORT" 'CREATE DATABASE sbtest'
SB=(--db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
    "--tables=$TABLES" "--table-size=$SIZE")
sysbench oltp_read_write "${SB[@]}" --threads=4 prepare >"$WORK/prepare.log" 2>&1
# Warm the cache and the prepared statements' plans first, then sample.
sysbench "$WL" "${SB[@]}" --threads="$THREADS" --time=3 run >"$WORK/warm.log" 2>&1
perf record -q -F "$FREQ" --call-graph dwarf,16384 -o "$WORK/perf.data" -p "$SERVER" 2>"$WORK/perf.err" &
PERF=$!
sysbench "$WL" "${SB[@]}" --threads="$THREADS" --time="$TIME" run >"$WORK/run.log" 2>&1 \
  || { tail -20 "$WORK/run.log" >&2; kill -INT "$PERF"; echo "FAIL: sysbench run failed" >&2; exit 1; }
kill -INT "$PERF"; wait "$PERF" || true
check_drained "$PORT"
stop_server
grep -E "transactions:|queries:" "$WORK/run.log"
perf script -i "$WORK/perf.data" -F comm,tid,period,ip,sym,dso 2>/dev/null >"$WORK/script.txt"
python3 "$ROOT/scripts/profile-split.py" "$WORK/script.txt"
