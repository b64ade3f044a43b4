# shellcheck shell=bash
# Shell helpers shared by the scripts in scripts/ (sourced, not run):
#
#   . "$(dirname "$0")/lib.sh"
#
# Sourcing it installs an EXIT trap (and INT/TERM traps that exit through it) which stops the
# server the script started, runs the commands given to `on_exit` and removes `temp_dir`s.
# A script that sources lib.sh must not set its own EXIT trap: it registers with `on_exit`.
#
# Binaries
#   SHOAL_BIN_DIR     where shoal and shoal-bench are looked for: the environment's, else
#                     ${CARGO_TARGET_DIR:-/var/tmp/shoal-target}/release. SHOAL and BENCH (set by
#                     lib.sh from it unless already set) name one binary each.
#   need_bins BIN...  exits the script ("build first: ...") unless every BIN is executable.
#
# Servers: one at a time per script; SERVER is its PID (empty when none runs), SERVER_LOG its log.
#   start_shoal PORT DIR [FLAG...]
#                     starts $SHOAL on 127.0.0.1:PORT with --datadir=DIR/data, --socket=DIR/sock,
#                     $SHOAL_INIT (default --initialize-insecure: makes a fresh datadir, a no-op
#                     on an existing one; empty for builds that predate the option) and the FLAGs,
#                     appending its output to DIR/log; SERVER_WRAP (an array, e.g. (taskset -c 0))
#                     prefixes the command. An empty DIR means a temp_dir. Fails if PORT is already
#                     taken (a stray server would answer for the new one), then waits until the
#                     server answers `SELECT 1` (as await_server); starts it again if it died on
#                     "Address already in use" (a client's port in TIME-WAIT), for up to a minute.
#   start_mariadb PORT DIR [FLAG...]
#                     a private MariaDB (mariadbd from PATH or /usr/sbin): mariadb-install-db
#                     into DIR/data on the first start, then mariadbd --no-defaults on 127.0.0.1:PORT
#                     with the socket, pid file and log (appended) in DIR, --user=root
#                     --skip-grant-tables --skip-log-bin --performance-schema=OFF and the FLAGs.
#                     Same port check and wait as start_shoal.
#   stop_server       kills the running server (SIGTERM) and waits for it to exit.
#   start_prepared PORT DIR BP [FLAG...]
#                     pool-of-threads shoal (start_shoal) with the sbtest tables that
#                     `"$BENCH" prepare oltp_read_write` writes (TABLES x SIZE rows, under a 1 GiB
#                     buffer pool), then started again with a BP buffer pool, O_DIRECT and a
#                     flush at every commit: issue 19's I/O-bound regime when BP is 6M. The FLAGs
#                     go to both starts. Sets CONN to shoal-bench's connection options; exits the
#                     script with the log's tail if the prepare fails.
#
# Waiting and status
#   poll SECS CMD...  runs CMD every 0.2 s until it succeeds (returns 0) or SECS seconds have
#                     passed (returns 1): the one wait loop; no script sleeps for a state.
#   await_server PORT PID LOG [SECS]
#                     waits up to SECS (default 120) for PID to answer on PORT; exits the script
#                     with the tail of LOG if PID dies first or never answers.
#   port_in_use PORT  true if something accepts connections on 127.0.0.1:PORT.
#   sql PORT STATEMENTS
#                     runs STATEMENTS as root over TCP, tab-separated rows without headers.
#   status_var PORT NAME
#                     prints the global status variable NAME (empty if unknown or unreachable).
#   close_wait_count PORT [PID]
#                     server sockets on PORT in CLOSE-WAIT (held by PID, if given).
#   check_drained PORT [SECS]
#                     the end-of-run check every load script makes (below): exits 1 if the server
#                     kept connections, CLOSE-WAIT sockets or a recovered pool event.
#
# Results
#   bench_run OUTDIR LOG ARG...
#                     "$BENCH" run ARG... --output=OUTDIR, all output to LOG, prefixed by the
#                     array BENCH_WRAP (e.g. (taskset -c 1)) if set; returns its status
#                     (non-zero also when no result file was written) and sets BENCH_JSON to
#                     the result file it wrote. Run in the background (&), its status comes from
#                     `wait` and the file from bench_file.
#   bench_file LOG    prints the result file a shoal-bench run logged to LOG as written.
#   bench_json FILE FIELD[:FORMAT]...
#                     prints the FIELDs of a shoal-bench result JSON on one line, space-separated:
#                     a FIELD is a dotted path (summary.tps, summary.latency_ms.p99,
#                     sys.server_cpu_user_pct), FORMAT a Python format spec (.2f); "n/a" if absent.
#   sysbench_result LOG FIELD...
#                     the same for sysbench 1.0's text output (it writes no JSON): tps,
#                     transactions, ignored_errors, p95 / p99 / ... (its "Nth percentile" line,
#                     as chosen by --percentile) and hist_p99 (from --histogram=on).
#
# Misc
#   on_exit CMD       runs CMD (a string, eval'ed) at exit, after the server is stopped.
#   temp_dir          makes a directory under /var/tmp, removed at exit, and sets TEMP_DIR to it.
#   start_hogs N      starts N CPU hogs (spinning processes), killed at exit.
#   close_test_binary prints the executable of crates/server/tests/close.rs: $CLOSE_TEST_BIN if
#                     set (prebuilt), else built by cargo (release).

