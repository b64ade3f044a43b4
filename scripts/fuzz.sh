#!/usr/bin/env bash
# Long fuzz runs of the seeded targets in crates/session/tests (fuzz_protocol: the protocol
# state machine with the real session and table engine behind it; fuzz_sql: SQL text through
# parse, plan and execute). INPUTS inputs per target (default 10^6) in CHUNKS chunks (default
# 10), each chunk a fresh process with its own seed (SEED + chunk; SEED defaults to the time,
# and is printed: SEED=S repeats a run, SHOAL_FUZZ_SEED=S SHOAL_FUZZ_ITERS=N one chunk).
#
# Reports per chunk and per target: inputs, inputs/second, crashes, invariant violations, slow
# inputs (over SHOAL_FUZZ_SLOW_MS, default 2000: the watchdog sends KILL QUERY), hangs (still
# running SHOAL_FUZZ_HANG_MS after they started, default 30000) and peak RSS. Exits non-zero on
# any crash (a panic, or the process dying: the input it was running is printed), hang,
# violation or leak (RSS growth past SHOAL_FUZZ_RSS_GROWTH_MB after the warm-up, or a gauge
# such as Prepared_stmt_count not back at 0). Runs at nice NICE (default 10).
#
#   scripts/fuzz.sh                                   # 10^6 inputs per target
#   INPUTS=20000 CHUNKS=2 TARGETS=sql scripts/fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
INPUTS=${INPUTS:-1000000}
CHUNKS=${CHUNKS:-10}
TARGETS=${TARGETS:-"protocol sql"}
SEED=${SEED:-$(date +%s)}
NICE=${NICE:-10}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
per=$(( (INPUTS + CHUNKS - 1) / CHUNKS ))
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
temp_dir
work=$TEMP_DIR

echo "fuzz: targets [$TARGETS], $INPUTS inputs each in $CHUNKS chunks of $per, seed $SEED"
tests=""
for t in $TARGETS; do tests="$tests --test fuzz_$t"; done
# shellcheck disable=SC2086
if ! nice -n "$NICE" cargo test --release -p shoal-session $tests --no-run >"$work/build.log" 2>&1; then
  cat "$work/build.log"; echo "fuzz: build failed"; exit 1
fi

failed=0
for t in $TARGETS; do
  summary="$work/summary-$t"
  : >"$summary"
  hangs=0; died=0
  for c in $(seq "$CHUNKS"); do
    seed=$((SEED + c))
    log="$work/$t-$c.log"
    rc=0
    SHOAL_FUZZ_SEED=$seed SHOAL_FUZZ_ITERS=$per SHOAL_FUZZ_LAST="$work/last-$t" \
      SHOAL_FUZZ_SUMMARY="$summary" \
      nice -n "$NICE" cargo test --release -p shoal-session --test "fuzz_$t" -- --nocapture \
      >"$log" 2>&1 || rc=$?
    line=$(grep -E "^FUZZ target=$t seed=$seed " "$log" | tail -1)
    if [ -n "$line" ]; then
      echo "  chunk $c: ${line#FUZZ }"
    fi
    # Slow inputs (killed by the watchdog's KILL QUERY) are reported, not failures.
    grep '^FUZZ SLOW' "$log" | head -5 | cut -c1-1000 | sed 's/^/    /'
    if [ "$rc" -ne 0 ]; then
      failed=1
      if grep -q '^FUZZ HANG' "$log"; then
        hangs=$((hangs + 1))
        echo "  chunk $c (seed $seed): HANG"; grep '^FUZZ HANG' "$log" | cut -c1-2000
      elif [ -z "$line" ]; then
        died=$((died + 1))
        echo "  chunk $c (seed $seed): the process died (exit $rc) running this input:"
        cut -c1-4000 "$work/last-$t" 2>/dev/null; echo
        grep -E 'panicked|overflow|SIG|error' "$log" | head -20
      else
        echo "  chunk $c (seed $seed): FAILED (exit $rc):"
        grep -E '^FUZZ (CRASH|VIOLATION)|^  input:|RSS grew|with no session open' "$log" \
          | head -40 | cut -c1-2000
      fi
    fi
  done
  # Totals from the chunks' summary lines (key=value fields).
  awk -v t="$t" -v hangs="$hangs" -v died="$died" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      n += f["inputs"]; s += f["secs"]; cr += f["crashes"]; v += f["violations"]
      sl += f["slow"]; if (f["rss_peak_kb"] > peak) peak = f["rss_peak_kb"]
      if (f["rss_growth_kb"] > growth) growth = f["rss_growth_kb"] }
    END { printf "TOTAL target=%s inputs=%d secs=%.0f rate=%.0f/s crashes=%d hangs=%d died=%d violations=%d slow=%d peak_rss_kb=%d max_rss_growth_kb=%d\n",
          t, n, s, (s > 0 ? n / s : 0), cr, hangs, died, v, sl, peak, growth }' "$summary"
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: FAILED (seed $SEED)"
  exit 1
fi
echo "fuzz: clean (seed $SEED)"
