#!/usr/bin/env bash
# Issue 19 benchmark: the adaptive thread pool (thread_pool_adaptive=ON) against a grid of static
# settings (thread_pool_size x thread_pool_oversubscribe), same server, same data, same run.
# oltp_point_select and oltp_read_write from shoal-bench, in two regimes: cached (1G buffer pool)
# and I/O-bound (buffer pool 1/8 of the data, uniform access, O_DIRECT). Every setting is applied with SET GLOBAL
# between points (thread_pool_size, _oversubscribe and _adaptive are all dynamic), so one server
# per regime serves the whole grid; ON starts each adaptive point from 1 + oversubscribe.
#
#   cargo build --release -p shoal -p shoal-bench && scripts/adaptive-grid.sh
#   SIZES="1 2 4 8" OVERSUBS="1 2 3 5 10" THREADS="8 32 128 512 2048" TIME=30 REPEATS=3 \
#     scripts/adaptive-grid.sh                                   (the issue's full grid: hours)
#
# Defaults run in about 20 minutes (the retention stage, PEAK_ROUNDS below, adds about 4).
# Output: $WORK/results/<regime>/run-*.json (shoal-bench) and $WORK/summary.md: per (regime, workload, clients) the best static setting (by median TPS over
# the repeats), adaptive's min/median TPS and p99, and the ratios adaptive / best static. The
# best of several noisy medians is biased upwards, so the grid only picks the contender: a
# confirmation stage (CONFIRM rounds, default 2) measures that static again alternating with
# adaptive, and the median of those rounds' paired ratios is judged against the issue's
# targets (TPS >= 0.95x, p99 <= 1.1x). Exits non-zero if a run or a check fails
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
# THREADS_CACHED / THREADS_IOBOUND: client counts for one regime only (default THREADS), so
# one run covers issue 19's points (cached 8 32 512, I/O-bound 32 512 2048).
threads_for() { local v="THREADS_${1^^}"; echo "${!v:-$THREADS}"; }
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_write"}
REGIMES=${REGIMES:-"cached iobound"}
# The adaptive side: groups and the oversubscribe it starts from (the server's defaults). With
# thread_pool_adaptive_groups ON (the default) the size is the base the pool scales its number
# of groups from (crates/pool/src/regroup.rs); each adaptive run starts from it again.
ADAPTIVE_SIZE=${ADAPTIVE_SIZE:-$(nproc)}
ADAPTIVE_OVERSUB=${ADAPTIVE_OVERSUB:-3}
PORT=${PORT:-33790}
STRICT=${STRICT:-0}
# Rounds of the confirmation stage (best static of the grid against adaptive, alternating).
CONFIRM=${CONFIRM:-2}
# Rounds of the retention stage (issue 19: I/O-bound at the most clients, TPS >= 0.9x adaptive's
# own peak): adaptive at its peak's client count and at the most clients, back to back in
# alternating order; the median of the rounds' paired ratios is the verdict. Medians of points
# measured minutes apart carry the machine's drift (its speed moves by up to a quarter within
# a run here); a pair taken within one minute carries much less of it.
PEAK_ROUNDS=${PEAK_ROUNDS:-$CONFIRM}
# CONTENDERS=FILE skips the grid and confirms the static settings listed in FILE (lines
# "regime workload clients static-S-O", as a previous run's confirm-contenders.txt); issue 19's
# points are docs/perf-log/issue-19-contenders.txt: the twelve of sessions 35-53 (session 35's
# grid; four points from the issue's whole grid, session 52) and the eight client counts session
# 54 added. Only the points of THREADS_* are confirmed.
CONTENDERS=${CONTENDERS:-}
if [ -n "$CONTENDERS" ]; then
  [ -r "$CONTENDERS" ] || { echo "CONTENDERS=$CONTENDERS is not readable" >&2; exit 1; }
  cp "$CONTENDERS" /tmp/adaptive-grid-contenders.$$; CONTENDERS=/tmp/adaptive-grid-contenders.$$
  REPEATS=0
