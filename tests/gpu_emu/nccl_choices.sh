#!/usr/bin/env bash
# --nccl-algo/--nccl-proto on the emulated GPU: a block per choice beside NCCL's own, each with its data check
# clean; the choices NCCL rejects for the collective (PAT and Tree where the emulated GPU has neither) named as not
# run with NCCL's message, the others' rows in the CSV under their labels; a collective nccl runs as sends refused
# with the reason. Usage: nccl_choices.sh BIN_DIR [MPIEXEC]
set -eu
bin=$1 mpiexec=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# impls CSV: the implementation column's distinct values, sorted, space-separated; every row's wrong is 0.
impls() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "impl") c = i; if ($i == "wrong") w = i } ; next }
           $w != "0" { print "wrong elements in " $0 > "/dev/stderr"; bad = 1 }
           { seen[$c] = 1 } END { for (k in seen) print k; exit bad }' "$1" | sort | tr '\n' ' '
}

check_allreduce() {  # check_allreduce NAME RANKS_OPTION [launcher args...]
  local name=$1 ranks=$2
  shift 2
  "$@" "$bin/bench_allreduce" $ranks --device cuda --impl nccl --nccl-algo ring,tree,pat --nccl-proto ll,Simple \
    --sizes 1K,64K -n 2 -w 1 --timeout 60 --csv "$tmp/$name.csv" >"$tmp/$name.out" 2>&1 ||
    { cat "$tmp/$name.out"; fail "$name: exit $?"; }
  local got
  got=$(impls "$tmp/$name.csv")
  [ "$got" = "nccl nccl/Ring/LL nccl/Ring/Simple nccl/Tree/LL nccl/Tree/Simple " ] || fail "$name: rows of '$got'"
  for p in LL Simple; do
    grep -q "^# nccl/PAT/$p: not run: NCCL: ncclAllReduce: no algorithm/protocol available for function AllReduce" \
      "$tmp/$name.out" || { cat "$tmp/$name.out"; fail "$name: PAT/$p not refused with NCCL's message"; }
  done
  echo "$name: rows of $got; PAT refused"
}

check_allreduce threads "--ranks 2"
if [ -n "$mpiexec" ]; then check_allreduce mpirun "" "$mpiexec" --allow-run-as-root --oversubscribe -np 2; fi

# allgather has Ring only: Tree refused, Ring run; one list alone leaves the other to NCCL ("auto").
"$bin/bench_allgather" --device cuda --ranks 2 --impl nccl --nccl-algo tree,ring --sizes 1K -n 1 -w 0 \
  --csv "$tmp/ag.csv" >"$tmp/ag.out" 2>&1 || { cat "$tmp/ag.out"; fail "allgather: exit $?"; }
grep -q "^# nccl/Tree/auto: not run: NCCL: ncclAllGather: no algorithm/protocol available for function AllGather" \
  "$tmp/ag.out" || { cat "$tmp/ag.out"; fail "allgather: Tree not refused"; }
[ "$(impls "$tmp/ag.csv")" = "nccl nccl/Ring/auto " ] || fail "allgather: rows of '$(impls "$tmp/ag.csv")'"
# gather runs as sends and receives: nothing to choose.
"$bin/bench_gather" --device cuda --ranks 2 --impl nccl --nccl-proto LL --sizes 1K -n 1 -w 0 >"$tmp/g.out" 2>&1 ||
  { cat "$tmp/g.out"; fail "gather: exit $?"; }
grep -q "^# nccl/auto/LL: not run: nccl runs gather as ncclSend/ncclRecv" "$tmp/g.out" ||
  { cat "$tmp/g.out"; fail "gather: no reason"; }
echo "allgather: Tree refused, Ring run; gather: refused as sends"
