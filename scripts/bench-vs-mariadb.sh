#!/usr/bin/env bash
# One run, both sides: sysbench oltp_point_select and oltp_read_write against shoal
# (one-thread-per-connection and pool-of-threads) and MariaDB (one-thread-per-connection), same
# table count and size, buffer pool larger than the data, flush at every commit, direct I/O.
# Prints TPS, p95, p99 and the server's CPU seconds per 1000 transactions (from /proc/PID/stat).
#   cargo build --release -p shoal && TIME=10 THREADS="8 64" scripts/bench-vs-mariadb.sh
# SERVERS selects the sides (default: all three); PORT must be free (checked).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib.sh"
SHOAL=${SHOAL:-${CARGO_TARGET_DIR:-/var/tmp/shoal-target}/release/shoal}
WORK=${WORK:-/var/tmp/shoal-vs-mariadb}
TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}; TIME=${TIME:-10}; THREADS=${THREADS:-"8 64"}
PORT=${PORT:-33500}
SERVERS=${SERVERS:-"shoal-one-thread-per-connection shoal-pool-of-threads mariadb"}
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "port $PORT is already in use: set PORT to a free port" >&2; exit 1
fi
rm -rf "$WORK"; mkdir -p "$WORK"
TCK=$(getconf CLK_TCK)
cpu_of() { awk -v t="$TCK" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }

start_server() { # name
  case $1 in
    mariadb)
      mkdir -p "$WORK/mdb"
      mariadb-install-db --no-defaults --datadir="$WORK/mdb" --auth-root-authentication-method=normal >/dev/null 2>&1
      /usr/sbin/mariadbd --no-defaults --datadir="$WORK/mdb" --socket="$WORK/mdb.sock" --port=$PORT \
        --bind-address=127.0.0.1 --user=root --skip-grant-tables --skip-log-bin \
        --performance-schema=OFF --max-connections=2000 --max-prepared-stmt-count=1048576 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT --thread-handling=one-thread-per-connection \
        >"$WORK/mariadb.log" 2>&1 & ;;
    shoal-*)
      "$SHOAL" --port=$PORT --socket="$WORK/shoal.sock" --datadir="$WORK/$1" --initialize-insecure \
        --thread-handling="${1#shoal-}" --max-connections=2000 --innodb-buffer-pool-size=1G \
        --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT >"$WORK/$1.log" 2>&1 & ;;
  esac
  SERVER=$!
  for _ in $(seq 300); do kill -0 $SERVER 2>/dev/null || { echo "server $1 exited"; exit 1; }; mariadb -h127.0.0.1 -P$PORT -uroot -e 'SELECT 1' >/dev/null 2>&1 && return; sleep 0.2; done
  echo "server $1 did not start"; exit 1
}

SB=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest
    --tables=$TABLES --table-size=$SIZE --percentile=95)
printf '| server | workload | threads | TPS | p95 ms | p99 ms | server CPU s / 1000 trx |\n|---|---|---:|---:|---:|---:|---:|\n'
for srv in $SERVERS; do
  start_server $srv
  mariadb -h127.0.0.1 -P$PORT -uroot -e 'CREATE DATABASE sbtest'
  sysbench oltp_read_write "${SB[@]}" --threads=4 prepare >"$WORK/$srv-prepare.log" 2>&1
  for wl in oltp_point_select oltp_read_write; do
    for n in $THREADS; do
      c0=$(cpu_of $SERVER)
      sysbench $wl "${SB[@]}" --threads=$n --time=$TIME --histogram=on run >"$WORK/$srv-$wl-$n.log" 2>&1 \
        || { tail -20 "$WORK/$srv-$wl-$n.log" >&2; echo "FAIL: $srv $wl $n: sysbench run failed" >&2; exit 1; }
      c1=$(cpu_of $SERVER)
      check_drained $PORT
      tps=$(awk '/transactions:/{gsub(/\(/,"",$3); print $3; exit}' "$WORK/$srv-$wl-$n.log")
      trx=$(awk '/transactions:/{print $2; exit}' "$WORK/$srv-$wl-$n.log")
      p95=$(awk '/95th percentile:/{print $3; exit}' "$WORK/$srv-$wl-$n.log")
      p99=$(python3 - "$WORK/$srv-$wl-$n.log" <<'PY'
import sys,re
rows=[];
for l in open(sys.argv[1]):
    m=re.match(r'^\s+([0-9.]+)\s+\|\**\s+(\d+)\s*$', l)
    if m: rows.append((float(m.group(1)), int(m.group(2))))
tot=sum(c for _,c in rows); acc=0
for v,c in rows:
    acc+=c
    if tot and acc>=0.99*tot: print(v); break
else: print("n/a")
PY
)
      per=$(awk -v a="$c0" -v b="$c1" -v t="${trx:-0}" 'BEGIN{ if (t>0) printf "%.3f", (b-a)*1000/t; else print "n/a"}')
      printf '| %s | %s | %s | %s | %s | %s | %s |\n' $srv $wl $n "${tps:-0}" "${p95:-n/a}" "$p99" "$per"
    done
  done
  kill $SERVER; wait $SERVER 2>/dev/null || true
done
