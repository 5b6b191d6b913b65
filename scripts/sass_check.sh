#!/usr/bin/env bash
# sass_check.sh: checks the SASS of built kernels (object files or static libraries with sm_XX device code, no GPU
# needed) against a table of expectations: each listed kernel must contain every SASS opcode its line names (e.g.
# HMMA tensor-core mma, LDSM ldmatrix, LDGSTS cp.async) and must have no stack frame, no local memory and no
# local loads or stores (LDL/STL: what ptxas's spill stores and loads become). Prints one line per kernel with
# the counts, registers and local-memory figures; a kernel listed but absent from the objects fails by name.
#
#   scripts/sass_check.sh --table kernels/sass_expectations.txt [--arch sm_90] [--cuobjdump PATH | --tools-dir DIR]
#                         OBJECT...
#
# cuobjdump (and the nvdisasm it runs for -sass): --cuobjdump, else the one on PATH or beside nvcc, else NVIDIA's
# PyPI wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm ($PARBENCH_CUDA_TOOLS_VERSION) extracted once into
# --tools-dir (pip download; nothing installed system-wide).
# Exit: 0 every kernel passes, 1 a kernel fails or is absent, 2 usage error or no cuobjdump.
set -euo pipefail

tools_version="${PARBENCH_CUDA_TOOLS_VERSION:-13.5.37}"
table=""
arch=sm_90
cuobjdump=""
tools_dir=""
objects=()
usage() {
  echo "usage: $0 --table FILE [--arch sm_XX] [--cuobjdump PATH | --tools-dir DIR] OBJECT..." >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --table) table="${2:?--table needs a file}"; shift 2 ;;
    --arch) arch="${2:?--arch needs an architecture}"; shift 2 ;;
    --cuobjdump) cuobjdump="${2:?--cuobjdump needs a path}"; shift 2 ;;
    --tools-dir) tools_dir="${2:?--tools-dir needs a folder}"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "error: unknown argument '$1'" >&2; usage ;;
    *) objects+=("$1"); shift ;;
  esac
