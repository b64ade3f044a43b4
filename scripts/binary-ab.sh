#!/usr/bin/env bash
# A/B of shoal server BINARIES (two builds of the server, e.g. before and after a change) at one
# load point: each binary in turn, ROUNDS rounds, on its own datadir (a binary from before a format
# change may not open a newer datadir), pool-of-threads. Per run: TPS, the server's CPU per
# transaction (user and system, microseconds, from /proc/PID/stat) and, once per binary with
# SYSCALLS=1, the server's system calls per transaction (strace -c; strace slows the run, so its
# TPS is not reported). CPU and system calls per transaction are much steadier than TPS on this
# noisy 2-core machine: a change that adds a syscall per statement shows there first.
#
#   BINS="/tmp/shoal-before /tmp/shoal-after" ROUNDS=3 THREADS=8 scripts/binary-ab.sh
#   SYSCALLS=1 BINS=... scripts/binary-ab.sh
# Exits non-zero if a server does not start or a run reports errors.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
TARGET=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
BENCH=${BENCH:-$TARGET/release/shoal-bench}
W=${WORK:-/var/tmp/shoal-binary-ab}; P=${PORT:-33812}
ROUNDS=${ROUNDS:-3}; THREADS=${THREADS:-8}; TIME=${TIME:-8}; WL=${WL:-oltp_point_select}
SYSCALLS=${SYSCALLS:-0}
read -r -a BIN_LIST <<<"${BINS:?set BINS to two or more server binaries}"
CONN=(--mysql-host=127.0.0.1 --mysql-port=$P --mysql-user=root --mysql-db=sbtest --tables=2
      --table-size=10000)
S=
stop() { if [ -n "$S" ]; then kill "$S" 2>/dev/null || true; wait "$S" 2>/dev/null || true; S=; fi; }
trap stop EXIT
mkdir -p "$W"
start() { # binary index
  local dir=$W/b$1
  mkdir -p "$dir"
  # Builds from before the first-start root password know no --initialize-insecure.
  local init=()
  grep -qa initialize-insecure "${BIN_LIST[$1]}" && init=(--initialize-insecure)
  "${BIN_LIST[$1]}" --port=$P --socket="$dir/sock" --datadir="$dir/data" --thread-handling=pool-of-threads \
    ${init[@]+"${init[@]}"} >>"$dir/log" 2>&1 &
  S=$!
  await_server $P $S "$dir/log"
  if [ ! -e "$dir/prepared" ]; then
    mariadb -h127.0.0.1 -P$P -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest'
    "$BENCH" prepare "$WL" "${CONN[@]}" >/dev/null
    touch "$dir/prepared"
  fi
  "$BENCH" run "$WL" "${CONN[@]}" --threads="$THREADS" --time=3 >/dev/null # warm the cache
}
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
run() { # -> "transactions errors"
  "$BENCH" run "$WL" "${CONN[@]}" --threads="$THREADS" --time="$1" 2>&1 |
    awk '/transactions:/ {t=$2} /ignored errors:/ {e=$3} END {print t+0, e+0}'
}
hz=$(getconf CLK_TCK)
for r in $(seq "$ROUNDS"); do
  for i in "${!BIN_LIST[@]}"; do
    start "$i"
    read -r u0 s0 < <(ticks $S)
    read -r n err < <(run "$TIME")
    read -r u1 s1 < <(ticks $S)
    [ "$n" -gt 0 ] && [ "$err" -eq 0 ] || { echo "FAIL: ${BIN_LIST[$i]}: $n transactions, $err errors" >&2; exit 1; }
    awk -v r="$r" -v b="${BIN_LIST[$i]}" -v n="$n" -v t="$TIME" -v hz="$hz" \
      -v du=$((u1 - u0)) -v ds=$((s1 - s0)) 'BEGIN {
        printf "round %d  %-28s tps %9.1f  server user %6.2f us/tx  sys %6.2f us/tx\n",
          r, b, n / t, du * 1e6 / hz / n, ds * 1e6 / hz / n }'
    stop
  done
done
if [ "$SYSCALLS" = 1 ]; then
  command -v strace >/dev/null || { echo "SYSCALLS=1 needs strace" >&2; exit 1; }
  for i in "${!BIN_LIST[@]}"; do
    start "$i"
    strace -c -f -p $S -o "$W/strace-$i.txt" 2>/dev/null &
    st=$!
    sleep 1 # strace attaches to each thread in turn
    read -r n _ < <(run 5)
    kill -INT $st; wait $st || true
    echo "system calls per transaction, ${BIN_LIST[$i]} ($n transactions):"
    awk -v n="$n" 'NR > 2 && $4 ~ /^[0-9]+$/ && $4 / n >= 0.01 { printf "  %-16s %.3f\n", $NF, $4 / n }' "$W/strace-$i.txt"
    stop
  done
fi
