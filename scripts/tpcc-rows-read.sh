#!/bin/bash
# Rows read (Innodb_rows_read) and server CPU per TPC-C transaction of one server binary:
#   scripts/tpcc-rows-read.sh path/to/shoal PORT
# 1 warehouse at the tpcc test scale (300 customers per district), 4 clients for 10 s. Rows read
# per transaction is load-independent: it compares access paths of two builds (A B) directly.
BIN=$1; PORT=$2; D=$(mktemp -d /var/tmp/shoal-rr-XXXX)
B=${BENCH:-${CARGO_TARGET_DIR:-/var/tmp/shoal-target}/release/shoal-bench}
$BIN --port=$PORT --socket=$D/s.sock --datadir=$D/data --initialize-insecure --thread-handling=pool-of-threads --innodb-flush-log-at-trx-commit=2 > $D/log 2>&1 &
SP=$!
for i in $(seq 1 100); do mariadb -h127.0.0.1 -P$PORT -uroot -e "select 1" >/dev/null 2>&1 && break; sleep 0.3; done
mariadb -h127.0.0.1 -P$PORT -uroot -e "create database if not exists sbtest"
C="--mysql-port=$PORT --mysql-host=127.0.0.1 --mysql-user=root --mysql-db=sbtest"
$B prepare tpcc $C --threads=2 --warehouses=1 --scale-items=2000 --scale-customers=300 >/dev/null 2>&1
st() { mariadb -h127.0.0.1 -P$PORT -uroot -N -e "show global status like 'Innodb_rows_read'" | awk '{print $2}'; }
cpu() { awk '{print $14+$15}' /proc/$SP/stat; }
r0=$(st); c0=$(cpu)
$B run tpcc $C --threads=4 --time=10 --output=$D --label=x --quiet > $D/run.txt 2>&1
r1=$(st); c1=$(cpu)
tx=$(python3 -c "import json,glob; s=json.load(open(glob.glob('$D/run-x-*.json')[0]))['summary']; print(sum(v for k,v in s['transactions_by_type'].items()), round(s['tpmc']))")
set -- $tx
echo "$(basename $BIN): txns $1 tpmC $2 rows_read/txn $(( (r1-r0)/$1 )) server_cpu_ms/txn $(python3 -c "print(round(($c1-$c0)*10/$1,2))")"
kill $SP; wait $SP 2>/dev/null; rm -rf $D
