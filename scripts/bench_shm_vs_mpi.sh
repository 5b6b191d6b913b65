#!/usr/bin/env bash
# Allreduce on one node: OpenMPI's MPI_Allreduce beside our hand-written algorithms over our shared-memory transport,
# as busbw ratios (our best algorithm at each size over MPI's), medians over rounds.
#   scripts/bench_shm_vs_mpi.sh [--ranks 2,4] [--rounds 3] [--impl ring,rd,rhd] [--mode job|apart]
#                               [--transport shm|mpi] [--sizes 8,4K,64K,1M,16M,64M] [--bin DIR] [--csv FILE]
# --mode job (default): one mpirun job per size measures both: PARBENCH_HOST_TRANSPORT=shm gives the hand-written
# algorithms the tcp bootstrap's shared-memory rings while `mpi` is OpenMPI's own allreduce in the same processes;
# --transport mpi leaves ours on MPI's point-to-point instead (what our per-message path costs over MPI's).
# --mode apart: mpirun runs `mpi`, then the same processes are started with torchrun's variables (the tcp bootstrap)
# for ours, back to back (for builds without PARBENCH_HOST_TRANSPORT). Each size runs for tens of milliseconds or
# more (cpu device, out of place, the data check on).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ranks=2,4 rounds=3 impls=ring,rd,rhd mode=job transport=shm sizes=8,4K,64K,1M,16M,64M bin="$here/build/bin" csv_out=""
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?--ranks needs a list like 2,4}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a count}; shift 2 ;;
    --impl) impls=${2:?--impl needs a list like ring,rd}; shift 2 ;;
    --mode) mode=${2:?--mode needs job or apart}; shift 2 ;;
    --transport) transport=${2:?--transport needs shm or mpi}; shift 2 ;;
    --sizes) sizes=${2:?--sizes needs a list like 8,64K}; shift 2 ;;
    --bin) bin=${2:?--bin needs the folder holding bench_allreduce}; shift 2 ;;
    --csv) csv_out=${2:?--csv needs a file}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "bench_shm_vs_mpi.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$ranks" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "bench_shm_vs_mpi.sh: --ranks '$ranks' is not a list like 2,4" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_shm_vs_mpi.sh: --rounds '$rounds' is not a count" >&2; exit 2; }
[[ "$impls" =~ ^[a-z]+(,[a-z]+)*$ ]] || { echo "bench_shm_vs_mpi.sh: --impl '$impls' is not a list" >&2; exit 2; }
[[ "$sizes" =~ ^[0-9]+[KM]?(,[0-9]+[KM]?)*$ ]] || { echo "bench_shm_vs_mpi.sh: --sizes '$sizes' is not a list like 8,64K,16M" >&2; exit 2; }
case "$mode" in job|apart) ;; *) echo "bench_shm_vs_mpi.sh: --mode '$mode' is not job or apart" >&2; exit 2 ;; esac
case "$transport" in shm|mpi) ;; *) echo "bench_shm_vs_mpi.sh: --transport '$transport' is not shm or mpi" >&2; exit 2 ;; esac
[ "$mode" = job ] || [ "$transport" = shm ] ||
  { echo "bench_shm_vs_mpi.sh: --transport mpi needs --mode job (apart starts ours without MPI)" >&2; exit 2; }
bench="$bin/bench_allreduce"
[ -x "$bench" ] || { echo "bench_shm_vs_mpi.sh: no $bench (build first: scripts/build.sh)" >&2; exit 2; }
command -v mpirun >/dev/null 2>&1 || { echo "bench_shm_vs_mpi.sh: needs mpirun on PATH" >&2; exit 2; }
mpirun_cmd=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -ne 0 ] || mpirun_cmd+=(--allow-run-as-root)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
all="$tmp/all.csv"  # round,<bench_allreduce's CSV columns>
: >"$all"

# iterations SIZE: timed iterations and warm-ups, so that each size runs for tens of milliseconds or more.
iterations() {
  local b=$1
  case "$b" in *K) b=$((${b%K} * 1024)) ;; *M) b=$((${b%M} * 1048576)) ;; esac
  if [ "$b" -le 4096 ]; then echo "4000 200"; elif [ "$b" -le 65536 ]; then echo "500 20";
  elif [ "$b" -le 1048576 ]; then echo "60 4"; elif [ "$b" -le 16777216 ]; then echo "4 1"; else echo "2 1"; fi
}