done
[[ -n "$table" ]] || { echo "error: --table is required" >&2; usage; }
[[ "$arch" =~ ^sm_[0-9]+a?$ ]] || { echo "error: --arch '$arch' is not of the form sm_90" >&2; exit 2; }
[[ -r "$table" ]] || { echo "error: table '$table' is not readable" >&2; exit 2; }
[[ ${#objects[@]} -gt 0 ]] || { echo "error: no object files given" >&2; usage; }
for o in "${objects[@]}"; do [[ -r "$o" ]] || { echo "error: object '$o' is not readable" >&2; exit 2; }; done

# Table lines: a mangled kernel name, then opcodes in capitals; '#' starts a comment.
bad_line="$(awk '{ sub(/#.*/, "") } NF == 0 { next }
  $1 !~ /^_Z[A-Za-z0-9_]+$/ { print FNR ": \"" $1 "\" is not a mangled name (_Z...)"; exit }
  { for (i = 2; i <= NF; ++i) if ($i !~ /^[A-Z][A-Z0-9]*$/) { print FNR ": \"" $i "\" is not an opcode (e.g. HMMA)"; exit } }' "$table")"
[[ -z "$bad_line" ]] || { echo "error: $table line $bad_line" >&2; exit 2; }

# The wheels' cuobjdump and nvdisasm, extracted once into the tools folder; a temporary folder renamed into place,
# so two checks fetching at once both end with a whole copy. Prints cuobjdump's path.
fetch_tools() {
  local dest="$tools_dir/cuda-tools-$tools_version" tmp w tool
  local wheels=("nvidia-cuda-cuobjdump==$tools_version" "nvidia-cuda-nvdisasm==$tools_version")
  if [[ ! -d "$dest" ]]; then
    mkdir -p "$tools_dir"
    tmp="$(mktemp -d "$tools_dir/fetch.XXXXXX")"
    echo "sass_check: fetching ${wheels[*]} from PyPI into $dest" >&2
    for w in "${wheels[@]}"; do
      python3 -m pip download --quiet --no-deps --only-binary=:all: "$w" -d "$tmp/wheels" >&2 && continue
      rm -rf "$tmp"
      echo "error: could not fetch $w from PyPI; install a CUDA toolkit with cuobjdump or pass --cuobjdump PATH" >&2
      exit 2
    done
    for w in "$tmp"/wheels/*.whl; do python3 -m zipfile -e "$w" "$tmp/x" || { rm -rf "$tmp"; exit 2; }; done
    mv -T "$tmp/x" "$dest" 2>/dev/null || true  # another check may have put its copy there first
    rm -rf "$tmp"
  fi
  for tool in cuobjdump nvdisasm; do
    [[ -f "$(find "$dest" -name "$tool" -type f | head -1)" ]] || { echo "error: no $tool in $dest" >&2; exit 2; }
    chmod +x "$(find "$dest" -name "$tool" -type f | head -1)"  # zip extraction drops the executable bit
  done
  find "$dest" -name cuobjdump -type f | head -1
}

if [[ -z "$cuobjdump" ]]; then
  nvcc_dir="$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")"
  if command -v cuobjdump >/dev/null; then cuobjdump="$(command -v cuobjdump)"
  elif [[ -x "$nvcc_dir/cuobjdump" ]]; then cuobjdump="$nvcc_dir/cuobjdump"
  elif [[ -n "$tools_dir" ]]; then cuobjdump="$(fetch_tools)"
  else echo "error: no cuobjdump on PATH or beside nvcc; pass --cuobjdump PATH or --tools-dir DIR" >&2; exit 2
  fi
fi
[[ -x "$cuobjdump" ]] || { echo "error: cuobjdump '$cuobjdump' is not executable" >&2; exit 2; }
export PATH="$(dirname "$cuobjdump"):$PATH"  # its nvdisasm, where it has one beside it

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Only the listed kernels are disassembled (-fun: a third of the time of the whole library); each object without
# them draws a warning per name, dropped.
names="$(awk '{ sub(/#.*/, "") } NF { printf "%s%s", sep, $1; sep = "," }' "$table")"
for o in "${objects[@]}"; do
  if ! "$cuobjdump" -arch "$arch" -sass ${names:+-fun "$names"} "$o" >>"$tmp/sass.txt" 2>"$tmp/err.txt"; then
    grep -v 'Function listed in --function .* not found' "$tmp/err.txt" >&2
    echo "error: cuobjdump -sass failed on $o" >&2
    exit 2
  fi
  "$cuobjdump" -arch "$arch" -res-usage "$o" >>"$tmp/res.txt" 2>"$tmp/err.txt" || { cat "$tmp/err.txt" >&2; echo "error: cuobjdump -res-usage failed on $o" >&2; exit 2; }
done

# Opcode counts per function ("kernel opcode count"), the opcode without its modifiers and predicate. A function
# met again (the same template in two objects) is counted once.
awk '/Function : / { fn = $3; if (fn in seen) fn = ""; else seen[fn] = 1; next }
  fn != "" && /^ *\/\*[0-9a-f]+\*\/ / {
    line = $0; sub(/^ *\/\*[0-9a-f]+\*\/ +/, "", line); n = split(line, w, /[ \t;]+/)
    op = (w[1] ~ /^@/) ? w[2] : w[1]; sub(/\..*/, "", op); count[fn " " op]++ }
  END { for (k in count) print k, count[k] }' "$tmp/sass.txt" >"$tmp/ops.txt"
# Resource usage per function ("kernel REG STACK LOCAL"), the first object's.
awk '/^ *Function [^ ]+:$/ { fn = $2; sub(/:$/, "", fn); next }
  fn != "" && /REG:/ { if (!(fn in seen)) { seen[fn] = 1; r = s = l = "?"
      for (i = 1; i <= NF; ++i) { split($i, kv, ":"); if (kv[1] == "REG") r = kv[2]; if (kv[1] == "STACK") s = kv[2]; if (kv[1] == "LOCAL") l = kv[2] }
      print fn, r, s, l }
    fn = "" }' "$tmp/res.txt" >"$tmp/res_by_fn.txt"

awk -v demangle="c++filt" -v arch="$arch" '
  FILENAME == ARGV[1] { ops[$1 " " $2] = $3; has[$1] = 1; next }
  FILENAME == ARGV[2] { regs[$1] = $2; stack[$1] = $3; local_[$1] = $4; next }
  { sub(/#.*/, "") } NF == 0 { next }
  {
    k = $1; name = k; cmd = demangle " \"" k "\""; cmd | getline name; close(cmd); gsub(/parbench::cuda_kernels::/, "", name)
    sub(/^void /, "", name); sub(/\(.*$/, "", name)  # the name and template arguments, not the parameters
    if (!(k in has)) { printf "FAIL %s: not in the objects given for %s (%s)\n", name, arch, k; bad++; next }
    why = ""; line = ""
    for (i = 2; i <= NF; ++i) { c = ops[k " " $i] + 0; line = line sprintf("%s %d ", $i, c); if (c == 0) why = why " no " $i ";" }
    ldl = ops[k " LDL"] + 0; stl = ops[k " STL"] + 0
    if (stack[k] != "0") why = why " stack frame " stack[k] " bytes;"
    if (local_[k] != "0") why = why " local memory " local_[k] " bytes;"
    if (ldl + stl > 0) why = why " " ldl " LDL and " stl " STL (local loads and stores: spills or a local array);"
    printf "%s %s: %s| REG %s STACK %s LOCAL %s LDL %d STL %d%s\n", (why == "" ? "PASS" : "FAIL"), name, line,
           regs[k], stack[k], local_[k], ldl, stl, (why == "" ? "" : " --" why)
    if (why != "") bad++
    ++n
  }
  END { if (n + bad == 0) { print "FAIL: the table lists no kernels"; exit 1 } exit bad > 0 }
' "$tmp/ops.txt" "$tmp/res_by_fn.txt" "$table" || { echo "sass_check: FAILED against $table" >&2; exit 1; }
echo "sass_check: every kernel in $table passes" >&2
