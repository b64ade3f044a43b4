#!/usr/bin/env bash
# The whole Rust test suite twice at once beside a CPU hog (issue 17: "the test suite passes
# under load"). Builds the test binaries once, then runs COPIES copies of every one of them
# (each copy the binaries in turn, --test-threads=2, from its package's directory as cargo
# would), beside HOGS spinning processes (default: one per core). Two copies share nothing but
# the machine: ports, data directories and private MariaDB instances are each test's own.
# Exits non-zero if any binary of any copy fails; the failing logs are named at the end.
#
#   scripts/suite-under-load.sh                 # 2 copies, one hog per core
#   COPIES=3 HOGS=4 scripts/suite-under-load.sh
#   FILTER=close scripts/suite-under-load.sh    # only test binaries whose name contains it
set -euo pipefail
cd "$(dirname "$0")/.."
COPIES=${COPIES:-2}
HOGS=${HOGS:-$(nproc)}
FILTER=${FILTER:-}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/shoal-target}
export SHOAL_VENV=${SHOAL_VENV:-/var/tmp/shoal-venv}
export PATH="$SHOAL_VENV/bin:$PATH"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
out=$(mktemp -d /tmp/suite-under-load.XXXXXX)
# name<TAB>executable<TAB>package directory, one line per test binary (unit and integration).
cargo test --release --workspace --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        name = os.path.basename(os.path.dirname(m["manifest_path"])) + "-" + m["target"]["name"]
        print(name, m["executable"], os.path.dirname(m["manifest_path"]), sep="\t")
' | sort -u >"$out/binaries"
if [ -n "$FILTER" ]; then
  grep -F "$FILTER" "$out/binaries" >"$out/b" || true
  mv "$out/b" "$out/binaries"
fi
n=$(wc -l <"$out/binaries")
[ "$n" -gt 0 ] || { echo "no test binaries found"; exit 1; }
echo "$n test binaries, $COPIES copies, $HOGS hogs; logs in $out"
start_hogs "$HOGS"
run_copy() {
  local copy=$1 failed=0 name exe dir
  while IFS=$'\t' read -r name exe dir; do
    if (cd "$dir" && CARGO_MANIFEST_DIR="$dir" "$exe" --test-threads=2) >"$out/$copy-$name.log" 2>&1; then
      echo "copy $copy: $name ok ($(grep -Eo '[0-9]+ passed' "$out/$copy-$name.log" | tail -1))"
    else
      echo "copy $copy: $name FAILED (log $out/$copy-$name.log)"
      failed=1
    fi
  done <"$out/binaries"
  return $failed
}
start=$(date +%s)
pids=()
for c in $(seq "$COPIES"); do
  run_copy "$c" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
echo "elapsed $(( $(date +%s) - start )) s"
if [ $status -ne 0 ]; then
  echo "FAIL: failing binaries:"
  grep -l -E '^test result: FAILED|panicked|error:' "$out"/*.log | sed 's/^/  /' || true
  exit 1
fi
echo "all $COPIES copies passed"
