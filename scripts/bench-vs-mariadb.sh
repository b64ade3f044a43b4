#!/usr/bin/env bash
# One run, both sides: sysbench oltp_point_select and oltp_read_write against shoal
# (one-thread-per-connection and pool-of-threads) and MariaDB (one-thread-per-connection), same
# table count and size, buffer pool larger than the data, flush at every commit, direct I/O.
# Prints TPS, p95, p99 and the server's CPU seconds per 1000 transactions (from /proc/PID/stat).
#   cargo build --release -p shoal && TIME=10 THREADS="8 64" scripts/bench-vs-mariadb.sh
# SERVERS selects the sides (default: all three; `mariadb` is MariaDB one-thread-per-connection,
# `mariadb-pool-of-threads` its thread pool, to compare pool with pool; a shoal side may carry
# options after `+`, e.g. `shoal-pool-of-threads+thread-pool-cpu-affinity=OFF`). Every server stays up
# for the whole run, each on its own port from PORT on (all must be free), and they take turns
# point by point, in the reverse order every other round (ROUNDS, default 1), so the machine's
# drift in speed lands on every side; read-write runs on the data the point-select runs left.
# With two servers a second table gives the first / second ratios of TPS and CPU per point and
# round. The CPU column is user + system; the system share (the kernel's, mostly the loopback
# TCP stack) is in the next column; the last is the server's context switches per transaction,
# voluntary (a thread blocked) / involuntary (a runnable thread preempted: mostly a worker whose
# `sendto` woke its client), from its threads' counts summed before and after the run (a thread
# that exits in between takes its count with it: an undercount). WORKLOADS narrows the
# sysbench workloads (default both). CLIENT_SOCKET=1:
# sysbench connects through each server's Unix socket instead of TCP. Two shoal builds in one run:
# SHOAL_BINS="base=<binary> new=<binary>" and sides ending in `:<label>`, e.g.
# SERVERS="shoal-pool-of-threads:base shoal-pool-of-threads:new".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-vs-mariadb}
TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}; TIME=${TIME:-10}; THREADS=${THREADS:-"8 64"}
ROUNDS=${ROUNDS:-1}
WORKLOADS=${WORKLOADS:-"oltp_point_select oltp_read_write"}
PORT=${PORT:-33500}
SERVERS=${SERVERS:-"shoal-one-thread-per-connection shoal-pool-of-threads mariadb"}
case $SERVERS in *shoal-*) need_bins "$SHOAL" ;; esac
declare -A BINOF
for b in ${SHOAL_BINS:-}; do
  BINOF[${b%%=*}]=${b#*=}
  [ -x "${b#*=}" ] || { echo "SHOAL_BINS: ${b#*=} is not an executable" >&2; exit 1; }
done
rm -rf "$WORK"; mkdir -p "$WORK"
TCK=$(getconf CLK_TCK)
# user and system CPU seconds of a process
cpu_of() { awk -v t="$TCK" '{printf "%.2f %.2f\n", $14/t, $15/t}' "/proc/$1/stat"; }
# voluntary and involuntary context switches of a process, summed over its threads
ctx_of() {
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v + 0, n + 0}'
}

