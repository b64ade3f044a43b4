#!/usr/bin/env bash
# Pool configurations compared at one load point, on one server and one data set: each round
# runs every configuration in CFGS once, in turn, switched with SET GLOBAL between the runs, so
# the machine's drift falls on all of them alike. Per run: TPS, p50 / p95 / p99, commits per
# group-commit fsync (Com_commit / Shoal_store_commit_groups) and Threadpool_balanced; THREAD_POOL_GROUPS
# and Threadpool_cpu_affinity_engaged are sampled every half second into
# $WORK/groups-<cfg>-<round>.txt, the adaptive history after each adaptive run into
# $WORK/history-<cfg>-<round>.txt. Then, per configuration, the median TPS and p99 and the
# median of the per-round ratios to the first configuration.
#
# A configuration is `static-S-O` (thread_pool_size S, oversubscribe O, adaptive OFF),
# `adaptive` (size 2, adaptive ON) or `adaptive-S` (size S), any of them with `-noaff` appended
# for thread_pool_cpu_affinity OFF.
#
#   CFGS="static-1-3 static-2-1 adaptive" ROUNDS=4 scripts/pool-configs.sh
#   WL=oltp_point_select N=512 CFGS="static-2-1 adaptive adaptive-noaff" scripts/pool-configs.sh
#
# Defaults: issue 19's cached regime (1 GiB buffer pool, 4 x 50,000 rows, flush at every commit,
# O_DIRECT), oltp_read_write at 512 clients, 12 s runs after 4 s of warm-up, shoal-bench with two
# client threads at nice -10. SERVER_EXTRA adds server options, BENCH_EXTRA shoal-bench's (issue
# 19's I/O-bound regime: BP=6M BENCH_EXTRA=--rand-type=uniform). Exits non-zero if a run fails
# or leaves connections open.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-pool-configs}
WL=${WL:-oltp_read_write}; N=${N:-512}; TIME=${TIME:-12}; WARMUP=${WARMUP:-4}
BP=${BP:-1G}; PORT=${PORT:-33791}; ROUNDS=${ROUNDS:-3}
CFGS=${CFGS:-"static-1-3 static-2-1 adaptive"}
need_bins "$SHOAL" "$BENCH"
if port_in_use "$PORT"; then echo "port $PORT is already in use: set PORT" >&2; exit 1; fi
ulimit -n "$(ulimit -Hn)"
rm -rf "$WORK"; mkdir -p "$WORK"
# shellcheck disable=SC2086 # SERVER_EXTRA: several options
start_shoal "$PORT" "$WORK" --thread-handling=pool-of-threads --max-connections=6000 \
  --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size="$BP" \
  --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT ${SERVER_EXTRA:-}
q() { sql "$PORT" "$1"; }
q 'CREATE DATABASE IF NOT EXISTS sbtest'
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
  --tables=4 --table-size=50000)
"$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$WORK/prepare.log" 2>&1
failed=0
: >"$WORK/runs.txt"
for r in $(seq "$ROUNDS"); do
  for cfg in $CFGS; do
    case $cfg in
      *-noaff) q "SET GLOBAL thread_pool_cpu_affinity = OFF" ;;
      *) q "SET GLOBAL thread_pool_cpu_affinity = ON" ;;
    esac
    base=${cfg%-noaff}
    case $base in
      adaptive) size=2 ;;
      adaptive-*) size=${base#adaptive-} ;;
      static-*-*) ;;
      *) echo "unknown configuration $cfg" >&2; exit 2 ;;
    esac
    case $base in
      adaptive*) q "SET GLOBAL thread_pool_adaptive = OFF; SET GLOBAL thread_pool_size = $size;
                    SET GLOBAL thread_pool_oversubscribe = 3; SET GLOBAL thread_pool_adaptive = ON" ;;
      static-*)
        IFS=- read -r _ size over <<<"$base"
        q "SET GLOBAL thread_pool_adaptive = OFF; SET GLOBAL thread_pool_size = $size;
           SET GLOBAL thread_pool_oversubscribe = $over" ;;
    esac
    (
      for _ in $(seq $(((TIME + WARMUP + 2) * 2))); do
        q "SELECT NOW(6), GROUP_ID, CONNECTIONS, THREADS, ACTIVE_THREADS, QUEUE_LENGTH,
             CONCURRENCY_CAP FROM information_schema.THREAD_POOL_GROUPS WHERE CONNECTIONS > 0" \
          2>/dev/null || true
        q "SHOW GLOBAL STATUS LIKE 'Threadpool_cpu_affinity_engaged'" 2>/dev/null || true
        sleep 0.5
      done
    ) >"$WORK/groups-$cfg-$r.txt" &
    sampler=$!
    # shellcheck disable=SC2086 # BENCH_EXTRA: several options
    if ! bench_run "$WORK/results" "$WORK/run-$cfg-$r.log" "$WL" "${CONN[@]}" --threads="$N" \
        --time="$TIME" --warmup-time="$WARMUP" --quiet --server-pid="$SERVER" \
        --connect-concurrency=128 --client-nice=-10 --client-threads=2 --label="$cfg-$r" \
        ${BENCH_EXTRA:-}; then
      echo "run failed: $cfg round $r (see $WORK/run-$cfg-$r.log)" >&2
      failed=1
    fi
    case $base in
      adaptive*) q "SELECT * FROM information_schema.THREAD_POOL_ADAPTIVE_HISTORY" \
                   >"$WORK/history-$cfg-$r.txt" ;;
    esac
    wait "$sampler" || true
    if [ -n "$BENCH_JSON" ] && [ -f "$BENCH_JSON" ]; then
      python3 - "$BENCH_JSON" "$cfg" "$r" <<'PY' | tee -a "$WORK/runs.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("Run", "result"):
    if isinstance(d, dict) and k in d:
        d = d[k]
s = d["summary"]; l = s["latency_ms"]; sd = d.get("status_delta", {})
commits, groups = sd.get("Com_commit"), sd.get("Shoal_store_commit_groups")
per = f"{commits / groups:.2f}" if commits and groups else "-"
print(f'{sys.argv[2]} {sys.argv[3]} {s["tps"]:.1f} {l.get("p50", 0):.1f} {l.get("p95", 0):.1f} '
      f'{l["p99"]:.1f} {per} {sd.get("Threadpool_balanced", "-")}')
PY
    fi
    check_drained "$PORT" 120 || failed=1
  done
done
stop_server
echo
echo "cfg runs: tps p50 p95 p99 commits/fsync balanced, in $WORK/runs.txt"
python3 - "$WORK/runs.txt" $CFGS <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1]) if l.strip()]
cfgs = sys.argv[2:]
by = {(c, r): (float(t), float(p99)) for c, r, t, _, _, p99, *_ in runs}
first = cfgs[0]
print(f"{'configuration':16} {'TPS median':>10} {'p99 median':>10} {'TPS / ' + first:>18} {'p99 / ' + first:>18}")
for c in cfgs:
    mine = [(r, v) for (cc, r), v in by.items() if cc == c]
    if not mine:
        continue
    t = statistics.median(v[0] for _, v in mine)
    p = statistics.median(v[1] for _, v in mine)
    ratios = [(v[0] / by[(first, r)][0], v[1] / by[(first, r)][1]) for r, v in mine if (first, r) in by]
    rt = statistics.median(x for x, _ in ratios) if ratios else float("nan")
    rp = statistics.median(y for _, y in ratios) if ratios else float("nan")
    print(f"{c:16} {t:10.1f} {p:10.1f} {rt:18.2f} {rp:18.2f}")
PY
exit "$failed"
