#!/usr/bin/env bash
# Server CPU per table-less query (`SELECT 1`, what connection pools send as a health check, and
# `SELECT @@version_comment LIMIT 1`, what the mysql client sends at connect): N queries from 4
# mariadb-slap connections against each given shoal binary in turn, ROUNDS times (A B A B), the
# server's user+system CPU read from /proc before and after. Exits non-zero if a run fails.
#
#   scripts/tableless-cost.sh OLD_SHOAL NEW_SHOAL      (N=40000 ROUNDS=2 PORT=4611)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -ge 1 ] || { echo "usage: $0 SHOAL [SHOAL...]" >&2; exit 2; }
N=${N:-40000}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-4611}
TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
for round in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do
    temp_dir
    SHOAL=$bin start_shoal "$PORT" "$TEMP_DIR" --thread-handling=pool-of-threads
    for q in "SELECT 1" "SELECT @@version_comment LIMIT 1"; do
      a=$(cpu_ticks)
      mariadb-slap -h127.0.0.1 -P"$PORT" -uroot --query="$q" --concurrency=4 \
        --number-of-queries="$N" --iterations=1 --create-schema=mysql > /dev/null
      b=$(cpu_ticks)
      echo "round $round | $bin | $q | $(( (b - a) * 1000000 / TCK / N )) us server CPU per query"
    done
    stop_server
  done
done
