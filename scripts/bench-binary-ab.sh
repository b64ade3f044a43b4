#!/usr/bin/env bash
# A/B of two shoal-bench BINARIES (the load generator before and after a change) against one
# server: at each client count in THREADS, both binaries back to back, the order alternating by
# round, ROUNDS rounds. On a machine where the load generator shares the CPUs with the server,
# every microsecond the generator saves goes to the server; this measures both: per run the
# statements a second, the generator's CPU per statement (µs, from /proc) and the server's.
# Prints the paired ratios B / A of each count, and each binary's median generator cost.
#
#   BENCH_A=/tmp/shoal-bench-before BENCH_B=/tmp/shoal-bench-after scripts/bench-binary-ab.sh
#   BP=1G THREADS="32 512" WL=oltp_read_write BENCH_A=.. BENCH_B=.. scripts/bench-binary-ab.sh
#
# The default is issue 19's I/O-bound regime (4 x 50,000 rows, 6 MiB buffer pool, uniform reads,
# O_DIRECT, pool-of-threads with its defaults) at 512 and 2048 clients, as
# scripts/profile-clients.sh. Exits non-zero if a run fails or leaves connections open.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-bench-binary-ab}
A=${BENCH_A:?set BENCH_A and BENCH_B to two shoal-bench binaries}; B=${BENCH_B:?set BENCH_B}
WL=${WL:-oltp_point_select}; THREADS=${THREADS:-"512 2048"}; ROUNDS=${ROUNDS:-4}
TIME=${TIME:-12}; WARMUP=${WARMUP:-4}; TABLES=${TABLES:-4}; SIZE=${SIZE:-50000}
BP=${BP:-6M}; PORT=${PORT:-33652}; RAND=${RAND:-uniform}; EXTRA=${EXTRA:-}
BENCH=$A
if port_in_use "$PORT"; then echo "port $PORT is already in use: set PORT" >&2; exit 1; fi
need_bins "$SHOAL" "$A" "$B"
ulimit -n "$(ulimit -Hn)" || true
rm -rf "$WORK"; mkdir -p "$WORK"
start() {
  # shellcheck disable=SC2086 # EXTRA: several options
  start_shoal "$PORT" "$WORK" --thread-handling=pool-of-threads --max-connections=6000 \
    --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size="$1" \
    --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT $EXTRA
}
CONN=(--mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
      "--tables=$TABLES" "--table-size=$SIZE")
start 1G
sql "$PORT" 'CREATE DATABASE IF NOT EXISTS sbtest'
"$A" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$WORK/prepare.log" 2>&1 \
  || { tail -20 "$WORK/prepare.log" >&2; echo "prepare failed" >&2; exit 1; }
stop_server
start "$BP"
failed=0
: >"$WORK/runs.txt"
for r in $(seq 1 "$ROUNDS"); do
  for n in $THREADS; do
    if [ $(( r % 2 )) = 1 ]; then order="A B"; else order="B A"; fi
    for w in $order; do
      bin=$A; [ "$w" = B ] && bin=$B
      log="$WORK/run-$r-$n-$w.log"
      BENCH=$bin
      if ! bench_run "$WORK/results" "$log" "$WL" "${CONN[@]}" --threads="$n" --time="$TIME" \
          --warmup-time="$WARMUP" --quiet --server-pid="$SERVER" --connect-concurrency=128 \
          --rand-type="$RAND" --client-nice=-10 --client-threads=2 --label="r$r-c$n-$w"; then
        echo "round $r, $n clients, binary $w failed: see $log" >&2; failed=1; continue
      fi
      check_drained "$PORT" 120 || failed=1
      python3 - "$BENCH_JSON" "$r" "$n" "$w" <<'PY' | tee -a "$WORK/runs.txt"
import json, sys
d = json.load(open(sys.argv[1]))
if isinstance(d, dict) and "Run" in d: d = d["Run"]
if isinstance(d, dict) and d.get("kind") == "run" and "result" in d: d = d["result"]
s, y = d["summary"], d["sys"]
q = s["queries"] / s["secs"]
us = lambda pct: (pct or 0) / 100 * 1e6 / q
print(sys.argv[2], sys.argv[3], sys.argv[4], f"{q:.0f}", f"{us(y['tool_cpu_pct']):.2f}",
      f"{us(y['server_cpu_user_pct']) + us(y['server_cpu_sys_pct']):.2f}")
PY
    done
  done
done
stop_server
echo "round clients binary statements/s generator-µs/stmt server-µs/stmt: $WORK/runs.txt"
python3 - "$WORK/runs.txt" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    r, n, w, q, g, s = line.split()
    runs[(int(n), w, int(r))] = (float(q), float(g), float(s))
for n in sorted({k[0] for k in runs}):
    rounds = sorted({k[2] for k in runs if k[0] == n})
    pairs = [(runs[(n, "A", r)], runs[(n, "B", r)]) for r in rounds
             if (n, "A", r) in runs and (n, "B", r) in runs]
    if not pairs:
        continue
    ratios = [b[0] / a[0] for a, b in pairs]
    print(f"{n} clients: statements/s B / A by round {', '.join(f'{x:.3f}' for x in ratios)}, "
          f"median {st.median(ratios):.3f}; generator µs/stmt A {st.median(a[1] for a, _ in pairs):.1f}, "
          f"B {st.median(b[1] for _, b in pairs):.1f}; server µs/stmt A "
          f"{st.median(a[2] for a, _ in pairs):.1f}, B {st.median(b[2] for _, b in pairs):.1f}")
PY
exit "$failed"