SHOAL_BIN_DIR=${SHOAL_BIN_DIR:-${CARGO_TARGET_DIR:-/var/tmp/shoal-target}/release}
SHOAL=${SHOAL:-$SHOAL_BIN_DIR/shoal}
BENCH=${BENCH:-$SHOAL_BIN_DIR/shoal-bench}
SHOAL_INIT=${SHOAL_INIT---initialize-insecure}
SERVER=
SERVER_LOG=
SERVER_WRAP=()
BENCH_WRAP=()
BENCH_JSON=
TEMP_DIR=
_LIB_ON_EXIT=()
_LIB_TEMP=()

_lib_exit() {
  local cmd d
  stop_server
  for cmd in ${_LIB_ON_EXIT[@]+"${_LIB_ON_EXIT[@]}"}; do eval "$cmd" || true; done
  for d in ${_LIB_TEMP[@]+"${_LIB_TEMP[@]}"}; do rm -rf "$d"; done
}
trap _lib_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

on_exit() { _LIB_ON_EXIT+=("$1"); }

temp_dir() {
  TEMP_DIR=$(mktemp -d /var/tmp/shoal-script.XXXXXX)
  _LIB_TEMP+=("$TEMP_DIR")
}

need_bins() {
  local b
  for b in "$@"; do
    [ -x "$b" ] || { echo "build first: cargo build --release -p shoal -p shoal-bench (missing $b; SHOAL_BIN_DIR=$SHOAL_BIN_DIR)" >&2; exit 1; }
  done
}

poll() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.2
  done
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

sql() { mariadb -h127.0.0.1 -P"$1" -uroot -N -e "$2"; }

