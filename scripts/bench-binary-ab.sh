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
# shellcheck disable=SC2086 # EXTRA: several options
start_prepared "$PORT" "$WORK" "$BP" $EXTRA
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
      # shellcheck disable=SC2046 # the fields, one word each
      set -- $(bench_json "$BENCH_JSON" summary.queries summary.secs sys.tool_cpu_pct \
        sys.server_cpu_user_pct sys.server_cpu_sys_pct)
      # statements a second, then the generator's and the server's CPU µs a statement
      awk -v r="$r" -v n="$n" -v w="$w" -v q="$1" -v s="$2" -v g="$3" -v u="$4" -v y="$5" \
        'BEGIN { x = q / s; printf "%s %s %s %.0f %.2f %.2f\n", r, n, w, x, g * 1e4 / x, (u + y) * 1e4 / x }' \
        | tee -a "$WORK/runs.txt"
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
