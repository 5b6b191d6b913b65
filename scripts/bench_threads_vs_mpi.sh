#!/usr/bin/env bash
# Allreduce over the threads transport (bench_allreduce --ranks N) beside the same algorithms over OpenMPI
# processes (mpirun -np N bench_allreduce), side by side in one run, as one table of medians over rounds.
#   scripts/bench_threads_vs_mpi.sh [--ranks 2,4,8] [--threads-only 16,32] [--rounds 3] [--impl ring,rd]
#                                   [--bin DIR] [--csv FILE]
# Every round runs each rank count over threads, then over mpirun, so load from elsewhere falls on both alike.
# Each size runs long enough (tens of milliseconds or more) that a shared machine's scheduling noise averages
# out: 8 B 40000/N timed iterations, 64 KiB 4000/N, 16 MiB 20 (cpu device, out-of-place). The mpirun column also shows OpenMPI's own allreduce (impl mpi)
# for reference. Without mpirun only the threads column is filled.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ranks=2,4,8 threads_only=16,32 rounds=3 impls=ring,rd bin="$here/build/bin" csv_out=""
usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
list_ok() { [[ "$1" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?--ranks needs a list like 2,4,8}; shift 2 ;;
    --threads-only) threads_only=${2?--threads-only needs a list like 16,32 (or '')}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a count}; shift 2 ;;
    --impl) impls=${2:?--impl needs a list like ring,rd}; shift 2 ;;
    --bin) bin=${2:?--bin needs the folder holding bench_allreduce}; shift 2 ;;
    --csv) csv_out=${2:?--csv needs a file}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "bench_threads_vs_mpi.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
list_ok "$ranks" || { echo "bench_threads_vs_mpi.sh: --ranks '$ranks' is not a list like 2,4,8" >&2; exit 2; }
[ -z "$threads_only" ] || list_ok "$threads_only" ||
  { echo "bench_threads_vs_mpi.sh: --threads-only '$threads_only' is not a list like 16,32" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_threads_vs_mpi.sh: --rounds '$rounds' is not a count" >&2; exit 2; }
[[ "$impls" =~ ^[a-z]+(,[a-z]+)*$ ]] || { echo "bench_threads_vs_mpi.sh: --impl '$impls' is not a list" >&2; exit 2; }
bench="$bin/bench_allreduce"
[ -x "$bench" ] || { echo "bench_threads_vs_mpi.sh: no $bench (build first: scripts/build.sh)" >&2; exit 2; }

mpirun_cmd=()
if command -v mpirun >/dev/null 2>&1; then
  mpirun_cmd=(mpirun --oversubscribe)
  [ "$(id -u)" -ne 0 ] || mpirun_cmd+=(--allow-run-as-root)
else
  echo "# no mpirun on PATH: threads only" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
all="$tmp/all.csv"  # transport,round,<bench_allreduce's CSV columns>
common=(--device cpu --inplace off --quiet)

# run TRANSPORT ROUND IMPLS N: both size classes, rows appended to $all.
run() {
  local transport=$1 round=$2 impl=$3 n=$4 sizes iters warm
  local cmd=("$bench" "${common[@]}" --impl "$impl")
  if [ "$transport" = threads ]; then cmd+=(--ranks "$n"); else cmd=("${mpirun_cmd[@]}" -np "$n" "${cmd[@]}"); fi
  for part in "8 $((40000 / n)) 200" "64K $((4000 / n)) 20" "16M 20 2"; do
    read -r sizes iters warm <<<"$part"
    "${cmd[@]}" --sizes "$sizes" -n "$iters" -w "$warm" --csv "$tmp/one.csv" >"$tmp/log" 2>&1 ||
      { cat "$tmp/log" >&2; echo "bench_threads_vs_mpi.sh: $transport with $n ranks failed" >&2; exit 1; }
    tail -n +2 "$tmp/one.csv" | sed "s/^/$transport,$round,/" >>"$all"
  done
}

: >"$all"
for round in $(seq 1 "$rounds"); do
  for n in ${ranks//,/ }; do
    echo "# round $round/$rounds: $n ranks" >&2
    run threads "$round" "$impls" "$n"
    [ ${#mpirun_cmd[@]} -eq 0 ] || run mpirun "$round" "$impls,mpi" "$n"
  done
  for n in ${threads_only//,/ }; do
    echo "# round $round/$rounds: $n ranks (threads only)" >&2
    run threads "$round" "$impls" "$n"
  done
done
[ -z "$csv_out" ] || { echo "transport,round,$(head -1 "$tmp/one.csv")" >"$csv_out"; cat "$all" >>"$csv_out"; }

# Medians over rounds of time (us) and busbw (GB/s) per (impl, ranks, bytes, transport), one line per
# (impl, ranks, bytes). CSV columns after transport,round: collective,impl,device,ranks,nodes,dtype,op,root,
# inplace,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong,expected_us,pct_expected and the --outliers columns.
awk -F, "$(cat "$here/scripts/lib/medians.awk")"'
  {
    key = $4 SUBSEP $6 SUBSEP $12
    if (!(key in seen)) { seen[key] = 1; order[++rows] = key }
    time[key, $1] = time[key, $1] " " $14; bus[key, $1] = bus[key, $1] " " $16
    if ($17 != 0) wrong = wrong " " $4 "/" $6 "/" $12 "/" $1
  }
  END {
    printf "| impl | ranks | size | threads time (us) | mpirun time (us) | threads busbw (GB/s) | mpirun busbw (GB/s) |\n"
    printf "|---|---|---|---|---|---|---|\n"
    for (r = 1; r <= rows; r++) {
      split(order[r], f, SUBSEP)
      tt = (order[r], "threads") in time ? sprintf("%.1f", median(time[order[r], "threads"])) : "-"
      mt = (order[r], "mpirun") in time ? sprintf("%.1f", median(time[order[r], "mpirun"])) : "-"
      tb = (order[r], "threads") in bus ? sprintf("%.3f", median(bus[order[r], "threads"])) : "-"
      mb = (order[r], "mpirun") in bus ? sprintf("%.3f", median(bus[order[r], "mpirun"])) : "-"
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], size_name(f[3]), tt, mt, tb, mb
    }
    if (wrong != "") { print "wrong results in:" wrong > "/dev/stderr"; exit 1 }
  }' < <(sort -t, -k4,4 -k6,6n -k12,12n "$all")
