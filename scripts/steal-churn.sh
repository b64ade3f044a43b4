#!/usr/bin/env bash
# Work stealing under connection churn and CPU contention: the randomized close test of
# crates/server/tests/close.rs (48 clients connecting, running a few commands and closing in
# every way, beside two spinning threads) against the pool with edge-triggered sockets and no
# linger, with work stealing on and off, ROUNDS times each, alternating. Prints the sessions
# each configuration completed per round, min/median of the ratio on/off, and exits non-zero
# if the median ratio is below MIN_RATIO (default 0.5): stealing once cut this load to a tenth
# (a waker yielded while holding the victim group's lock). CLOSE_TEST_BIN=<close test
# executable> skips the cargo build (scripts/lib.sh).
#
#   ROUNDS=5 SECS=4 scripts/steal-churn.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}; SECS=${SECS:-4}; MIN_RATIO=${MIN_RATIO:-0.5}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
bin=$(close_test_binary)
ratios=()
for r in $(seq "$ROUNDS"); do
  line=()
  for cfg in "work stealing, no balancing" "no stealing, no balancing"; do
    out=$(SHOAL_CLOSE_CONFIG="$cfg" SHOAL_CLOSE_SECS=$SECS "$bin" --test-threads=1 --nocapture \
      clients_closing_at_random_moments 2>&1) || { echo "FAIL: round $r ($cfg):"; echo "$out" | tail -20; exit 1; }
    n=$(echo "$out" | grep -Eo '[0-9]+ sessions' | head -1 | grep -Eo '[0-9]+')
    [ -n "$n" ] || { echo "FAIL: no session count in round $r ($cfg)"; echo "$out" | tail -20; exit 1; }
    line+=("$n")
  done
  ratio=$(python3 -c "print(f'{${line[0]}/${line[1]}:.3f}')")
  ratios+=("$ratio")
  echo "round $r: stealing on ${line[0]} sessions, off ${line[1]} sessions, on/off $ratio"
done
python3 - "$MIN_RATIO" "${ratios[@]}" <<'PY'
import statistics, sys
lim, rs = float(sys.argv[1]), [float(x) for x in sys.argv[2:]]
med = statistics.median(rs)
print(f"on/off: min {min(rs):.3f} median {med:.3f} over {len(rs)} rounds")
sys.exit(0 if med >= lim else 1)
PY
