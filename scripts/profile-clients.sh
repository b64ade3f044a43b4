#!/usr/bin/env bash
# Where the CPU of a statement goes as the client count grows, with shoal-bench as the client
# (the load generator of scripts/adaptive-grid.sh, two client threads): one server, one data
# set, the same workload at each count in THREADS, one after the other. For each count prints
# TPS, the server's CPU per statement (user / system µs), the load generator's, context
# switches per statement (machine-wide), with PERF=1 the server's component table of
# scripts/profile-split.py (perf samples of the server alone), and with NSTAT=1 the loopback's
# TCP segments, delayed ACKs and pure ACKs per statement (nstat, machine-wide, measured window),
# and with SYSCALLS=1 the server's system calls per statement by kind (perf's syscall
# tracepoints on the server alone, measured window; far lighter than strace). Both are divided
# by the statements the server counted in the window (Questions). `perf stat -p` counts only the
# threads alive when it starts, not those the pool starts during the window: the system calls
# are lower bounds, and recvfrom (one per single-statement command) shows how much was seen.
#
#   cargo build --release -p shoal -p shoal-bench
#   THREADS="32 2048" scripts/profile-clients.sh                   (I/O-bound point select)
#   BP=1G WL=oltp_read_write THREADS="32 512" PERF=1 scripts/profile-clients.sh
#
# The default is issue 19's I/O-bound regime: 4 x 50,000 rows, a 6 MiB buffer pool (the data
# is 8x larger), uniform reads, O_DIRECT, pool-of-threads with its defaults plus EXTRA.
# SERVER_CPUS / CLIENT_CPUS (taskset lists, e.g. 0 and 1): give the server and the load generator
# CPUs of their own (a stand-in for a load generator on another machine; the server then sizes
# its pool for the CPUs it may use).
# Exits non-zero if a run fails or leaves connections open.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-profile-clients}
WL=${WL:-oltp_point_select}; THREADS=${THREADS:-"32 2048"}; TIME=${TIME:-12}; WARMUP=${WARMUP:-4}
TABLES=${TABLES:-4}; SIZE=${SIZE:-50000}; BP=${BP:-6M}; PORT=${PORT:-33640}
RAND=${RAND:-uniform}; PERF=${PERF:-0}; FREQ=${FREQ:-499}; NSTAT=${NSTAT:-0}
SYSCALLS=${SYSCALLS:-0}
CLIENT_THREADS=${CLIENT_THREADS:-$(nproc)}
EXTRA=${EXTRA:-}
if [ "$PERF" = 1 ] || [ "$SYSCALLS" = 1 ]; then
  command -v perf >/dev/null || { echo "perf is not installed (apt-get install -y linux-perf)" >&2; exit 1; }
fi
if [ "$NSTAT" = 1 ]; then
  command -v nstat >/dev/null || { echo "nstat is not installed (apt-get install -y iproute2)" >&2; exit 1; }
