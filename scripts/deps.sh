#!/usr/bin/env bash
# Installs what building and testing shoal needs on a fresh Debian machine (idempotent, quiet).
set -euo pipefail
need=()
# make: jemalloc's build (tikv-jemalloc-sys runs its configure and make).
for p in libclang-dev clang mariadb-client mariadb-server sysbench python3-venv chromium strace gcc make; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Python clients used by the tests, in a venv outside the clone.
VENV=${SHOAL_VENV:-/var/tmp/shoal-venv}
# `cryptography`: PyMySQL's RSA path of caching_sha2_password (tests/tls.rs).
if [ ! -x "$VENV/bin/pytest" ] || ! "$VENV/bin/python" -c 'import pymysql, mysql.connector, cryptography' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q pymysql mysql-connector-python pytest cryptography
fi
