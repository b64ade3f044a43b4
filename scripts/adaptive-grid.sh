#!/usr/bin/env bash
# Issue 19 benchmark: the adaptive thread pool (thread_pool_adaptive=ON) against a grid of static
# settings (thread_pool_size x thread_pool_oversubscribe), same server, same data, same run.
# oltp_point_select and oltp_read_write from shoal-bench, in two regimes: cached (1G buffer pool)
# and I/O-bound (buffer pool 1/8 of the data, O_DIRECT). Every setting is applied with SET GLOBAL
# between points (thread_pool_size, _oversubscribe and _adaptive are all dynamic), so one server
# per regime serves the whole grid; ON starts each adaptive point from 1 + oversubscribe.
#
#   cargo build --release -p shoal -p shoal-bench && scripts/adaptive-grid.sh
#   SIZES="1 2 4 8" OVERSUBS="1 2 3 5 10" THREADS="8 32 128 512 2048" TIME=30 REPEATS=3 \
#     scripts/adaptive-grid.sh                                   (the issue's full grid: hours)
#
# Defaults run in about 10 minutes. Output: $WORK/results/<regime>/run-*.json (shoal-bench) and
# $WORK/summary.md: per (regime, workload, clients) the best static setting (by median TPS over
# the repeats), adaptive's min/median TPS and p99, and the ratios adaptive / best static against
# the issue's targets (TPS >= 0.95x, p99 <= 1.1x). Exits non-zero if a run or a check fails
# (a target missed is reported, not an error: set STRICT=1 to make it one). A point during which
# Threadpool_stall_seconds moved (a second with work queued while the server used under 10 % of
# its CPUs) fails the run; $WORK/stall-seconds.txt lists every point's count.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
WORK=${WORK:-/var/tmp/shoal-adaptive-grid}
TABLES=${TABLES:-4}; SIZE=${SIZE:-50000}
TIME=${TIME:-5}; WARMUP=${WARMUP:-4}; REPEATS=${REPEATS:-1}
SIZES=${SIZES:-"1 2"}
OVERSUBS=${OVERSUBS:-"1 3"}
THREADS=${THREADS:-"32 512"}
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_write"}
REGIMES=${REGIMES:-"cached iobound"}
# The adaptive side: groups and the oversubscribe it starts from.
ADAPTIVE_SIZE=${ADAPTIVE_SIZE:-$(nproc)}
ADAPTIVE_OVERSUB=${ADAPTIVE_OVERSUB:-2}
PORT=${PORT:-33790}
STRICT=${STRICT:-0}
IOBOUND_BP=${IOBOUND_BP:-$(( TABLES * SIZE * 240 / 8 / 1048576 < 6 ? 6 : TABLES * SIZE * 240 / 8 / 1048576 ))M}
SB_EXTRA=${SB_EXTRA---client-nice=-10}

need_bins "$SHOAL" "$BENCH"
ulimit -n "$(ulimit -Hn)" || true
rm -rf "$WORK"; mkdir -p "$WORK"

start_server() { # BUFFER_POOL
  start_shoal "$PORT" "$WORK" --thread-handling=pool-of-threads --max-connections=6000 \
    --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size="$1" \
    --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT
}
q() { sql "$PORT" "$1"; }

# apply CONFIG: "static-S-O" or "adaptive"
apply() {
  case $1 in
    adaptive)
      q "SET GLOBAL thread_pool_adaptive = OFF; SET GLOBAL thread_pool_size = $ADAPTIVE_SIZE;
           SET GLOBAL thread_pool_oversubscribe = $ADAPTIVE_OVERSUB; SET GLOBAL thread_pool_adaptive = ON" ;;
    static-*)
      local s o; s=$(echo "$1" | cut -d- -f2); o=$(echo "$1" | cut -d- -f3)
      q "SET GLOBAL thread_pool_adaptive = OFF; SET GLOBAL thread_pool_size = $s;
           SET GLOBAL thread_pool_oversubscribe = $o" ;;
  esac
}

CONFIGS=""
for s in $SIZES; do for o in $OVERSUBS; do CONFIGS="$CONFIGS static-$s-$o"; done; done
CONFIGS="$CONFIGS adaptive"
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
      "--tables=$TABLES" "--table-size=$SIZE")

start_server 1G
q 'CREATE DATABASE IF NOT EXISTS sbtest'
echo "$(date +%T) preparing $TABLES x $SIZE rows"
"$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$WORK/prepare.log" 2>&1 \
  || { tail -20 "$WORK/prepare.log" >&2; echo "prepare failed: $WORK/prepare.log" >&2; exit 1; }