start_server() { # name port
  case $1 in
    mariadb | mariadb-*)
      local th=one-thread-per-connection
      [ "$1" = mariadb ] || th=${1#mariadb-}
      start_mariadb "$2" "$WORK/$1" --max-connections=2000 --max-prepared-stmt-count=1048576 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT --thread-handling="$th" ;;
    shoal-*)
      # shoal-<thread handling>[+<option>=<value>...][:<label>]: options passed as
      # --<option>=<value>, the binary SHOAL_BINS names <label> (default $SHOAL)
      local spec=${1#shoal-} extra=() o SHOAL=$SHOAL
      if [[ $spec == *:* ]]; then
        SHOAL=${BINOF[${spec##*:}]:-}
        [ -n "$SHOAL" ] || { echo "no binary for ${spec##*:} in SHOAL_BINS" >&2; exit 1; }
        spec=${spec%:*}
      fi
      local th=${spec%%+*}
      if [ "$spec" != "$th" ]; then
        IFS=+ read -r -a opts <<<"${spec#*+}"
        for o in "${opts[@]}"; do extra+=("--$o"); done
      fi
      start_shoal "$2" "$WORK/$1" --thread-handling="$th" --max-connections=2000 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT ${extra[@]+"${extra[@]}"} ;;
    *) echo "unknown server $1 (SERVERS: shoal-<thread handling>, mariadb or mariadb-<thread handling>)" >&2; exit 1 ;;
  esac
}

declare -A SOCKOF
sb() { # workload port args...
  local wl=$1 port=$2 to=("--mysql-host=127.0.0.1" "--mysql-port=$2"); shift 2
  [ "${CLIENT_SOCKET:-0}" = 0 ] || to=("--mysql-socket=${SOCKOF[$port]}")
  sysbench "$wl" --db-driver=mysql "${to[@]}" --mysql-user=root \
    --mysql-db=sbtest "--tables=$TABLES" "--table-size=$SIZE" --percentile=95 "$@"
}

declare -A PID PORTOF TPS PER
stop_all() { local p; for p in "${PID[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap stop_all EXIT
i=0
for srv in $SERVERS; do
  PORTOF[$srv]=$((PORT + i)); i=$((i + 1))
  SOCKOF[${PORTOF[$srv]}]=$WORK/$srv/sock
  start_server "$srv" "${PORTOF[$srv]}"
  PID[$srv]=$SERVER
  SERVER=
  sql "${PORTOF[$srv]}" 'CREATE DATABASE sbtest'
  sb oltp_read_write "${PORTOF[$srv]}" --threads=4 prepare >"$WORK/$srv-prepare.log" 2>&1
done

read -ra ORDER <<<"$SERVERS"
printf '| round | server | workload | threads | TPS | p95 ms | p99 ms | server CPU s / 1000 trx | of it system | ctx switches / trx (vol / invol) |\n|---:|---|---|---:|---:|---:|---:|---:|---:|---|\n'
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then turn=("${ORDER[@]}"); else
    turn=(); for ((j = ${#ORDER[@]} - 1; j >= 0; j--)); do turn+=("${ORDER[j]}"); done; fi
  for wl in $WORKLOADS; do
    for n in $THREADS; do
      for srv in "${turn[@]}"; do
        log=$WORK/$srv-$wl-$n-$r.log
        read -r u0 s0 < <(cpu_of "${PID[$srv]}")
        read -r v0 n0 < <(ctx_of "${PID[$srv]}")
        sb "$wl" "${PORTOF[$srv]}" --threads="$n" --time="$TIME" --histogram=on run >"$log" 2>&1 \
          || { tail -20 "$log" >&2; echo "FAIL: $srv $wl $n: sysbench run failed" >&2; exit 1; }
        read -r u1 s1 < <(cpu_of "${PID[$srv]}")
        read -r v1 n1 < <(ctx_of "${PID[$srv]}")
        SERVER=${PID[$srv]} check_drained "${PORTOF[$srv]}"
        read -r tps trx p95 p99 < <(sysbench_result "$log" tps transactions p95 hist_p99)
        per=$(awk -v a="$u0" -v b="$u1" -v c="$s0" -v d="$s1" -v t="$trx" 'BEGIN{ if (t > 0) printf "%.4f", (b-a+d-c)*1000/t; else print "n/a"}')
        sys=$(awk -v c="$s0" -v d="$s1" -v t="$trx" 'BEGIN{ if (t > 0) printf "%.4f", (d-c)*1000/t; else print "n/a"}')
        ctx=$(awk -v a="$v0" -v b="$v1" -v c="$n0" -v d="$n1" -v t="$trx" 'BEGIN{ if (t > 0) printf "%.1f / %.1f", (b-a)/t, (d-c)/t; else print "n/a"}')
        [ "$tps" = n/a ] && tps=0
        TPS[$srv,$wl,$n,$r]=$tps; PER[$srv,$wl,$n,$r]=$per
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$r" "$srv" "$wl" "$n" "$tps" "$p95" "$p99" "$per" "$sys" "$ctx"
      done
    done
  done
done
stop_all

if [ ${#ORDER[@]} -eq 2 ]; then
  a=${ORDER[0]}; b=${ORDER[1]}
  printf '\n| workload | threads | TPS %s / %s, per round | CPU per trx %s / %s, per round |\n|---|---:|---|---|\n' "$a" "$b" "$a" "$b"
  for wl in $WORKLOADS; do
    for n in $THREADS; do
      t=""; c=""
      for r in $(seq 1 "$ROUNDS"); do
        t+=" $(awk -v x="${TPS[$a,$wl,$n,$r]}" -v y="${TPS[$b,$wl,$n,$r]}" 'BEGIN{ if (y > 0) printf "%.2f", x/y; else print "n/a"}')"
        c+=" $(awk -v x="${PER[$a,$wl,$n,$r]}" -v y="${PER[$b,$wl,$n,$r]}" 'BEGIN{ if (y > 0) printf "%.2f", x/y; else print "n/a"}')"
      done
      printf '| %s | %s |%s |%s |\n' "$wl" "$n" "$t" "$c"
    done
  done
fi
