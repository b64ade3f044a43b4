#!/usr/bin/env bash
# Long differential runs of crates/server/tests/differential.rs: random schemas, data and queries
# compared between shoal and a private MariaDB (installed by scripts/deps.sh), QUERIES queries
# (default 20000) for each seed in SEEDS (default: three random seeds, printed; SEEDS=S repeats
# one). Each run prints its summary (queries, same, both-error, unsupported by message,
# mismatches, the slowest query). Exits non-zero if any run had a mismatch, after printing its
# report: every mismatching query, minimised, with both answers and the schema of its round.
#
#   QUERIES=20000 SEEDS="1 2 3" scripts/differential.sh
#   SHOAL_DIFF_THREAD_HANDLING=one-thread-per-connection scripts/differential.sh
set -euo pipefail
cd "$(dirname "$0")/.."
QUERIES=${QUERIES:-20000}
SEEDS=${SEEDS:-"$(( (RANDOM << 15) | RANDOM )) $(( (RANDOM << 15) | RANDOM )) $(( (RANDOM << 15) | RANDOM ))"}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
cargo build --release -p shoal --tests --quiet
temp_dir
failed=()
for seed in $SEEDS; do
  echo "== seed $seed: $QUERIES queries"
  log=$TEMP_DIR/$seed.log
  rc=0
  SHOAL_DIFF_SEED=$seed SHOAL_DIFF_QUERIES=$QUERIES \
    cargo test --release -p shoal --test differential -- --nocapture >"$log" 2>&1 || rc=$?
  grep -E '^differential: seed|^  (unsupported|MariaDB-unsupported|slowest)|^SKIPPED' "$log" || true
  if [ "$rc" -ne 0 ]; then
    failed+=("$seed")
    if grep -q 'mismatches in' "$log"; then
      # The report is the panic message: from its first line up to the backtrace note.
      sed -n '/mismatches in [0-9]* queries/,/^note: \|^stack backtrace:/p' "$log" | grep -vE '^note: |^stack backtrace:'
    else
      echo "seed $seed: the test failed (exit $rc) without a mismatch report:"
      cat "$log"
    fi
  fi
  rm -f "$log"
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "FAILED seeds: ${failed[*]} (repeat one: SEEDS=<seed> QUERIES=$QUERIES $0)"
  exit 1
fi
echo "all seeds passed: $SEEDS"
