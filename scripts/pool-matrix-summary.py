#!/usr/bin/env python3
"""Markdown tables for scripts/pool-matrix.sh: one table per (cache, workload) with every server
side by side, the pool / one-thread-per-connection ratios, and the issue-4 target checks.

    scripts/pool-matrix-summary.py /var/tmp/shoal-pool-matrix
"""
import glob
import json
import os
import sys
from collections import defaultdict


def load(work):
    rows = defaultdict(dict)  # (cache, workload) -> {(server, threads): run}
    for path in glob.glob(os.path.join(work, "results", "*", "run-*.json")):
        cache = os.path.basename(os.path.dirname(path))
        with open(path) as f:
            d = json.load(f)
        if isinstance(d, dict) and "Run" in d:
            d = d["Run"]
        if isinstance(d, dict) and d.get("kind") == "run" and "result" in d:
            d = d["result"]
        rows[(cache, d["workload"])][(d["label"], d["threads"])] = d
    return rows


def fmt(v, nd=1):
    return "—" if v is None else f"{v:,.{nd}f}"


def point(d):
    s, sys_ = d["summary"], d["sys"]
    cpus = sys_.get("cpus") or 2
    return {
        "tps": s["tps"],
        "p95": s["latency_ms"]["p95"],
        "p99": s["latency_ms"]["p99"],
        "threads": sys_.get("server_threads"),
        "cs": sys_.get("server_ctx_switches_per_s"),
        "usr": sys_.get("server_cpu_user_pct"),
        "sys": sys_.get("server_cpu_sys_pct"),
        # The client's share of the machine's CPU (%, of all cores).
        "client": sys_.get("tool_cpu_pct", 0.0) / cpus,
        "errors": s.get("errors", 0),
        "warn": bool(d.get("warnings")),
    }


def main():
    work = sys.argv[1]
    rows = load(work)
    sizes = os.path.join(work, "sizes.txt")
    if os.path.exists(sizes):
        print("Data and caches:\n")
        for line in open(sizes):
            print(f"- {line.strip()}")
        print()
    checks = []
    for (cache, wl) in sorted(rows):
        runs = rows[(cache, wl)]
        servers = [s for s in ("shoal-per-thread", "shoal-pool", "mariadb-pool")
                   if any(k[0] == s for k in runs)]
        threads = sorted({k[1] for k in runs})
        print(f"### {wl}, {cache}\n")
        print("| threads | server | TPS | p95 ms | p99 ms | server threads | ctx sw/s | "
              "CPU user % | CPU sys % | client CPU % of machine | pool/per-thread TPS |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in threads:
            base = runs.get(("shoal-per-thread", n))
            for srv in servers:
                d = runs.get((srv, n))
                if d is None:
                    continue
                p = point(d)
                ratio = ""
                if srv == "shoal-pool" and base and point(base)["tps"] > 0:
                    ratio = f"{p['tps'] / point(base)['tps']:.2f}x"
                flag = " ⚠" if p["warn"] else ""
                err = f" ({p['errors']} errors)" if p["errors"] else ""
                print(f"| {n} | {srv}{flag} | {fmt(p['tps'])}{err} | {fmt(p['p95'])} | "
                      f"{fmt(p['p99'])} | {fmt(p['threads'], 0)} | {fmt(p['cs'], 0)} | "
                      f"{fmt(p['usr'], 0)} | {fmt(p['sys'], 0)} | {fmt(p['client'], 0)} | {ratio} |")
        print()
        # Issue-4 targets for this table.
        pool = {n: point(d) for (s, n), d in runs.items() if s == "shoal-pool"}
        per = {n: point(d) for (s, n), d in runs.items() if s == "shoal-per-thread"}
        if 8 in pool and 8 in per and per[8]["tps"] > 0:
            r = pool[8]["tps"] / per[8]["tps"]
            checks.append(f"{wl}/{cache}: pool at 8 threads = {r:.3f}x one-thread-per-connection "
                          f"(target ≥ 0.97) → {'met' if r >= 0.97 else 'NOT met'}")
        if pool:
            peak = max(p["tps"] for p in pool.values())
            for n in (2048, 4096):
                if n in pool and peak > 0:
                    r = pool[n]["tps"] / peak
                    checks.append(f"{wl}/{cache}: pool at {n} keeps {r:.0%} of its peak "
                                  f"{peak:,.0f} TPS (target ≥ 90%) → "
                                  f"{'met' if r >= 0.9 else 'NOT met'}")
        if 2048 in pool and 2048 in per and per[2048]["p99"] > 0:
            r = pool[2048]["p99"] / per[2048]["p99"]
            checks.append(f"{wl}/{cache}: pool p99 at 2048 = {r:.2f}x one-thread-per-connection's "
                          f"(target ≤ 0.5) → {'met' if r <= 0.5 else 'NOT met'}")
    if checks:
        print("### Targets\n")
        for c in checks:
            print(f"- {c}")


if __name__ == "__main__":
    main()
