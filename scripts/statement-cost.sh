#!/usr/bin/env bash
# Where read-write's CPU goes, statement kind by statement kind: sysbench oltp_read_write with
# all of its statements switched off but one kind (point select, each range kind, the updates,
# delete+insert, or nothing: BEGIN/COMMIT alone), against shoal (pool) and MariaDB on the same
# data. Prints the server's user and system CPU per transaction for each kind and the
# shoal / MariaDB ratio of the two added up; the kinds that cost shoal most against MariaDB are
# where read-write's gap is.
#   cargo build --release -p shoal && THREADS=8 TIME=10 ROUNDS=2 scripts/statement-cost.sh
# Every server stays up for the whole run (each on its own port from PORT on) and the servers
# take turns kind by kind, in the opposite order every other round (A B, then B A), so the
# machine's drift in speed (2x between hours here) lands on both sides of each ratio. With
# ROUNDS > 1 the table shows the median of each server's cost and the median of the per-round
# ratios. KINDS selects kinds (default all); SERVERS as bench-vs-mariadb.sh; the ports
# PORT, PORT+1, ... must be free.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-statement-cost}
TABLES=${TABLES:-8}; SIZE=${SIZE:-10000}; TIME=${TIME:-10}; THREADS=${THREADS:-8}
ROUNDS=${ROUNDS:-1}
PORT=${PORT:-33510}
SERVERS=${SERVERS:-"shoal-pool-of-threads mariadb"}
KINDS=${KINDS:-"commit point simple sum order distinct index_update non_index_update delete_insert"}
case $SERVERS in *shoal-*) need_bins "$SHOAL" ;; esac
rm -rf "$WORK"; mkdir -p "$WORK"
TCK=$(getconf CLK_TCK)

start_server() { # name port
  case $1 in
    mariadb)
      start_mariadb "$2" "$WORK/$1" --max-connections=2000 --max-prepared-stmt-count=1048576 \
        --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 \
        --innodb-flush-method=O_DIRECT --thread-handling=one-thread-per-connection ;;
    shoal-*)
      start_shoal "$2" "$WORK/$1" --thread-handling="${1#shoal-}" --max-connections=2000 \
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

sb() { # port args...: sysbench oltp_read_write on the server at port
  local port=$1; shift
  sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$port" \
    --mysql-user=root --mysql-db=sbtest "--tables=$TABLES" "--table-size=$SIZE" "$@"
}

declare -A PID PORTOF US SY
stop_all() { local p; for p in "${PID[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap stop_all EXIT
i=0
for srv in $SERVERS; do
  PORTOF[$srv]=$((PORT + i)); i=$((i + 1))
  start_server "$srv" "${PORTOF[$srv]}"
  PID[$srv]=$SERVER
  SERVER=
  sql "${PORTOF[$srv]}" 'CREATE DATABASE sbtest'
  sb "${PORTOF[$srv]}" --threads=4 prepare >"$WORK/$srv-prepare.log" 2>&1
  sb "${PORTOF[$srv]}" --threads="$THREADS" --time=5 run >"$WORK/$srv-warm.log" 2>&1
done

# measure SERVER-NAME KIND ROUND: one run; appends user and sys µs per transaction to US / SY.
measure() {
  local srv=$1 k=$2 r=$3 pid=${PID[$1]} port=${PORTOF[$1]} log u0 s0 u1 s1 trx errs
  log=$WORK/$srv-$k-$r.log
  read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  # shellcheck disable=SC2046 # only() prints separate switches
  sb "$port" $(only "$k") --threads="$THREADS" --time="$TIME" run \
    >"$log" 2>&1 || { tail -20 "$log" >&2; echo "FAIL: $srv $k: sysbench run failed" >&2; exit 1; }
  read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  SERVER=$pid check_drained "$port"
  read -r trx errs < <(awk '/transactions:/{t=$2} /ignored errors:/{e=$3} END{print t, e+0}' "$log")
  [ "${trx:-0}" -gt 0 ] || { echo "FAIL: $srv $k: no transactions" >&2; exit 1; }
  [ "$errs" -eq 0 ] || { echo "FAIL: $srv $k: $errs errors" >&2; exit 1; }
  u=$(awk -v a="$u0" -v b="$u1" -v t="$trx" -v c="$TCK" 'BEGIN{printf "%.1f", (b-a)*1e6/c/t}')
  s=$(awk -v a="$s0" -v b="$s1" -v t="$trx" -v c="$TCK" 'BEGIN{printf "%.1f", (b-a)*1e6/c/t}')
  US[$srv,$k]="${US[$srv,$k]:-} $u"; SY[$srv,$k]="${SY[$srv,$k]:-} $s"
  echo "round $r $srv $k: $trx transactions, user $u sys $s us/trx" >&2
}

read -ra ORDER <<<"$SERVERS"
for r in $(seq 1 "$ROUNDS"); do
  for k in $KINDS; do
    if [ $((r % 2)) -eq 1 ]; then seq_=("${ORDER[@]}"); else
      seq_=(); for ((j = ${#ORDER[@]} - 1; j >= 0; j--)); do seq_+=("${ORDER[j]}"); done; fi
    for srv in "${seq_[@]}"; do measure "$srv" "$k" "$r"; done
  done
done
stop_all

med() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{v[NR]=$1} END{if (NR%2) print v[(NR+1)/2]; else printf "%.2f\n", (v[NR/2]+v[NR/2+1])/2}'; }
set -- $SERVERS
printf '| kind |'; for s in "$@"; do printf ' %s user+sys µs/trx |' "$s"; done
[ $# -eq 2 ] && printf ' %s / %s, per round (median) |' "$1" "$2"; echo
printf '|---|'; for _ in "$@"; do printf -- '---:|'; done; [ $# -eq 2 ] && printf -- '---:|'; echo
for k in $KINDS; do
  printf '| %s |' "$k"
  for s in "$@"; do printf ' %s + %s |' "$(med <<<"${US[$s,$k]}")" "$(med <<<"${SY[$s,$k]}")"; done
  if [ $# -eq 2 ]; then
    read -ra ua <<<"${US[$1,$k]}"; read -ra sa <<<"${SY[$1,$k]}"
    read -ra ub <<<"${US[$2,$k]}"; read -ra sb_ <<<"${SY[$2,$k]}"
    rs=""
    for ((j = 0; j < ${#ua[@]}; j++)); do
      rs+=" $(awk -v a="${ua[j]}" -v b="${sa[j]}" -v c="${ub[j]}" -v d="${sb_[j]}" 'BEGIN{printf "%.2f", (a+b)/(c+d)}')"
    done
    printf ' %s (%s) |' "$(echo "$rs" | sed 's/^ //; s/ / \/ /g')" "$(med <<<"$rs")"
  fi
  echo
done
