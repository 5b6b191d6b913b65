#!/usr/bin/env bash
# Runs one parbench program once per rank count and concatenates the CSVs under one header, then plots them.
#   scripts/sweep.sh [--ranks 1,2,4,8] [--out DIR] [--name NAME] [--threads] [--no-plot] PROGRAM [ARGS...]
# PROGRAM is a name in build/bin (bench_allreduce and friends, bench_train) or a path. With mpirun on PATH each
# count runs as `mpirun -np N` (with --oversubscribe, and --allow-run-as-root as root); --threads or no mpirun
# runs `PROGRAM --ranks N` instead. Results: DIR/NAME.csv (default results/sweep/PROGRAM.csv) and its figures.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ranks=1,2,4,8 out=results/sweep name="" threads=0 plot=1
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?--ranks needs a list like 1,2,4}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --name) name=${2:?--name needs a name}; shift 2 ;;
    --threads) threads=1; shift ;;
    --no-plot) plot=0; shift ;;
    -h|--help) usage ;;
    --*) echo "sweep.sh: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "sweep.sh: no program given" >&2; usage; }
prog=$1; shift
[ -x "$prog" ] || prog="$here/build/bin/$prog"
[ -x "$prog" ] || { echo "sweep.sh: no program '$1' (build first: scripts/build.sh)" >&2; exit 2; }
base=$(basename "$prog")
name=${name:-$base}
[[ "$ranks" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "sweep.sh: --ranks '$ranks' is not a list like 1,2,4,8" >&2; exit 2; }
mkdir -p "$out"
csv="$out/$name.csv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

launcher=()
if [ $threads -eq 0 ] && command -v mpirun >/dev/null 2>&1; then
  launcher=(mpirun --oversubscribe)
  [ "$(id -u)" -ne 0 ] || launcher+=(--allow-run-as-root)
fi
for n in ${ranks//,/ }; do
  [ -t 2 ] && echo "sweep.sh: $base on $n rank(s)" >&2
  if [ ${#launcher[@]} -gt 0 ]; then
    "${launcher[@]}" -np "$n" "$prog" "$@" --quiet --csv "$tmp/$n.csv"
  else
    "$prog" --ranks "$n" "$@" --quiet --csv "$tmp/$n.csv"
  fi
done

# One header: the first file's; every other file must have the same one.
first=""
for n in ${ranks//,/ }; do
  f="$tmp/$n.csv"
  if [ -z "$first" ]; then first=$f; head -n 1 "$f" > "$tmp/all.csv"; fi
  if [ "$(head -n 1 "$f")" != "$(head -n 1 "$first")" ]; then
    echo "sweep.sh: $n ranks wrote other columns than the first run" >&2; exit 1
  fi
  tail -n +2 "$f" >> "$tmp/all.csv"
done
mv "$tmp/all.csv" "$csv"
echo "sweep.sh: wrote $csv"

[ $plot -eq 1 ] || exit 0
plot="$here/build/bin/parbench-plot"
case "$base" in
  bench_train)
    "$plot" scaling -i "$csv" -o "$out/$name-scaling.png"
    "$plot" memory -i "$csv" -o "$out/$name-memory.png"
    echo "sweep.sh: wrote $out/$name-scaling.png $out/$name-memory.png" ;;
  bench_*)
    "$plot" busbw -i "$csv" -o "$out/$name-busbw.png"
    "$plot" latency -i "$csv" -o "$out/$name-latency.png"
    echo "sweep.sh: wrote $out/$name-busbw.png $out/$name-latency.png" ;;
esac
