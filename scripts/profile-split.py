#!/usr/bin/env python3
"""Split perf samples of the shoal server into components (see scripts/profile-rw.sh).

Input: `perf script -F comm,tid,period,ip,sym,dso` output. Each sample goes to exactly one
component, decided from its stack (leaf first): the first rule that matches wins.
Prints the component shares, the top leaf functions and the top first-shoal frames (the shoal
function nearest the leaf: whose code or whose callees spend the time).
"""
import re
import sys
from collections import Counter

ALLOC = re.compile(r"^(malloc|free|cfree|realloc|calloc|_int_malloc|_int_free|_int_realloc|"
                   r"malloc_consolidate|__libc_malloc|__libc_free|__libc_realloc|__libc_calloc|"
                   r"tcache_|unlink_chunk|_int_free_merge_chunk|_int_free_create_chunk|"
                   r"_int_free_maybe_consolidate|__rust_alloc|__rust_dealloc|__rust_realloc|"
                   r"alloc::alloc::|__memcpy|__memmove|__memset)")
NET = re.compile(r"(tcp_|sock_|__sys_sendto|__sys_recvfrom|__x64_sys_sendto|__x64_sys_recvfrom|"
                 r"__send|__recv|ip_|__netif|net_rx|loopback|skb_|inet_|__dev_queue)")
RULES = [
    ("WAL / fsync", lambda st: any("fsync" in f or "fdatasync" in f for f in st)),
    ("network syscalls", lambda st: any(NET.search(f) for f in st[:12]) and not any("rocksdb" in f for f in st)),
    ("pool / wakeups (futex, epoll)", lambda st: any(("futex" in f or "epoll" in f or "shoal_pool" in f) for f in st[:8])),
    ("allocation", lambda st: bool(ALLOC.match(st[0]))),
]
FIRST = [  # first matching frame from the leaf decides
    ("RocksDB writes", re.compile(r"DBImpl::Write|WriteBatch|MemTable::Add|MemTableInserter|WriteThread")),
    ("lock manager", re.compile(r"shoal_store::lock")),
    ("RocksDB reads", re.compile(r"rocksdb")),
    ("row codec", re.compile(r"shoal_store::codec|datum_to_value|Utf8Chunks|from_utf8")),
    ("SQL parse", re.compile(r"sqlparser")),
    ("expression eval", re.compile(r"shoal_sql::(eval|value|func)")),
    ("translate / plan", re.compile(r"shoal_exec::(translate|plan|query::plan|query::bind)")),
    ("protocol", re.compile(r"shoal_proto")),
    ("executor glue", re.compile(r"shoal")),
]


def samples(path):
    head, stack = None, []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if head is not None:
                    yield head, stack
                head, stack = None, []
            elif not line.startswith((" ", "\t")):
                head = line
            else:
                parts = line.strip().split(None, 1)
                sym = parts[1] if len(parts) > 1 else "?"
                sym = re.sub(r"\+0x[0-9a-f]+", "", sym)
                sym = re.sub(r"\s+\([^)]*\)$", "", sym)
                stack.append(sym)
    if head is not None:
        yield head, stack


def short(sym):
    sym = re.sub(r"::h[0-9a-f]{16}$", "", sym)
    sym = re.sub(r"<[^<>]*>", "<>", sym)
    return sym[:110]


def main():
    comp, leaves, firsts = Counter(), Counter(), Counter()
    total = 0
    for _, st in samples(sys.argv[1]):
        if not st:
            continue
        total += 1
        leaves[short(st[0])] += 1
        first = next((f for f in st if "shoal" in f), None)
        if first:
            firsts[short(first)] += 1
        name = next((n for n, rule in RULES if rule(st)), None)
        if name is None:
            name = "other (kernel, libc)"
            for n, rx in FIRST:
                if any(rx.search(f) for f in st):
                    # the first frame from the leaf matching any component rule decides
                    for f in st:
                        hit = next((m for m, r in FIRST if r.search(f)), None)
                        if hit:
                            name = hit
                            break
                    break
        comp[name] += 1
    if total == 0:
        sys.exit("no samples")
    print(f"\n{total} samples\n\n| component | % of server CPU samples |\n|---|---:|")
    for n, c in comp.most_common():
        print(f"| {n} | {100.0 * c / total:.1f} |")
    print("\ntop leaf functions (self):")
    for n, c in leaves.most_common(30):
        print(f"  {100.0 * c / total:5.1f}  {n}")
    print("\ntop first shoal frames (self + callees outside shoal):")
    for n, c in firsts.most_common(30):
        print(f"  {100.0 * c / total:5.1f}  {n}")


main()