stop_server
echo "data on disk: $(du -sm "$WORK/data" | cut -f1) MiB; I/O-bound buffer pool $IOBOUND_BP" | tee "$WORK/sizes.txt"
failed=0
for regime in $REGIMES; do
  bp=1G; [ "$regime" = iobound ] && bp=$IOBOUND_BP
  start_server "$bp"
  out="$WORK/results/$regime"; mkdir -p "$out"
  for wl in $WORKLOADS; do
    for n in $THREADS; do
      for rep in $(seq "$REPEATS"); do
        for cfg in $CONFIGS; do
          apply "$cfg"
          log="$WORK/$regime-$wl-$n-$cfg-$rep.log"
          echo "$(date +%T) $regime $wl $n $cfg #$rep"
          stall0=$(status_var "$PORT" Threadpool_stall_seconds); stall0=${stall0:-0}
          # shellcheck disable=SC2086 # SB_EXTRA: several options
          if ! bench_run "$out" "$log" "$wl" "${CONN[@]}" --threads="$n" --time="$TIME" \
              --warmup-time="$WARMUP" --quiet --server-pid="$SERVER" --connect-concurrency=128 \
              $SB_EXTRA --label="$cfg"; then
            echo "  run failed: see $log" >&2; failed=1
          fi
          # Issue 19: no second with work queued on idle CPUs (Threadpool_stall_seconds,
          # docs/OPERATIONS.md), warm-up included.
          stall1=$(status_var "$PORT" Threadpool_stall_seconds)
          stalls=$(( ${stall1:-0} - stall0 ))
          echo "$regime $wl $n $cfg $rep $stalls" >>"$WORK/stall-seconds.txt"
          if [ "$stalls" -gt 0 ]; then
            echo "  FAIL: $stalls stall second(s) (work queued, server CPU < 10 %)" >&2; failed=1
          fi
          if [ "$cfg" = adaptive ]; then
            q "SELECT GROUP_ID, CONCURRENCY_CAP FROM information_schema.THREAD_POOL_GROUPS" \
              >"$WORK/$regime-$wl-$n-caps-$rep.txt" 2>&1 || true
          fi
          check_drained "$PORT" 120
        done
      done
    done
  done
  q "SHOW GLOBAL STATUS LIKE 'Threadpool_adaptive%'" >"$WORK/$regime-adaptive-status.txt"
  stop_server
done

python3 - "$WORK" "$STRICT" <<'EOF' | tee "$WORK/summary.md"
import glob, json, os, statistics, sys
work, strict = sys.argv[1], sys.argv[2] == "1"
runs = {}
for path in glob.glob(os.path.join(work, "results", "*", "run-*.json")):
    regime = os.path.basename(os.path.dirname(path))
    d = json.load(open(path))
    if isinstance(d, dict) and "Run" in d: d = d["Run"]
    if isinstance(d, dict) and d.get("kind") == "run" and "result" in d: d = d["result"]
    s = d["summary"]
    runs.setdefault((regime, d["workload"], d["threads"]), {}).setdefault(d["label"], []).append(
        (s["tps"], s["latency_ms"]["p99"], s.get("errors", 0)))
print("| regime | workload | clients | best static (median TPS) | its p99 ms | adaptive TPS min / median | adaptive p99 ms | TPS ratio | p99 ratio | targets |")
print("|---|---|---:|---|---:|---:|---:|---:|---:|---|")
missed = errors = 0
for key in sorted(runs):
    by = runs[key]
    med = {c: statistics.median(t for t, _, _ in v) for c, v in by.items()}
    p99 = {c: statistics.median(p for _, p, _ in v) for c, v in by.items()}
    errors += sum(e for v in by.values() for _, _, e in v)
    statics = [c for c in by if c != "adaptive"]
    if not statics or "adaptive" not in by: continue
    best = max(statics, key=lambda c: med[c])
    a = by["adaptive"]
    rt, rp = med["adaptive"] / med[best], p99["adaptive"] / max(p99[best], 1e-9)
    ok = rt >= 0.95 and rp <= 1.1
    missed += not ok
    print(f"| {key[0]} | {key[1]} | {key[2]} | {best} ({med[best]:,.0f}) | {p99[best]:.1f} | "
          f"{min(t for t, _, _ in a):,.0f} / {med['adaptive']:,.0f} | {p99['adaptive']:.1f} | "
          f"{rt:.2f} | {rp:.2f} | {'hold' if ok else 'MISSED'} |")
print(f"\n{missed} point(s) miss the targets (TPS >= 0.95x and p99 <= 1.1x the best static); {errors} client errors.")
sys.exit(1 if errors or (strict and missed) else 0)
EOF
[ "$failed" = 0 ] || { echo "some runs failed" >&2; exit 1; }