fi
if [ "$TIME" -lt 6 ]; then echo "TIME must be at least 6 (the sampled window is TIME - 4 s)" >&2; exit 1; fi
if port_in_use "$PORT"; then echo "port $PORT is already in use: set PORT" >&2; exit 1; fi
need_bins "$SHOAL" "$BENCH"
[ -n "${SERVER_CPUS:-}" ] && SERVER_WRAP=(taskset -c "$SERVER_CPUS")
[ -n "${CLIENT_CPUS:-}" ] && BENCH_WRAP=(taskset -c "$CLIENT_CPUS")
ulimit -n "$(ulimit -Hn)" || true
rm -rf "$WORK"; mkdir -p "$WORK"
# shellcheck disable=SC2086 # EXTRA: several options
start_prepared "$PORT" "$WORK" "$BP" $EXTRA
failed=0
for n in $THREADS; do
  log="$WORK/run-$n.log"
  if [ "$PERF" = 1 ]; then
    # Sample the measured window only: start after the connections and the warm-up.
    (sleep "$(( WARMUP + 3 ))"; exec perf record -q -F "$FREQ" --call-graph dwarf,16384 \
       -o "$WORK/perf-$n.data" -p "$SERVER" -- sleep "$(( TIME - 4 ))") 2>"$WORK/perf-$n.err" &
    PERF_PID=$!
  fi
  if [ "$NSTAT" = 1 ] || [ "$SYSCALLS" = 1 ]; then
    # One window for both, after the warm-up and inside the measured run for any connect time
    # up to 3 s; its statements are counted by the server (Questions), since tracing slows it
    # during the window and the run's average rate would overstate them.
    (
      sleep "$(( WARMUP + 3 ))"
      q0=$(status_var "$PORT" Questions)
      [ "$NSTAT" = 1 ] && nstat -n
      if [ "$SYSCALLS" = 1 ]; then
        ev=
        for c in epoll_ctl epoll_wait epoll_pwait recvfrom sendto recvmsg sendmsg read write \
            writev pread64 pwrite64 fsync fdatasync futex poll ppoll sched_yield; do
          ev="$ev,syscalls:sys_enter_$c"
        done
        perf stat -x, -e "${ev#,}" -p "$SERVER" -- sleep "$(( TIME - 4 ))" 2>"$WORK/syscalls-$n.txt"
      else
        sleep "$(( TIME - 4 ))"
      fi
      [ "$NSTAT" = 1 ] && nstat -z >"$WORK/nstat-$n.txt"
      echo "$(( $(status_var "$PORT" Questions) - q0 ))" >"$WORK/window-$n.txt"
    ) &
    WINDOW_PID=$!
  fi
  if ! bench_run "$WORK/results" "$log" "$WL" "${CONN[@]}" --threads="$n" --time="$TIME" \
      --warmup-time="$WARMUP" --quiet --server-pid="$SERVER" --connect-concurrency=128 \
      --rand-type="$RAND" --client-nice=-10 --client-threads="$CLIENT_THREADS" --label="c$n"; then
    echo "run at $n clients failed: see $log" >&2; failed=1
  fi
  [ "$PERF" = 1 ] && { wait "$PERF_PID" || true; }
  if [ "$NSTAT" = 1 ] || [ "$SYSCALLS" = 1 ]; then wait "$WINDOW_PID" || true; fi
  check_drained "$PORT" 120 || failed=1
  python3 - "$BENCH_JSON" "$n" "$WORK/nstat-$n.txt" "$WORK/window-$n.txt" "$WORK/syscalls-$n.txt" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
if isinstance(d, dict) and "Run" in d: d = d["Run"]
if isinstance(d, dict) and d.get("kind") == "run" and "result" in d: d = d["result"]
s, y = d["summary"], d["sys"]
q = s["queries"] / s["secs"]
us = lambda pct: (pct or 0) / 100 * 1e6 / q
print(f"clients {sys.argv[2]:>5}: {s['tps']:9.0f} TPS {q:9.0f} statements/s p99 {s['latency_ms']['p99']:8.2f} ms | "
      f"server {us(y['server_cpu_user_pct']):5.1f} user + {us(y['server_cpu_sys_pct']):5.1f} sys µs/stmt | "
      f"load generator {us(y['tool_cpu_pct']):5.1f} µs/stmt | machine busy {y['cpu_busy_pct']:5.1f} % | "
      f"ctx switches {y['ctx_switches_per_s'] / q:5.2f}/stmt")
# The window's statements, as the server counted them.
n = max(int(open(sys.argv[4]).read()), 1) if os.path.exists(sys.argv[4]) else 0
if n and os.path.exists(sys.argv[3]):
    c = {l.split()[0]: float(l.split()[1]) for l in open(sys.argv[3]) if l.strip() and not l.startswith("#")}
    print("  per statement: " + ", ".join(f"{k} {c.get(k, 0) / n:.2f}" for k in
          ("TcpOutSegs", "TcpExtDelayedACKs", "TcpExtTCPPureAcks", "TcpExtTCPHPAcks", "TcpExtTCPHPHits")))
if n and os.path.exists(sys.argv[5]):
    calls = []
    for l in open(sys.argv[5]):
        f = l.strip().split(",")
        if len(f) > 2 and "sys_enter_" in f[2] and f[0].isdigit() and int(f[0]) > 0:
            calls.append(f"{f[2].split('sys_enter_')[1]} {int(f[0]) / n:.3f}")
    print("  server system calls per statement: " + ", ".join(calls))
PY
  if [ "$PERF" = 1 ]; then
    perf script -i "$WORK/perf-$n.data" -F comm,tid,period,ip,sym,dso 2>/dev/null >"$WORK/script-$n.txt"
    python3 "$ROOT/scripts/profile-split.py" "$WORK/script-$n.txt" >"$WORK/split-$n.txt" || failed=1
    echo "  server profile at $n clients: $WORK/split-$n.txt"
  fi
done
stop_server
exit "$failed"
