#!/usr/bin/env bash
# scripts/check_docs_text.py passes clean pages and finds a planted date, commit hash, load story and a long README,
# while docs/results/ may hold all of them.
set -euo pipefail
check="python3 $(cd "$(dirname "$0")/../.." && pwd)/scripts/check_docs_text.py"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "test_docs_text: $*" >&2; exit 1; }
mkdir -p "$root/docs/results"
printf '# parbench\n\nRun `scripts/demo.sh`; 0x7fff is a NaN; 1234567 bytes; a defaced word.\n' >"$root/README.md"
printf 'Measured on 2026-11-22 at 1c9b6ae while the VM had load average 20.\n' >"$root/docs/results/run.md"
$check "$root" >/dev/null || fail "clean pages failed: $($check "$root")"
plant() {  # page, line, what the report must name
  cp "$root/README.md" "$root/README.keep"
  printf '%s\n' "$2" >>"$root/$1"
  local out rc=0
  out=$($check "$root") || rc=$?
  [ "$rc" -eq 1 ] && grep -qF "$3" <<<"$out" || fail "planted '$2' in $1: exit $rc, $out"
  [ "$1" = README.md ] && mv "$root/README.keep" "$root/README.md" || { rm -f "$root/$1" "$root/README.keep"; }
}
plant README.md "Measured on 2026-11-28." "README.md:4: a date"
plant docs/guide.md "As of November 2026 it works." "docs/guide.md:1: a date"
plant docs/guide.md "Fixed in 9f4835c." "a commit hash ('9f4835c')"
plant docs/guide.md "These tables show the loaded VM, not the code." "a machine-load figure"
plant README.md "$(yes line | head -200)" "README.md: 203 lines"
echo "test_docs_text: clean pages passed; 5 planted violations found"