status_var() {
  { sql "$1" "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null || true; } | awk '{print $2}'
}

# True when PID has exited or answers on PORT: poll's condition for await_server.
_up_or_dead() { ! kill -0 "$2" 2>/dev/null || mariadb -h127.0.0.1 -P"$1" -uroot -e 'SELECT 1' >/dev/null 2>&1; }

await_server() {
  local port=$1 pid=$2 log=$3 secs=${4:-120}
  if poll "$secs" _up_or_dead "$port" "$pid" && kill -0 "$pid" 2>/dev/null; then return 0; fi
  _server_failed "$port" "$pid" "$log" "$secs"
}

_server_failed() {
  if kill -0 "$2" 2>/dev/null; then
    echo "server did not answer on port $1 within $4 s: $3" >&2
  else
    echo "server did not start: $3" >&2
  fi
  tail -20 "$3" >&2 2>/dev/null || true
  exit 1
}

# _serve PORT LOG CMD...: starts CMD in the background (prefixed by SERVER_WRAP, output appended
# to LOG) and waits until it answers on PORT. A server that dies with "Address already in use"
# is started again, for up to a minute: the port-in-use check before it sees only listeners,
# but a client's ephemeral port in TIME-WAIT (the kernel hands out ports in the 33xxx range to
# clients too) also blocks the bind until it expires.
_serve() {
  local port=$1 log=$2 tries=0 from
  shift 2
  if port_in_use "$port"; then
    echo "port $port is already in use: set PORT to a free port" >&2
    exit 1
  fi
  while :; do
    from=$(($(stat -c %s "$log" 2>/dev/null || echo 0) + 1))
    ${SERVER_WRAP[@]+"${SERVER_WRAP[@]}"} "$@" >>"$log" 2>&1 &
    SERVER=$!
    # shellcheck disable=SC2034 # for the sourcing script
    SERVER_LOG=$log
    if poll 120 _up_or_dead "$port" "$SERVER" && kill -0 "$SERVER" 2>/dev/null; then return 0; fi
    if ! kill -0 "$SERVER" 2>/dev/null && [ "$tries" -lt 30 ] &&
      tail -c +"$from" "$log" | grep -q 'Address already in use'; then
      wait "$SERVER" 2>/dev/null || true
      tries=$((tries + 1))
      echo "port $port: address in use (a socket in TIME-WAIT?), starting again in 2 s" >&2
      sleep 2
      continue
    fi
    _server_failed "$port" "$SERVER" "$log" 120
  done
}

start_shoal() {
  local port=$1 dir=$2
  shift 2
  [ -n "$dir" ] || { temp_dir; dir=$TEMP_DIR; }
  mkdir -p "$dir"
  local init=()
  [ -z "$SHOAL_INIT" ] || init=("$SHOAL_INIT")
  _serve "$port" "$dir/log" "$SHOAL" --port="$port" --socket="$dir/sock" --datadir="$dir/data" \
    ${init[@]+"${init[@]}"} "$@"
}

start_mariadb() {
  local port=$1 dir=$2 mariadbd
  shift 2
  [ -n "$dir" ] || { temp_dir; dir=$TEMP_DIR; }
  mkdir -p "$dir"
  if [ ! -d "$dir/data/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$dir/data" \
      --auth-root-authentication-method=normal >"$dir/install.log" 2>&1 ||
      { echo "mariadb-install-db failed: $dir/install.log" >&2; tail -20 "$dir/install.log" >&2; exit 1; }
  fi
  mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)
  _serve "$port" "$dir/log" "$mariadbd" --no-defaults --datadir="$dir/data" --socket="$dir/sock" \
    --pid-file="$dir/pid" --port="$port" --bind-address=127.0.0.1 --user=root \
    --skip-grant-tables --skip-log-bin --performance-schema=OFF "$@"
}

# _start_odirect PORT DIR BP [FLAG...]: start_prepared's server.
_start_odirect() {
  local port=$1 dir=$2 bp=$3
  shift 3
  start_shoal "$port" "$dir" --thread-handling=pool-of-threads --max-connections=6000 \
    --max-prepared-stmt-count=4000000 --innodb-buffer-pool-size="$bp" \
    --innodb-flush-log-at-trx-commit=1 --innodb-flush-method=O_DIRECT "$@"
}

start_prepared() {
  local port=$1 dir=$2 bp=$3
  shift 3
  CONN=(--mysql-host=127.0.0.1 "--mysql-port=$port" --mysql-user=root --mysql-db=sbtest
        "--tables=${TABLES:?}" "--table-size=${SIZE:?}")
  _start_odirect "$port" "$dir" 1G "$@"
  sql "$port" 'CREATE DATABASE IF NOT EXISTS sbtest'
  "$BENCH" prepare oltp_read_write "${CONN[@]}" --threads=4 --quiet >"$dir/prepare.log" 2>&1 \
    || { tail -20 "$dir/prepare.log" >&2; echo "prepare failed" >&2; exit 1; }
  stop_server
  _start_odirect "$port" "$dir" "$bp" "$@"
}

stop_server() {
  if [ -n "$SERVER" ]; then
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
    SERVER=
  fi
}

# close_wait_count PORT [PID]: server sockets on PORT in CLOSE-WAIT (the client's FIN arrived,
# the server never closed), from /proc/net/tcp and tcp6; with PID only the sockets that process
# holds (a client elsewhere on the machine may have PORT as its ephemeral port).
close_wait_count() {
  local inodes=""
  if [ -n "${2:-}" ]; then
    inodes=$(find "/proc/$2/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n' | tr '\n' ' ')
  fi
  awk -v p="$(printf '%04X' "$1")" -v pid="${2:-}" -v inodes=" $inodes" \
    'FNR > 1 { split($2, a, ":")
      if (a[2] == p && $4 == "08" && (pid == "" || index(inodes, " " $10 " "))) n++ }
     END { print n + 0 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# check_drained PORT [SECS]: after a run, waits up to SECS (default 60) until the server on
# 127.0.0.1:PORT holds no client connection but the checking one and no socket in CLOSE-WAIT
# (of the script's server, SERVER, if it has one; a session can end a moment before its
# socket is closed); then also requires that, on a shoal pool, Threadpool_recovered_events is
# 0 (the pool's safety net found a lost wake-up). Otherwise prints what is left and exits the
# calling script with status 1: a run that leaves connections behind is a failed run.
_drained_n=
_drained_cw=
_drained() {
  _drained_n=$(status_var "$1" Threads_connected)
  _drained_cw=$(close_wait_count "$1" "$SERVER")
  [ -n "$_drained_n" ] && [ "$_drained_n" -le 1 ] && [ "$_drained_cw" -eq 0 ]
}
check_drained() {
  local port=$1 secs=${2:-60} n cw rec
  poll "$secs" _drained "$port" || true
  n=$_drained_n cw=$_drained_cw
  rec=$(status_var "$port" Threadpool_recovered_events)
  if [ -z "$n" ] || [ "$n" -gt 1 ] || [ "$cw" -gt 0 ] || [ "${rec:-0}" -gt 0 ]; then
    echo "FAIL: after the run on port $port: Threads_connected=${n:-?} (want 1), CLOSE-WAIT sockets=$cw (want 0), Threadpool_recovered_events=${rec:-n/a} (want 0 or n/a)" >&2
    mariadb -h127.0.0.1 -P"$port" -uroot -e 'SHOW PROCESSLIST' 2>&1 | head -20 >&2
    exit 1
  fi
}

bench_run() {
  local out=$1 log=$2 rc=0
  shift 2
  mkdir -p "$out"
  BENCH_JSON=
  ${BENCH_WRAP[@]+"${BENCH_WRAP[@]}"} "$BENCH" run "$@" --output="$out" >"$log" 2>&1 || rc=$?
  # shellcheck disable=SC2034 # read by the sourcing script
  BENCH_JSON=$(bench_file "$log")
  if [ "$rc" -eq 0 ] && [ ! -f "$BENCH_JSON" ]; then
    echo "bench_run: shoal-bench wrote no result file into $out" >>"$log"
    rc=1
  fi
  return "$rc"
}

# shoal-bench names the file it wrote on stderr (the name carries a time stamp).
bench_file() { sed -n 's/^result written to //p' "$1" | tail -1; }

bench_json() {
  python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if isinstance(d, dict) and "Run" in d:
    d = d["Run"]
if isinstance(d, dict) and d.get("kind") == "run" and "result" in d:
    d = d["result"]
out = []
for arg in sys.argv[2:]:
    path, _, fmt = arg.partition(":")
    v = d
    for k in path.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    if v is None:
        out.append("n/a")
    elif isinstance(v, (dict, list)):
        out.append(json.dumps(v, separators=(",", ":")))
    else:
        out.append(format(v, fmt))
print(" ".join(out))
PY
}

sysbench_result() {
  python3 - "$@" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
f = {}
m = re.search(r"transactions:\s+(\d+)\s+\(([0-9.]+) per sec", text)
if m:
    f["transactions"], f["tps"] = m.group(1), m.group(2)
m = re.search(r"ignored errors:\s+(\d+)", text)
if m:
    f["ignored_errors"] = m.group(1)
for n, v in re.findall(r"(\d+)th percentile:\s+([0-9.]+)", text):
    f[f"p{n}"] = v
rows = [(float(a), int(b)) for a, b in
        re.findall(r"(?m)^\s+([0-9.]+)\s+\|\**\s+(\d+)\s*$", text)]
tot, acc = sum(c for _, c in rows), 0
for v, c in rows:
    acc += c
    if tot and acc >= 0.99 * tot:
        f["hist_p99"] = repr(v)
        break
print(" ".join(f.get(k, "n/a") for k in sys.argv[2:]))
PY
}

# close_test_binary: prints the executable of crates/server/tests/close.rs: CLOSE_TEST_BIN if set
# (a prebuilt one; no cargo), else built (release) by cargo; exits the calling script if it
# cannot (close-stress.sh and steal-churn.sh run it directly, without cargo).
close_test_binary() {
  local bin=${CLOSE_TEST_BIN:-}
  if [ -z "$bin" ]; then
    bin=$(cargo test --release -p shoal --test close --no-run --message-format=json 2>/dev/null |
      python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "close":
        print(m["executable"])')
  fi
  [ -x "$bin" ] || { echo "could not build the close test${CLOSE_TEST_BIN:+ (CLOSE_TEST_BIN=$CLOSE_TEST_BIN is not executable)}" >&2; exit 1; }
  echo "$bin"
}

# start_hogs N: N processes spinning on a core each, killed at exit.
start_hogs() {
  for _ in $(seq "$1"); do
    (while :; do :; done) &
    on_exit "kill $! 2>/dev/null"
  done
}
