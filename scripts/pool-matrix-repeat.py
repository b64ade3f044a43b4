#!/usr/bin/env python3
"""The issue-4 target ratios over repeated runs of scripts/pool-matrix.sh: per run, and their
min / median, so one noisy point on this 2-core machine does not decide a verdict.

    for i in 1 2 3; do WORK=/var/tmp/pm-$i THREADS="8 2048" SERVERS="shoal-per-thread shoal-pool" \\
      scripts/pool-matrix.sh; done
    scripts/pool-matrix-repeat.py /var/tmp/pm-1 /var/tmp/pm-2 /var/tmp/pm-3

Peak retention ("keeps X% of its peak") needs every thread count of the pool in each run; with
a reduced THREADS list it is computed over the points that were run (and says so).
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

summary = import_module("pool-matrix-summary")


def ratios(work):
    """(check name) -> value for one run directory."""
    out = {}
    rows = summary.load(work)
    for (cache, wl), runs in rows.items():
        pool = {n: summary.point(d) for (s, n), d in runs.items() if s == "shoal-pool"}
        per = {n: summary.point(d) for (s, n), d in runs.items() if s == "shoal-per-thread"}
        if 8 in pool and 8 in per and per[8]["tps"] > 0:
            out[(wl, cache, "pool/per-thread TPS at 8 (target ≥ 0.97)")] = \
                pool[8]["tps"] / per[8]["tps"]
        if pool:
            peak = max(p["tps"] for p in pool.values())
            for n in (2048, 4096):
                if n in pool and peak > 0:
                    out[(wl, cache, f"pool TPS at {n} / pool peak over {sorted(pool)} "
                                    "(target ≥ 0.90)")] = pool[n]["tps"] / peak
        if 2048 in pool and 2048 in per and per[2048]["p99"] > 0:
            out[(wl, cache, "pool p99 / per-thread p99 at 2048 (target ≤ 0.5)")] = \
                pool[2048]["p99"] / per[2048]["p99"]
        for n in sorted(set(pool) & set(per)):
            if per[n]["tps"] > 0:
                out[(wl, cache, f"pool/per-thread TPS at {n}")] = pool[n]["tps"] / per[n]["tps"]
    return out


def main():
    works = sys.argv[1:]
    per_run = [ratios(w) for w in works]
    keys = sorted(set().union(*per_run))
    print(f"| workload | data | ratio | runs ({len(works)}) | min | median |")
    print("|---|---|---|---|---:|---:|")
    for k in keys:
        vals = [r[k] for r in per_run if k in r]
        runs = " / ".join(f"{v:.2f}" for v in vals)
        print(f"| {k[0]} | {k[1]} | {k[2]} | {runs} | {min(vals):.2f} | "
              f"{statistics.median(vals):.2f} |")


if __name__ == "__main__":
    main()
