#!/usr/bin/env bash
# Should work stealing be on by default? pool-of-threads with thread_pool_size=2 (so that groups
# exist to steal between), thread_pool_work_stealing OFF and ON alternating A B A B ... at each
# (workload, clients) point, on ONE server and ONE datadir (the variable is dynamic: SET GLOBAL
# between runs), so the data, the page cache and the LSM state are shared by both sides.
# Prints per point the min / median TPS and median p99 of each side and the median ON/OFF ratio.
#
#   cargo build --release -p shoal -p shoal-bench
#   ROUNDS=2 TIME=10 THREADS="8 64 512" scripts/steal-ab.sh
#   EXTRA=--innodb-buffer-pool-size=11M ...      (I/O-bound instead of cached)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=${WORK:-/var/tmp/shoal-steal-ab}; P=${PORT:-33821}
ROUNDS=${ROUNDS:-2}; TIME=${TIME:-10}; WARMUP=${WARMUP:-2}
THREADS=${THREADS:-"8 64 512"}
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_write"}
SIZE=${SIZE:-2}; EXTRA=${EXTRA:-}
need_bins "$SHOAL" "$BENCH"
ulimit -n "$(ulimit -Hn)" || true
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$P" --mysql-user=root --mysql-db=sbtest --tables=8
      --table-size=50000)
mkdir -p "$W"
# shellcheck disable=SC2086 # EXTRA: several options
start_shoal "$P" "$W" --thread-handling=pool-of-threads --thread-pool-size="$SIZE" \
  --max-connections=6000 --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size=1G \
  --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT $EXTRA
if [ ! -f "$W/prepared" ]; then
  sql "$P" 'CREATE DATABASE IF NOT EXISTS sbtest'
  "$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$W/prepare.log" 2>&1
  touch "$W/prepared"
fi
: >"$W/runs.txt"
for wl in $WORKLOADS; do
  for n in $THREADS; do
    for r in $(seq "$ROUNDS"); do
      for steal in OFF ON; do
        sql "$P" "SET GLOBAL thread_pool_work_stealing = $steal"
        bench_run "$W/results" "$W/last.txt" "$wl" "${CONN[@]}" --threads="$n" --time="$TIME" \
          --warmup-time="$WARMUP" --client-nice=-10 --connect-concurrency=128 --quiet \
          --label="steal-$steal" \
          || { cat "$W/last.txt" >&2; echo "FAIL: $wl $n $steal: shoal-bench run failed" >&2; exit 1; }
        read -r tps p99 < <(bench_json "$BENCH_JSON" summary.tps:.2f summary.latency_ms.p99:.2f)
        steals=$(status_var "$P" Threadpool_steals)
        echo "$(date +%T) $wl clients=$n round=$r steal=$steal tps=$tps p99=${p99}ms Threadpool_steals=$steals"
        echo "$wl $n $r $steal $tps $p99" >>"$W/runs.txt"
        check_drained "$P"
      done
    done
  done
done
stop_server
python3 - "$W/runs.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
pts = {}
for wl, n, r, s, tps, p99 in rows:
    pts.setdefault((wl, int(n)), {}).setdefault(s, {})[int(r)] = (float(tps), float(p99))
print("| workload | clients | OFF TPS min / median | ON TPS min / median | ON/OFF median of rounds | p99 ms OFF / ON (median) |")
print("|---|---:|---:|---:|---:|---:|")
for (wl, n), by in sorted(pts.items()):
    off, on = by.get("OFF", {}), by.get("ON", {})
    t = lambda d: [v[0] for v in d.values()]
    p = lambda d: statistics.median(v[1] for v in d.values())
    ratios = [on[r][0] / off[r][0] for r in off if r in on and off[r][0] > 0]
    print(f"| {wl} | {n} | {min(t(off)):,.0f} / {statistics.median(t(off)):,.0f} | "
          f"{min(t(on)):,.0f} / {statistics.median(t(on)):,.0f} | "
          f"{statistics.median(ratios):.3f} | {p(off):.1f} / {p(on):.1f} |")
PY
