#!/usr/bin/env bash
# The kill -9 crash cycles of crates/server/tests/crash.rs at a length the suite cannot afford:
# CYCLES cycles (default 20) of load, SIGKILL at a random moment, restart and verification
# (every acknowledged transaction present, in-flight ones all or nothing, CHECK TABLE OK),
# ROUNDS times (default 1), each round with its own seed (printed; SHOAL_CRASH_SEED=S repeats
# one). Exits non-zero on the first failing round.
#
#   CYCLES=20 ROUNDS=3 scripts/crash-cycles.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CYCLES=${CYCLES:-20}; ROUNDS=${ROUNDS:-1}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
temp_dir
log=$TEMP_DIR/cargo-test.log
for r in $(seq "$ROUNDS"); do
  echo "== round $r of $ROUNDS: $CYCLES cycles"
  rc=0
  SHOAL_CRASH_CYCLES=$CYCLES cargo test --release -p shoal --test crash -- --nocapture >"$log" 2>&1 || rc=$?
  grep -E 'seed|cycle|panicked|test result|FAILED|^error' "$log" || true
  if [ "$rc" -ne 0 ]; then echo "round $r failed (exit $rc); full output:"; cat "$log"; exit 1; fi
done