fi
IOBOUND_BP=${IOBOUND_BP:-$(( TABLES * SIZE * 240 / 8 / 1048576 < 6 ? 6 : TABLES * SIZE * 240 / 8 / 1048576 ))M}
# The load generator runs one thread per CPU by default: real clients (application threads,
# sysbench) send from every CPU, and CPU affinity engages only then. With shoal-bench's single
# default thread one group beat two at 32 clients (point select 0.66x for adaptive, read-write
# 0.87x); with two threads 0.94x / 0.95x; under sysbench two groups beat one by 15-40 %
# (docs/perf-log/2026-12-05-session-32-rows-undecoded.md).
SB_EXTRA=${SB_EXTRA---client-nice=-10 --client-threads=$(nproc)}
# SERVER_EXTRA: more server options for every point, static and adaptive alike (e.g.
# --thread-pool-work-stealing=ON).
# The I/O-bound regime reads rows uniformly (issue 19: "uniform access"): with shoal-bench's
# default `special` distribution three reads in four go to 1 % of the rows, which stay cached,
# and only about one point select in seven missed the buffer pool (session 35). IOBOUND_RAND
# picks another --rand-type; the cached regime keeps the default.
IOBOUND_RAND=${IOBOUND_RAND:-uniform}

need_bins "$SHOAL" "$BENCH"
ulimit -n "$(ulimit -Hn)" || true
rm -rf "$WORK"; mkdir -p "$WORK"

start_server() { # BUFFER_POOL
  # shellcheck disable=SC2086 # SERVER_EXTRA: several options
  start_shoal "$PORT" "$WORK" --thread-handling=pool-of-threads --max-connections=6000 \
    --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size="$1" \
    --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT ${SERVER_EXTRA:-}
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
# point OUTDIR REGIME WORKLOAD CLIENTS CONFIG REP: one measured run of CONFIG, with the stall and
# drain checks every run gets.
point() {
  local out=$1 regime=$2 wl=$3 n=$4 cfg=$5 rep=$6
  apply "$cfg"
  local log="$WORK/$regime-$wl-$n-$cfg-$rep.log"
  echo "$(date +%T) $regime $wl $n $cfg #$rep"
  local stall0 stall1 stalls rand=()
  [ "$regime" = iobound ] && rand=("--rand-type=$IOBOUND_RAND")
  stall0=$(status_var "$PORT" Threadpool_stall_seconds); stall0=${stall0:-0}
  # Each group's connections once a second: CPU affinity steers local connections to their
  # client's CPU's group, and an event-loop client's threads can herd them into one group
  # (docs/perf-log/2026-12-06-session-43-no-herding.md).
  local groups="$WORK/$regime-$wl-$n-$cfg-$rep-groups.txt"
  ( while :; do
      q "SELECT GROUP_ID, CONNECTIONS, QUEUE_LENGTH FROM information_schema.THREAD_POOL_GROUPS
         WHERE CONNECTIONS > 0" 2>/dev/null | tr '\n' ' ' || true
      echo; sleep 1
    done ) >"$groups" &
  local sampler=$!
  # shellcheck disable=SC2086 # SB_EXTRA: several options
  if ! bench_run "$out" "$log" "$wl" "${CONN[@]}" --threads="$n" --time="$TIME" \
      --warmup-time="$WARMUP" --quiet --server-pid="$SERVER" --connect-concurrency=128 \
      "${rand[@]}" $SB_EXTRA --label="$cfg"; then
    echo "  run failed: see $log" >&2; failed=1
  fi
  kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
  # The largest share of the connections one group held in any sample of the run.
  awk '{ t = 0; m = 0; for (i = 1; i + 2 <= NF; i += 3) { t += $(i + 1); if ($(i + 1) > m) m = $(i + 1) }
         if (t >= 8 && m / t > worst) worst = m / t }
       END { printf "  largest group share of the connections: %.2f\n", worst }' "$groups"
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
    # the controller's decisions during the point (its last ones per group)
    q "SELECT * FROM information_schema.THREAD_POOL_ADAPTIVE_HISTORY" \
      >"$WORK/$regime-$wl-$n-history-$rep.txt" 2>&1 || true
  fi
  check_drained "$PORT" 120
}

# best_static RESULTS WORKLOAD CLIENTS: the static setting with the highest median TPS.
best_static() {
  python3 - "$@" <<'PY'
import glob, json, os, statistics, sys
res, wl, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
by = {}
for path in glob.glob(os.path.join(res, "run-*.json")):
    d = json.load(open(path))
    if isinstance(d, dict) and "Run" in d: d = d["Run"]
    if isinstance(d, dict) and d.get("kind") == "run" and "result" in d: d = d["result"]
    if d["workload"] == wl and d["threads"] == n and d["label"].startswith("static-"):
        by.setdefault(d["label"], []).append(d["summary"]["tps"])
print(max(by, key=lambda c: statistics.median(by[c])) if by else "")
PY
}

