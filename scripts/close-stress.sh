#!/usr/bin/env bash
# The connection-closing stress of issue 15 at a length the suite cannot afford: the randomized
# close test of crates/server/tests/close.rs (48 clients in tight loops closing at random moments
# in every way a client can, against both handlers and three pool settings), ROUNDS times, two
# copies at once, beside a CPU hog of one spinning process per core. Each copy gets its own
# seed (printed, and reproducible with SHOAL_CLOSE_SEED) and SECS seconds of load per
# configuration. Exits non-zero on the first failing round. CLOSE_TEST_BIN=<close test
# executable> skips the cargo build (scripts/lib.sh); logs go to LOGS (default /tmp).
#
#   ROUNDS=5 SECS=5 scripts/close-stress.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}; SECS=${SECS:-5}; LOGS=${LOGS:-/tmp}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
bin=$(close_test_binary)
start_hogs "$(nproc)"
for r in $(seq "$ROUNDS"); do
  pids=()
  for copy in 1 2; do
    seed=$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ^ (r << 40) ^ (copy << 50) ))
    SHOAL_CLOSE_SECS=$SECS SHOAL_CLOSE_SEED=$seed "$bin" --test-threads=1 --nocapture \
      clients_closing_at_random_moments >"$LOGS/close-stress-$r-$copy.log" 2>&1 &
    pids+=($!)
    echo "round $r copy $copy: seed $seed"
  done
  for i in 0 1; do
    if ! wait "${pids[$i]}"; then
      echo "FAIL: round $r copy $((i + 1)) (log $LOGS/close-stress-$r-$((i + 1)).log):"
      tail -30 "$LOGS/close-stress-$r-$((i + 1)).log"
      exit 1
    fi
  done
  grep -h "sessions, all gone" "$LOGS/close-stress-$r-1.log" "$LOGS/close-stress-$r-2.log" | sed 's/^/  /' || true
done
echo "close stress: $ROUNDS rounds x 2 copies passed"
