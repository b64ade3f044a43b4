#!/usr/bin/env bash
# Where read-write's CPU goes, statement kind by statement kind: sysbench oltp_read_write with
# all of its statements switched off but one kind (point select, each range kind, the updates,
# delete+insert, or nothing: BEGIN/COMMIT alone), against shoal (pool) and MariaDB in one run,
# same data. Prints the server's user and system CPU per transaction for each kind and the
# shoal / MariaDB ratio of the two added up; the kinds that cost shoal most against MariaDB are
# where read-write's gap is.
#   cargo build --release -p shoal && THREADS=8 TIME=10 scripts/statement-cost.sh
# KINDS selects kinds (default all); SERVERS as bench-vs-mariadb.sh; PORT must be free.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-statement-cost}
TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}; TIME=${TIME:-10}; THREADS=${THREADS:-8}
PORT=${PORT:-33510}
SERVERS=${SERVERS:-"shoal-pool-of-threads mariadb"}
KINDS=${KINDS:-"commit point simple sum order distinct index_update non_index_update delete_insert"}
case $SERVERS in *shoal-*) need_bins "$SHOAL" ;; esac
rm -rf "$WORK"; mkdir -p "$WORK"
TCK=$(getconf CLK_TCK)

start_server() { # name
  case $1 in
    mariadb)
      start_mariadb "$PORT" "$WORK/$1" --max-connections=2000 --max-prepared-stmt-count=1048576 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT --thread-handling=one-thread-per-connection ;;
    shoal-*)
      start_shoal "$PORT" "$WORK/$1" --thread-handling="${1#shoal-}" --max-connections=2000 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT ;;
    *) echo "unknown server $1 (SERVERS: shoal-<thread handling> or mariadb)" >&2; exit 1 ;;
  esac
}

# The sysbench switches that leave only statement kind $1 in a transaction.
only() {
  local p=0 s=0 u=0 o=0 d=0 iu=0 nu=0 di=0
  case $1 in
    commit) ;;
    point) p=10 ;;
    simple) s=1 ;;
    sum) u=1 ;;
    order) o=1 ;;
    distinct) d=1 ;;
    index_update) iu=1 ;;
    non_index_update) nu=1 ;;
    delete_insert) di=1 ;;
    *) echo "unknown kind $1" >&2; exit 1 ;;
  esac
  echo "--point_selects=$p --simple_ranges=$s --sum_ranges=$u --order_ranges=$o" \
    "--distinct_ranges=$d --index_updates=$iu --non_index_updates=$nu --delete_inserts=$di"
}

SB=(--db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$PORT" --mysql-user=root --mysql-db=sbtest
    "--tables=$TABLES" "--table-size=$SIZE")
declare -A US SY
for srv in $SERVERS; do
  start_server "$srv"
  sql "$PORT" 'CREATE DATABASE sbtest'
  sysbench oltp_read_write "${SB[@]}" --threads=4 prepare >"$WORK/$srv-prepare.log" 2>&1
  sysbench oltp_read_write "${SB[@]}" --threads="$THREADS" --time=5 run >"$WORK/$srv-warm.log" 2>&1
  for k in $KINDS; do
    log=$WORK/$srv-$k.log
    read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$SERVER/stat")
    # shellcheck disable=SC2046 # only() prints separate switches
    sysbench oltp_read_write "${SB[@]}" $(only "$k") --threads="$THREADS" --time="$TIME" run \
      >"$log" 2>&1 || { tail -20 "$log" >&2; echo "FAIL: $srv $k: sysbench run failed" >&2; exit 1; }
    read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$SERVER/stat")
    check_drained "$PORT"
    read -r trx errs < <(awk '/transactions:/{t=$2} /ignored errors:/{e=$3} END{print t, e+0}' "$log")
    [ "${trx:-0}" -gt 0 ] || { echo "FAIL: $srv $k: no transactions" >&2; exit 1; }
    [ "$errs" -eq 0 ] || { echo "FAIL: $srv $k: $errs errors" >&2; exit 1; }
    US[$srv,$k]=$(awk -v a="$u0" -v b="$u1" -v t="$trx" -v c="$TCK" 'BEGIN{printf "%.1f", (b-a)*1e6/c/t}')
    SY[$srv,$k]=$(awk -v a="$s0" -v b="$s1" -v t="$trx" -v c="$TCK" 'BEGIN{printf "%.1f", (b-a)*1e6/c/t}')
    echo "$srv $k: $trx transactions, user ${US[$srv,$k]} sys ${SY[$srv,$k]} us/trx" >&2
  done
  stop_server
done
set -- $SERVERS
printf '| kind |'; for s in "$@"; do printf ' %s user+sys µs/trx |' "$s"; done
[ $# -eq 2 ] && printf ' %s / %s |' "$1" "$2"; echo
printf '|---|'; for _ in "$@"; do printf -- '---:|'; done; [ $# -eq 2 ] && printf -- '---:|'; echo
for k in $KINDS; do
  printf '| %s |' "$k"
  for s in "$@"; do printf ' %s + %s |' "${US[$s,$k]}" "${SY[$s,$k]}"; done
  if [ $# -eq 2 ]; then
    awk -v a="${US[$1,$k]}" -v b="${SY[$1,$k]}" -v c="${US[$2,$k]}" -v d="${SY[$2,$k]}" \
      'BEGIN{printf " %.2f |", (a+b)/(c+d)}'
  fi
  echo
done
