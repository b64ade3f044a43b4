#!/usr/bin/env bash
# Does a read-write run leave the server dearer for the point selects that follow, and by how
# much? Measured without the machine's drift: two shoal servers of the same binary side by side,
# F (fresh: never takes the read-write load) and D (takes it). Each round runs sysbench
# oltp_read_write at 64 clients on D only, waits GAP seconds, then point select at PS_THREADS
# clients on both, one right after the other (the order alternates by round; with TWICE=1 both
# run twice, D first, so the second pair shows the cost once the row cache is warm again). A
# drift that comes from the machine moves both servers; one that comes from the read-write
# history moves D alone. Each line: server CPU microseconds a statement (user + system from
# /proc/PID/stat), voluntary / involuntary context switches a statement, level-0 files and
# idle settles after the run, the server's threads.
#   cargo build --release -p shoal && scripts/drift-ab.sh
# SHOAL_BIN picks the binary (both servers); AFTER is a shell command run after each read-write
# run (e.g. AFTER='sql $PORT_D "OPTIMIZE TABLE sbtest.sbtest1" >/dev/null'); ROUNDS (3), GAP (5),
# TIME (10). Exits non-zero when a run fails or connections are left open.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
WORK=${WORK:-/var/tmp/shoal-drift-ab}; ROUNDS=${ROUNDS:-3}; GAP=${GAP:-5}; TIME=${TIME:-10}
PS=${PS_THREADS:-64}; PORT_F=${PORT_F:-33751}; PORT_D=${PORT_D:-33752}
SHOAL=${SHOAL_BIN:-$SHOAL}
export PORT_D
for p in "$PORT_F" "$PORT_D"; do
  if port_in_use "$p"; then echo "port $p is already in use: set PORT_F / PORT_D" >&2; exit 1; fi
done
need_bins "$SHOAL"
rm -rf "$WORK"; mkdir -p "$WORK"
declare -A PID PORT=([F]=$PORT_F [D]=$PORT_D)
cleanup() { for s in F D; do [ -z "${PID[$s]:-}" ] || kill "${PID[$s]}" 2>/dev/null || true; done; }
trap cleanup EXIT
sb_args() { echo --db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=${PORT[$1]}" \
  --mysql-user=root --mysql-db=sbtest --tables=8 --table-size=10000; }
for s in F D; do
  start_shoal "${PORT[$s]}" "$WORK/$s" --thread-handling=pool-of-threads --max-connections=2000 \
    --innodb-buffer-pool-size=1G --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT
  PID[$s]=$SERVER; SERVER=
  sql "${PORT[$s]}" 'CREATE DATABASE sbtest'
  # shellcheck disable=SC2046
  sysbench oltp_read_write $(sb_args "$s") --threads=4 prepare >"$WORK/prepare-$s.log" 2>&1 ||
    { tail -20 "$WORK/prepare-$s.log" >&2; echo "FAIL: prepare on $s" >&2; exit 1; }
done
run() { # server workload threads
  # shellcheck disable=SC2046
  sysbench "$2" $(sb_args "$1") --threads="$3" --time="$TIME" run >"$WORK/run.log" 2>&1 ||
    { tail -20 "$WORK/run.log" >&2; echo "FAIL: sysbench $2 on $1" >&2; exit 1; }
}
switches() { cat /proc/"$1"/task/*/status 2>/dev/null |
  awk '/^voluntary/ {v += $2} /^nonvoluntary/ {n += $2} END {print v + 0, n + 0}'; }
ps() { # label server
  local p=${PID[$2]} v0 n0 u0 s0 v1 n1 u1 s1 q
  read -r v0 n0 < <(switches "$p"); read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$p/stat")
  run "$2" oltp_point_select "$PS"
  read -r v1 n1 < <(switches "$p"); read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$p/stat")
  q=$(awk '/transactions:/ {print $2}' "$WORK/run.log")
  [ "${q:-0}" -gt 0 ] || { echo "FAIL: no transactions on $2" >&2; exit 1; }
  python3 -c "
q, tck = $q, $(getconf CLK_TCK)
us = lambda a, b: (b - a) / tck * 1e6 / q
print('%-4s %s tps %7d  cpu us %6.2f (user %5.2f sys %5.2f)  switches vol %.2f invol %.2f  l0 %s settles %s threads %d' % (
  '$1', '$2', q / $TIME, us($u0 + $s0, $u1 + $s1), us($u0, $u1), us($s0, $s1), ($v1 - $v0) / q,
  ($n1 - $n0) / q, '$(status_var "${PORT[$2]}" Shoal_store_level0_files)',
  '$(status_var "${PORT[$2]}" Shoal_store_idle_settles)', $(find "/proc/$p/task" -mindepth 1 -maxdepth 1 | wc -l)))"
}
ps r0 F; ps r0 D
for r in $(seq "$ROUNDS"); do
  run D oltp_read_write 64
  eval "${AFTER:-true}"
  sleep "$GAP"
  if [ -n "${TWICE:-}" ]; then ps "r$r" D; ps "r$r" F; ps "r${r}b" D; ps "r${r}b" F
  elif [ $((r % 2)) = 1 ]; then ps "r$r" D; ps "r$r" F
  else ps "r$r" F; ps "r$r" D; fi
done
for s in F D; do SERVER=${PID[$s]} check_drained "${PORT[$s]}"; done