# torchrun N ARGS...: N processes with torchrun's variables (the tcp bootstrap), waiting for all.
torchrun() {
  local n=$1 port pids=() rc=0
  shift
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RUN_ID=shm-vs-mpi-$port \
      "$@" >"$tmp/log.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  cat "$tmp"/log.* >"$tmp/log"
  return $rc
}

# measure ROUND N SIZE: rows appended to $all.
measure() {
  local round=$1 n=$2 size=$3 iters warm
  read -r iters warm <<<"$(iterations "$size")"
  local args=(--device cpu --inplace off --quiet --sizes "$size" -n "$iters" -w "$warm" --csv "$tmp/one.csv")
  if [ "$mode" = job ]; then
    PARBENCH_HOST_TRANSPORT=$transport "${mpirun_cmd[@]}" -np "$n" "$bench" "${args[@]}" --impl "mpi,$impls" >"$tmp/log" 2>&1 ||
      { cat "$tmp/log" >&2; echo "bench_shm_vs_mpi.sh: $n ranks, $size failed" >&2; exit 1; }
    tail -n +2 "$tmp/one.csv" | sed "s/^/$round,/" >>"$all"
  else
    "${mpirun_cmd[@]}" -np "$n" "$bench" "${args[@]}" --impl mpi >"$tmp/log" 2>&1 ||
      { cat "$tmp/log" >&2; echo "bench_shm_vs_mpi.sh: mpirun $n ranks, $size failed" >&2; exit 1; }
    tail -n +2 "$tmp/one.csv" | sed "s/^/$round,/" >>"$all"
    torchrun "$n" "$bench" "${args[@]}" --impl "$impls" ||
      { cat "$tmp/log" >&2; echo "bench_shm_vs_mpi.sh: tcp bootstrap $n ranks, $size failed" >&2; exit 1; }
    tail -n +2 "$tmp/one.csv" | sed "s/^/$round,/" >>"$all"
  fi
}

for round in $(seq 1 "$rounds"); do
  for n in ${ranks//,/ }; do
    echo "# round $round/$rounds: $n ranks" >&2
    for size in ${sizes//,/ }; do measure "$round" "$n" "$size"; done
  done
done
[ -z "$csv_out" ] || { echo "round,$(head -1 "$tmp/one.csv")" >"$csv_out"; cat "$all" >>"$csv_out"; }

# Per (ranks, bytes): MPI's time, our best algorithm's (the fastest of each round) and the busbw ratio (ours over
# MPI's: the same bytes, so MPI's time over ours), each the median over rounds. CSV columns after round:
# collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong,
# expected_us,pct_expected and the --outliers columns.
awk -F, "$(cat "$here/scripts/lib/medians.awk")"'
  {
    key = $5 SUBSEP $11; r = $1
    if (!(key in seen)) { seen[key] = 1; order[++rows] = key }
    if ($3 == "mpi") mpit[key, r] = $13
    else if (!((key, r) in bestt) || $13 + 0 < bestt[key, r] + 0) { bestt[key, r] = $13; besti[key, r] = $3 }
    if (!((key, r) in rounds_of)) { rounds_of[key, r] = 1; rl[key] = rl[key] " " r }
    if ($16 != 0) wrong = wrong " " $5 "/" $11 "/" $3
  }
  END {
    printf "| ranks | size | MPI_Allreduce (us) | ours (us) | fastest of ours | busbw ratio ours/MPI |\n"
    printf "|---|---|---|---|---|---|\n"
    for (i = 1; i <= rows; i++) {
      key = order[i]; split(key, f, SUBSEP)
      q = ""; mt = ""; ot = ""; names = ""
      k = split(rl[key], rs, " ")
      for (j = 1; j <= k; j++) {
        r = rs[j]
        if (!((key, r) in mpit) || !((key, r) in bestt)) continue
        mt = mt " " mpit[key, r]; ot = ot " " bestt[key, r]
        q = q " " (bestt[key, r] > 0 ? mpit[key, r] / bestt[key, r] : 0)
        if (index("/" names "/", "/" besti[key, r] "/") == 0) names = names (names == "" ? "" : "/") besti[key, r]
      }
      if (q == "") continue
      printf "| %s | %s | %.1f | %.1f | %s | %.2f |\n", f[1], size_name(f[2]), median(mt), median(ot), names, median(q)
    }
    if (wrong != "") { print "wrong results in:" wrong > "/dev/stderr"; exit 1 }
  }' < <(sort -t, -k5,5n -k11,11n "$all")