# peak_clients RESULTS REGIME WORKLOAD MOST: the client count other than MOST with adaptive's
# highest median TPS over the grid and confirmation runs of REGIME so far. MOST is left out
# so that a noisy median never skips the pairs: a median paired ratio above 1 says the most
# clients are the peak.
peak_clients() {
  python3 - "$@" <<'PY'
import glob, json, os, statistics, sys
res, regime, wl, most = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
by = {}
for d in (regime, regime + "-confirm"):
    for path in glob.glob(os.path.join(res, d, "run-*.json")):
        r = json.load(open(path))
        if isinstance(r, dict) and "Run" in r: r = r["Run"]
        if isinstance(r, dict) and r.get("kind") == "run" and "result" in r: r = r["result"]
        if r["workload"] == wl and r["label"] == "adaptive" and r["threads"] != most:
            by.setdefault(r["threads"], []).append(r["summary"]["tps"])
print(max(by, key=lambda n: statistics.median(by[n])) if by else "")
PY
}

for regime in $REGIMES; do
  bp=1G; [ "$regime" = iobound ] && bp=$IOBOUND_BP
  start_server "$bp"
  out="$WORK/results/$regime"; mkdir -p "$out"
  for wl in $WORKLOADS; do
    for n in $(threads_for "$regime"); do
      for rep in $(seq "$REPEATS"); do
        for cfg in $CONFIGS; do
          point "$out" "$regime" "$wl" "$n" "$cfg" "$rep"
        done
      done
    done
  done
  # Confirmation: the best static of the grid is the best of several noisy medians, so it is
  # biased upwards (on this machine one setting's TPS moves by 10-20 % between runs). Measure
  # it again, CONFIRM rounds alternating with adaptive (A B B A ...), into a directory of its
  # own: the paired ratios of these runs are the verdict, the grid only chose the contender.
  if [ "$CONFIRM" -gt 0 ]; then
    cout="$WORK/results/$regime-confirm"; mkdir -p "$cout"
    for wl in $WORKLOADS; do
      for n in $(threads_for "$regime"); do
        if [ -n "$CONTENDERS" ]; then
          best=$(awk -v r="$regime" -v w="$wl" -v n="$n" '$1 == r && $2 == w && $3 == n {print $4}' "$CONTENDERS")
        else
          best=$(best_static "$out" "$wl" "$n")
        fi
        [ -n "$best" ] || { echo "no static result for $regime $wl $n" >&2; failed=1; continue; }
        echo "$regime $wl $n $best" >>"$WORK/confirm-contenders.txt"
        for r in $(seq "$CONFIRM"); do
          if [ $((r % 2)) = 1 ]; then order="$best adaptive"; else order="adaptive $best"; fi
          for cfg in $order; do point "$cout" "$regime" "$wl" "$n" "$cfg" "c$r"; done
        done
      done
    done
  fi
  if [ "$PEAK_ROUNDS" -gt 0 ]; then
    pout="$WORK/results/$regime-peak"; mkdir -p "$pout"
    most=$(threads_for "$regime" | tr ' ' '\n' | sort -n | tail -1)
    for wl in $WORKLOADS; do
      peak=$(peak_clients "$WORK/results" "$regime" "$wl" "$most")
      [ -n "$peak" ] || { echo "$regime $wl: one client count, no retention pair"; continue; }
      echo "$regime $wl $peak $most" >>"$WORK/peak-pairs.txt"
      for r in $(seq "$PEAK_ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then order="$peak $most"; else order="$most $peak"; fi
        for n in $order; do point "$pout" "$regime" "$wl" "$n" adaptive "p$r"; done
      done
    done
  fi
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
    # The file name ends in the run's start time (ms): it orders the confirmation rounds.
    t = int(os.path.basename(path).rsplit("-", 1)[1].split(".")[0])
    runs.setdefault((regime, d["workload"], d["threads"]), {}).setdefault(d["label"], []).append(
        (t, s["tps"], s["latency_ms"]["p99"], s.get("errors", 0)))
print("Grid rows choose the contender (the best static by median TPS, a pick biased upwards);")
print("`-confirm` rows are the verdict: that static measured again, alternating with adaptive,")
print("with the ratios of each round's pair.\n")
print("| regime | workload | clients | best static (median TPS) | its p99 ms | adaptive TPS min / median | adaptive p99 ms | TPS ratio | p99 ratio | paired TPS ratio min / median | targets |")
print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
missed = errors = 0
for key in sorted(runs):
    by = runs[key]
    confirm = key[0].endswith("-confirm")
    med = {c: statistics.median(t for _, t, _, _ in v) for c, v in by.items()}
    p99 = {c: statistics.median(p for _, _, p, _ in v) for c, v in by.items()}
    errors += sum(e for v in by.values() for _, _, _, e in v)
    statics = [c for c in by if c != "adaptive"]
    if not statics or "adaptive" not in by: continue
    best = max(statics, key=lambda c: med[c])
    a = by["adaptive"]
    rt, rp = med["adaptive"] / med[best], p99["adaptive"] / max(p99[best], 1e-9)
    paired = "—"
    if confirm:
        pr = [x[1] / y[1] for x, y in zip(sorted(a), sorted(by[best])) if y[1] > 0]
        if pr:
            paired = f"{min(pr):.2f} / {statistics.median(pr):.2f}"
            rt = statistics.median(pr)
    ok = rt >= 0.95 and rp <= 1.1
    verdict = ("hold" if ok else "MISSED") if confirm else "(grid)"
    missed += confirm and not ok
    print(f"| {key[0]} | {key[1]} | {key[2]} | {best} ({med[best]:,.0f}) | {p99[best]:.1f} | "
          f"{min(t for _, t, _, _ in a):,.0f} / {med['adaptive']:,.0f} | {p99['adaptive']:.1f} | "
          f"{rt:.2f} | {rp:.2f} | {paired} | {verdict} |")
print(f"\n{missed} confirmed point(s) miss the targets (median paired TPS ratio >= 0.95 and p99 "
      f"ratio <= 1.1 against the best static); {errors} client errors.")
# Issue 19's other throughput target: at the most clients (2048 in the issue's grid), I/O-bound,
# adaptive's TPS >= 0.9x its own peak over the client counts of the same regime.
curve = {}
for (regime, wl, n), by in runs.items():
    if "adaptive" in by:
        curve.setdefault((regime, wl), {})[n] = statistics.median(t for _, t, _, _ in by["adaptive"])
rows = [(k, m) for k, m in sorted(curve.items()) if len(m) > 1]
if rows:
    print("\nAdaptive against its own peak (median TPS by clients; the most clients / the peak):\n")
    print("| regime | workload | median TPS by clients | most clients / peak |")
    print("|---|---|---|---:|")
    for (regime, wl), m in rows:
        most = max(m)
        print(f"| {regime} | {wl} | " + " / ".join(f"{n}: {m[n]:,.0f}" for n in sorted(m))
              + f" | {m[most] / max(m.values()):.2f} at {most} |")
# The retention stage: per round, adaptive at the most clients over adaptive at its peak's
# client count, measured back to back.
pairs = os.path.join(work, "peak-pairs.txt")
if os.path.exists(pairs):
    print("\nAdaptive at the most clients against its peak, paired rounds (back to back, alternating"
          " order; the median capped at 1, where the most clients are the peak; target >= 0.90"
          " I/O-bound):\n")
    print("| regime | workload | clients: peak -> most | ratio by round | min / median | verdict |")
    print("|---|---|---|---|---:|---|")
    for line in open(pairs):
        regime, wl, peak, most = line.split()
        by = runs.get((regime + "-peak", wl, int(peak)), {}).get("adaptive", [])
        bm = runs.get((regime + "-peak", wl, int(most)), {}).get("adaptive", [])
        # Round r's two runs are the r-th of each count in time order.
        pr = [m[1] / p[1] for p, m in zip(sorted(by), sorted(bm)) if p[1] > 0]
        if not pr: continue
        # Above 1: the most clients are the peak, and they keep all of it.
        med = min(statistics.median(pr), 1.0)
        verdict = ("hold" if med >= 0.9 else "MISSED") if regime == "iobound" else "(no target)"
        print(f"| {regime} | {wl} | {peak} -> {most} | " + ", ".join(f"{x:.2f}" for x in pr)
              + f" | {min(pr):.2f} / {med:.2f} | {verdict} |")
sys.exit(1 if errors or (strict and missed) else 0)
EOF
[ "$failed" = 0 ] || { echo "some runs failed" >&2; exit 1; }
