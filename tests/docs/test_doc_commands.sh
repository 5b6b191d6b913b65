#!/usr/bin/env bash
# The docs test finds what it exists to find: a good page passes and is counted; a command broken on purpose, a
# parse-only command with an unknown option, an options table that misses or invents an option, and an unknown
# marker each make it fail, naming the page and line.
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
runner="python3 $here/run_doc_commands.py --bin $bin"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "test_doc_commands: $*" >&2; exit 1; }

# The table a good page carries: bench_memcpy's own options, read from its --help.
options=$("$bin/bench_memcpy" --help | grep -oE '^ +-[^ ]+( |,)(-[^ ]+)?' | tr -d ' ' | tr ',' ' ' |
  grep -vE '^(-h|--help)( |$)' | sed 's/^/| `/; s/ /`, `/; s/$/` | x |/')
fence='```'
cat >"$dir/good.md" <<EOF
# A page

${fence}console
\$ build/bin/bench_allreduce --ranks 2 --sizes 8:1G:x2 --impl ring \\
    --quiet
(output of the command)
$fence

<!-- docs: parse-only -->
${fence}console
\$ mpirun -np 8 build/bin/bench_allreduce --device cuda --sizes 8:1G:x2
$fence

<!-- docs: not-run: needs a cluster's modules -->
${fence}console
\$ module load cuda
$fence

<!-- options: bench_memcpy -->
| option | meaning |
|---|---|
$options
EOF
out=$($runner "$dir/good.md" 2>&1) || fail "the good page failed: $out"
grep -q "1 command blocks run (1 commands), 1 parsed only, 1 not run, 1 option tables checked; 0 failures" <<<"$out" ||
  fail "the good page's counts are wrong: $out"

expect_failure() {  # name, text of the page, what the message must say
  printf '%s\n' "$2" >"$dir/$1.md"
  local out rc=0
  out=$($runner "$dir/$1.md" 2>&1) || rc=$?
  [ "$rc" -eq 1 ] || fail "$1: exit $rc, expected 1: $out"
  grep -qF -- "$3" <<<"$out" || fail "$1: the message does not say '$3': $out"
  grep -qF "$dir/$1.md:" <<<"$out" || fail "$1: the message does not name the page: $out"
}
expect_failure broken "$(printf '%sconsole\n$ build/bin/bench_allreduce --ranks 2 --sizes 1G:8\n%s' "$fence" "$fence")" \
  "exited 2"
expect_failure unparsed "$(printf '<!-- docs: parse-only -->\n%sconsole\n$ mpirun -np 2 build/bin/bench_allreduce --no-such-option\n%s' \
  "$fence" "$fence")" "does not parse"
expect_failure missing "$(printf '<!-- options: bench_memcpy -->\n| option | meaning |\n|---|---|\n| `--sizes` | x |\n')" \
  "which the table leaves out"
expect_failure invented "$(printf '<!-- options: bench_memcpy -->\n| option | meaning |\n|---|---|\n%s\n| `--no-such` | x |\n' \
  "$options")" "the table documents --no-such"
expect_failure marker "$(printf '<!-- docs: sometimes -->\n%sconsole\n$ true\n%s' "$fence" "$fence")" "unknown marker"
echo "test_doc_commands: the good page passed; 5 broken pages failed as expected"
