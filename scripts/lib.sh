# Shell helpers shared by the benchmark scripts (sourced, not run).

# await_server PORT PID LOG: waits up to 60 s for the server PID to answer `SELECT 1` on
# 127.0.0.1:PORT; exits the calling script, naming LOG, if it dies or never answers.
await_server() {
  for _ in $(seq 300); do
    mariadb -h127.0.0.1 -P"$1" -uroot -e 'SELECT 1' >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { echo "server did not start: $3"; exit 1; }
    sleep 0.2
  done
  echo "server did not answer: $3"; exit 1
}

# close_wait_count PORT: server sockets on PORT in CLOSE-WAIT (the client's FIN arrived, the
# server never closed), from /proc/net/tcp and tcp6.
close_wait_count() {
  awk -v p="$(printf '%04X' "$1")" \
    'FNR > 1 { split($2, a, ":"); if (a[2] == p && $4 == "08") n++ } END { print n + 0 }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# check_drained PORT [SECS]: after a run, waits up to SECS (default 60) until the server on
# 127.0.0.1:PORT holds no client connection but the checking one; then requires that no server
# socket is in CLOSE-WAIT and, on a shoal pool, that Threadpool_recovered_events is 0 (the
# pool's safety net found a lost wake-up). Otherwise prints what is left and exits the calling
# script with status 1: a run that leaves connections behind is a failed run.
check_drained() {
  local port=$1 secs=${2:-60} n="" cw rec
  for _ in $(seq $((secs * 5))); do
    n=$(mariadb -h127.0.0.1 -P"$port" -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Threads_connected'" 2>/dev/null | awk '{print $2}')
    [ -n "$n" ] && [ "$n" -le 1 ] && break
    sleep 0.2
  done
  cw=$(close_wait_count "$port")
  rec=$(mariadb -h127.0.0.1 -P"$port" -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Threadpool_recovered_events'" 2>/dev/null | awk '{print $2}')
  if [ -z "$n" ] || [ "$n" -gt 1 ] || [ "$cw" -gt 0 ] || [ "${rec:-0}" -gt 0 ]; then
    echo "FAIL: after the run on port $port: Threads_connected=${n:-?} (want 1), CLOSE-WAIT sockets=$cw (want 0), Threadpool_recovered_events=${rec:-n/a} (want 0 or n/a)" >&2
    mariadb -h127.0.0.1 -P"$port" -uroot -e 'SHOW PROCESSLIST' 2>&1 | head -20 >&2
    exit 1
  fi
}

# Builds crates/server/tests/close.rs (release) and prints its executable; exits the calling
# script if it cannot (close-stress.sh and steal-churn.sh run it directly, without cargo).
close_test_binary() {
  local bin
  bin=$(cargo test --release -p shoal --test close --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "close":
        print(m["executable"])')
  [ -x "$bin" ] || { echo "could not build the close test" >&2; exit 1; }
  echo "$bin"
}
