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
