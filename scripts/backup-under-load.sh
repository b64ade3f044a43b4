#!/usr/bin/env bash
# What `BACKUP TO` costs the clients: oltp_read_write at THREADS clients for TIME seconds with a
# backup started AT seconds in ("backup" run) and the same run without one ("control"), ROUNDS
# rounds in A B B A order. Per run: the backup's duration (the statement's wall time) and the
# mean TPS of the per-second intervals inside the window [AT, AT + max(duration, 5 s)), and of
# the whole run; per round the backup/control TPS ratio of the window. Data: TABLES x
# TABLE_SIZE rows, so the checkpoint flushes and links a real store.
#
#   ROUNDS=2 TIME=40 AT=15 THREADS=8 scripts/backup-under-load.sh
# Exits non-zero if a run fails, reports errors (deadlocks and lock wait timeouts, retried as
# sysbench does, are not failures), the backup fails or connections are left open.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
P=${PORT:-33815}; ROUNDS=${ROUNDS:-2}; TIME=${TIME:-40}; AT=${AT:-15}; THREADS=${THREADS:-8}
TABLES=${TABLES:-4}; TABLE_SIZE=${TABLE_SIZE:-50000}
need_bins "$SHOAL" "$BENCH"
temp_dir; W=$TEMP_DIR
start_shoal "$P" "$W" --thread-handling=pool-of-threads
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$P" --mysql-user=root --mysql-db=sbtest
      "--tables=$TABLES" "--table-size=$TABLE_SIZE")
sql "$P" 'CREATE DATABASE IF NOT EXISTS sbtest'
"$BENCH" prepare oltp_read_write "${CONN[@]}" >"$W/prepare.log" 2>&1 \
  || { tail -20 "$W/prepare.log" >&2; echo "FAIL: prepare" >&2; exit 1; }
window_tps() { # JSON FROM TO: mean TPS of the intervals ending in (FROM, TO]
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); lo, hi = float(sys.argv[2]), float(sys.argv[3])
xs = [i["tps"] for i in d["intervals"] if lo < i["t"] <= hi + 0.5]
print(f"{sum(xs) / len(xs):.1f}" if xs else "n/a")
PY
}
run() { # KIND(backup|control) ROUND: prints "duration window_tps run_tps"
  local log=$W/run-$1-$2.log secs=0 win=5
  bench_run "$W/results" "$log" oltp_read_write "${CONN[@]}" --threads="$THREADS" \
    --time="$TIME" --report-interval=1 &
  local pid=$!
  poll 60 grep -qs '^\[ *1s' "$log" || true  # the load is on
  local t0; t0=$(date +%s.%N)
  poll $((AT + 30)) awk -v t0="$t0" -v at="$AT" 'BEGIN { "date +%s.%N" | getline n; exit !(n - t0 >= at - 1) }'
  if [ "$1" = backup ]; then
    local b0 b1
    b0=$(date +%s.%N)
    sql "$P" "BACKUP TO '$W/backup-$2'" >"$W/backup-$2.out" 2>&1 \
      || { cat "$W/backup-$2.out" >&2; echo "FAIL: BACKUP TO" >&2; kill "$pid"; exit 1; }
    b1=$(date +%s.%N)
    secs=$(awk -v a="$b0" -v b="$b1" 'BEGIN { printf "%.2f", b - a }')
    win=$(awk -v s="$secs" 'BEGIN { printf "%.0f", (s > 5 ? s + 0.5 : 5) }')
    rm -rf "$W/backup-$2"
  fi
  wait "$pid" || { tail -20 "$log" >&2; echo "FAIL: $1 run" >&2; exit 1; }
  local json; json=$(bench_file "$log")
  local n e1 tps
  read -r n e1 tps < <(bench_json "$json" summary.events summary.errors summary.tps:.1f)
  # Deadlocks and lock wait timeouts are retried (sysbench's ignored errors); others fail.
  if [ "$n" -eq 0 ] || [ "$e1" -ne 0 ]; then
    echo "FAIL: $1 run: $n transactions, $e1 errors: $(bench_json "$json" summary.errors_by_code)" >&2
    exit 1
  fi
  check_drained "$P"
  echo "$secs $(window_tps "$json" "$AT" $((AT + win))) $tps"
}
printf '%5s %8s %10s %12s %9s\n' round kind backup_s window_tps run_tps
ratios=()
for r in $(seq "$ROUNDS"); do
  order=(control backup); [ $((r % 2)) -eq 0 ] && order=(backup control)
  declare -A res=()
  for k in "${order[@]}"; do
    res[$k]=$(run "$k" "$r")
    read -r s wt t <<<"${res[$k]}"
    printf '%5s %8s %10s %12s %9s\n' "$r" "$k" "$s" "$wt" "$t"
  done
  ratios+=("$(awk -v a="${res[backup]}" -v b="${res[control]}" 'BEGIN {
    split(a, x, " "); split(b, y, " "); printf "%.3f", x[2] / y[2] }')")
  unset res
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END {
  med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "== backup window TPS / control: min %.3f median %.3f (%d rounds)\n", v[1], med, NR }'
