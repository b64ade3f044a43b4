#!/usr/bin/env bash
# The pool's peak retention (issue 4: TPS at 2048 and 4096 connections over the TPS at its
# peak, 8 connections here) as paired, interleaved rounds instead of one long sweep: on a
# machine whose speed drifts by ±15 % between minutes, a ratio taken within one short sweep
# drifts much less than medians of points taken far apart. Each round runs every binary in turn,
# each a fresh server on the datadir of scripts/handler-ab.sh, over the points
# "8 2048 4096 4096 2048 8"; per round and binary it prints mean TPS at 2048 and 4096 over mean
# TPS at 8, and at the end the medians (and the server's CPU per transaction per point).
#
#   cargo build --release -p shoal -p shoal-bench
#   scripts/handler-ab.sh                              # once, creates and fills the datadir
#   SERVER_CPUS=0 CLIENT_CPUS=1 ROUNDS=4 scripts/pool-retention.sh <shoal binary> [<other binary> ...]
#
# With no binary, $SHOAL (default: shoal in SHOAL_BIN_DIR, see scripts/lib.sh). TIME / WARMUP / SERVER_CPUS / CLIENT_CPUS / EXTRA go to
# scripts/pool-sweep.sh (defaults here: TIME=6 WARMUP=3).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ROUNDS=${ROUNDS:-4}
export TIME=${TIME:-6} WARMUP=${WARMUP:-3}
[ $# -gt 0 ] || set -- "$SHOAL"
temp_dir
out=$TEMP_DIR/sweeps
for r in $(seq "$ROUNDS"); do
  for b in "$@"; do
    echo "== round $r $b $(date +%T)" >&2
    SHOAL=$b scripts/pool-sweep.sh pool-of-threads "8 2048 4096 4096 2048 8" 2>&1 |
      sed "s|^|$r $b |" | tee -a "$out" >&2
  done
done
python3 - "$out" <<'PY'
import re, statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\d+) (\S+) pool-of-threads n=(\d+) tps=([\d.]+).*srv_us=([\d.]+)', line)
    if m:
        runs.setdefault(m[2], {}).setdefault(int(m[1]), []).append(
            (int(m[3]), float(m[4]), float(m[5])))
for b, rounds in runs.items():
    ratios = {2048: [], 4096: []}
    us = {8: [], 2048: [], 4096: []}
    for r, pts in sorted(rounds.items()):
        tps = {n: [t for k, t, _ in pts if k == n] for n in (8, 2048, 4096)}
        if not all(tps.values()):
            print(f"{b} round {r}: incomplete, skipped")
            continue
        peak = st.mean(tps[8])
        for n in (2048, 4096):
            ratios[n].append(st.mean(tps[n]) / peak)
        for k, _, u in pts:
            us[k].append(u)
        print(f"{b} round {r}: 2048/8 {ratios[2048][-1]:.3f}  4096/8 {ratios[4096][-1]:.3f}")
    if ratios[2048]:
        print(f"{b}: retention median 2048 {st.median(ratios[2048]):.3f} "
              f"({min(ratios[2048]):.3f}-{max(ratios[2048]):.3f}), 4096 "
              f"{st.median(ratios[4096]):.3f} ({min(ratios[4096]):.3f}-{max(ratios[4096]):.3f}); "
              f"server us/trx median at 8 / 2048 / 4096: "
              + " / ".join(f"{st.median(us[n]):.1f}" for n in (8, 2048, 4096)))
PY
