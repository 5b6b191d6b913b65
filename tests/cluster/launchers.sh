#!/usr/bin/env bash
# Real launchers across two emulated nodes (scripts/fake_cluster.sh), 2 ranks on each: every host-driven
# collective implementation with its data check, and bench_train --check under ddp and under a hybrid whose
# pipeline stages sit on different nodes. The header must say 2 nodes, each rank's node-local place must be right
# and the transport shared memory inside a node and TCP across. Exit 77 (skipped) with the reason where no cluster
# can be made or the launcher is missing.
# usage: launchers.sh SOURCE_DIR BIN_DIR LAUNCHER     LAUNCHER: mpirun | torchrun | srun
root=$1
bin=$2
launcher=$3
source "$root/tests/cluster/cluster_lib.sh"

lib=""  # the launcher's own library, beside the hand-written implementations
sweep=(-b 8 -e 1M -f 8 -n 2 -w 1 --device cpu -T 60)
rows=12  # per implementation: 6 sizes (8 B .. 256 KiB), out of place and in place
train=(--device cpu --model gpt --hidden 16 --heads 2 --seq 6 --vocab 24 --optimizer sgd --lr 0.1 --steps 3
  --warmup 0 --check --check-tolerance 1e-5 --timeout 60 --layers 4 --global-batch 8)
header="4 rank(s) on 2 node(s) ($launcher"

case $launcher in
  mpirun)
    command -v mpirun >/dev/null || { echo "mpirun not found (Debian: openmpi-bin)"; exit 77; }
    start() {  # start NAME PROGRAM ARGS...: one job of 2 x 2 ranks; rank 0's output in $out/NAME
      local name=$1
      shift
      mpirun_cluster 4 2 -x PARBENCH_HOST_TRANSPORT=shm "$@" >"$out/$name" 2>&1
    }
    lib=mpi,
    ;;
  torchrun)
    torchrun_bin >/dev/null || exit 77
    start() {
      local name=$1
      shift
      local rc=0
      torchrun_cluster "$name" 2 180 "$@" || rc=$?
      cat "$out/$name".node* >"$out/$name"  # rank 0 runs on whichever node the rendezvous made first
      return "$rc"
    }
    ;;
  srun)
    source "$root/tests/cluster/slurm_lib.sh"
    start() {
      local name=$1
      shift
      srun_cluster -N 2 -n 4 "$@" >"$out/$name" 2>&1
    }
    ;;
  *) echo "launcher '$launcher': expected mpirun, torchrun or srun"; exit 2 ;;
esac

cluster_up 2
[ "$launcher" != srun ] || slurm_up

# Every host-driven implementation is asked for; the rows are those of the ones that implement the collective.
for entry in allreduce:naive,tree,ring,rd,rhd,hier allgather:naive,ring,rd,rhd,hier broadcast:naive,tree,ring,hier; do
  c=${entry%%:*} name=$launcher-${entry%%:*}
  start "$name" "$bin/bench_$c" "${sweep[@]}" --impl "${lib}naive,tree,ring,rd,rhd,hier" --csv "$out/$name.csv" ||
    fail "$name exited non-zero"
  expect_in "$name" "$out/$name" "$header"
  expect_in "$name" "$out/$name" "transport shm+tcp"
  expect_placement "$name" "$out/$name" 2 2
  expect_clean_rows "$name" "$out/$name.csv" "$lib${entry#*:}" "$rows"
done

start "$launcher-ddp" "$bin/bench_train" "${train[@]}" --scheme ddp || fail "$launcher-ddp exited non-zero"
expect_in "$launcher-ddp" "$out/$launcher-ddp" "launch: $header"
expect_in "$launcher-ddp" "$out/$launcher-ddp" "diff_vs_single"
# Megatron's order puts the data-parallel pairs inside a node and the two pipeline stages on different nodes.
start "$launcher-hybrid" "$bin/bench_train" "${train[@]}" --scheme hybrid --dp 2 --pp 2 --microbatches 2 ||
  fail "$launcher-hybrid exited non-zero"
expect_in "$launcher-hybrid" "$out/$launcher-hybrid" "launch: $header"
expect_re "$launcher-hybrid" "$out/$launcher-hybrid" "^hybrid +1f1b +2\.1\.2 "

# The sbatch script of docs/cluster.md as it stands there, on the cpu device, from a folder whose build/ is this one.
if [ "$launcher" = srun ]; then
  mkdir -p "$out/job"
  ln -s "$(dirname "$bin")" "$out/job/build"
  python3 - "$root/docs/cluster.md" >"$out/job/allreduce.sbatch" <<'EOF'
import re, sys
blocks = re.findall(r"```bash\n(.*?)```", open(sys.argv[1]).read(), re.S)
print(next(b for b in blocks if "#SBATCH" in b).replace("--device cuda", "--device cpu"), end="")
EOF
  on 0 timeout 300 sbatch --wait --chdir="$out/job" -o "$out/sbatch" "$out/job/allreduce.sbatch" >/dev/null ||
    fail "the docs' sbatch script failed"
  expect_in sbatch "$out/sbatch" "4 rank(s) on 2 node(s) (srun, tcp bootstrap)"
  expect_in sbatch "$out/sbatch" "# Out of bounds values : 0 OK"
  slurm_down
fi
nothing_left "$launcher"
finish
