#!/usr/bin/env bash
# Cost of TLS: the same load with and without TLS against one shoal server (pool-of-threads),
# for each workload in WLS and client count in THREADS, ROUNDS rounds in A B B A order (plain,
# TLS, TLS, plain, ...) so a drift of the machine hits both sides alike. Per run: TPS, p95 and
# the server's CPU per transaction (user + system, microseconds, /proc/PID/stat, connecting
# included); then per
# point the TLS/plain ratios, min and median over the rounds.
#
#   ROUNDS=2 TIME=20 THREADS="8 512" WLS="oltp_point_select oltp_read_write" scripts/tls-ab.sh
# Exits non-zero if a run fails, reports errors (deadlocks and lock wait timeouts, retried as
# sysbench does, are not failures) or leaves connections open.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
P=${PORT:-33814}; ROUNDS=${ROUNDS:-2}; TIME=${TIME:-20}; THREADS=${THREADS:-"8 512"}
WLS=${WLS:-"oltp_point_select oltp_read_write"}
need_bins "$SHOAL" "$BENCH"
temp_dir; W=$TEMP_DIR
start_shoal "$P" "$W" --thread-handling=pool-of-threads --max-connections=2000
CA=$W/data/ca.pem
[ -e "$CA" ] || { echo "FAIL: the server made no CA ($CA)" >&2; exit 1; }
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$P" --mysql-user=root --mysql-db=sbtest --tables=4
      --table-size=10000)
sql "$P" 'CREATE DATABASE IF NOT EXISTS sbtest'
"$BENCH" prepare oltp_read_write "${CONN[@]}" >"$W/prepare.log" 2>&1 \
  || { tail -20 "$W/prepare.log" >&2; echo "FAIL: prepare" >&2; exit 1; }
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
run() { # WL THREADS TLS(on|off): prints "tps p95 cpu_us_per_tx"
  local tls=()
  [ "$3" = on ] && tls=(--mysql-ssl=on "--mysql-ssl-ca=$CA")
  local t0 t1
  # Warm-up (connections, cache) outside the measured window, whose CPU is counted.
  "$BENCH" run "$1" "${CONN[@]}" --threads="$2" --time=3 "${tls[@]}" >"$W/warm.log" 2>&1 \
    || { tail -20 "$W/warm.log" >&2; echo "FAIL: warm-up $1 $2 tls=$3" >&2; exit 1; }
  check_drained "$P"
  t0=$(ticks)
  bench_run "$W/results" "$W/run.log" "$1" "${CONN[@]}" --threads="$2" --time="$TIME" \
    "${tls[@]}" \
    || { tail -20 "$W/run.log" >&2; echo "FAIL: $1 $2 tls=$3" >&2; exit 1; }
  t1=$(ticks)
  local n e1 e2 tps p95
  read -r n e1 e2 tps p95 < <(bench_json "$BENCH_JSON" summary.events summary.errors \
    summary.ignored_errors summary.tps:.1f summary.latency_ms.p95:.2f)
  # Deadlocks and lock wait timeouts are retried (sysbench's ignored errors); others fail.
  if [ "$n" -eq 0 ] || [ "$e1" -ne 0 ]; then
    echo "FAIL: $1 $2 tls=$3: $n transactions, $e1 errors ($e2 retried)" >&2; exit 1
  fi
  check_drained "$P"
  awk -v tps="$tps" -v p95="$p95" -v d=$((t1 - t0)) -v hz="$hz" -v n="$n" \
    'BEGIN { printf "%s %s %.1f\n", tps, p95, d * 1e6 / hz / n }'
}
printf '%-18s %7s %5s %5s %10s %9s %12s\n' workload threads round tls tps p95_ms cpu_us_per_tx
for wl in $WLS; do
  for th in $THREADS; do
    ratios=()
    for r in $(seq "$ROUNDS"); do
      order=(off on); [ $((r % 2)) -eq 0 ] && order=(on off)
      declare -A res=()
      for tls in "${order[@]}"; do
        res[$tls]=$(run "$wl" "$th" "$tls")
        read -r tps p95 cpu <<<"${res[$tls]}"
        printf '%-18s %7s %5s %5s %10s %9s %12s\n' "$wl" "$th" "$r" "$tls" "$tps" "$p95" "$cpu"
      done
      ratios+=("$(awk -v a="${res[on]}" -v b="${res[off]}" 'BEGIN {
        split(a, x, " "); split(b, y, " "); printf "%.3f %.3f", x[1] / y[1], x[3] / y[3] }')")
      unset res
    done
    printf '%s\n' "${ratios[@]}" | awk -v wl="$wl" -v th="$th" '
      { t[NR] = $1; c[NR] = $2 }
      END {
        n = asort(t); asort(c)
        med = (n % 2) ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2
        cmed = (n % 2) ? c[(n + 1) / 2] : (c[n / 2] + c[n / 2 + 1]) / 2
        printf "== %s %s clients: TLS/plain TPS min %.3f median %.3f; CPU/tx min %.3f median %.3f (%d rounds)\n",
          wl, th, t[1], med, c[1], cmed, n }'
  done
done
