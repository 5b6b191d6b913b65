#!/usr/bin/env bash
# Runs one command on the emulated GPU under several stream-timing fuzz seeds (PARBENCH_EMU_DELAY=random:SEED);
# fails naming the seed whose run failed. Usage: run_seeds.sh "1 2 3" command args...
set -u
seeds=$1
shift
status=0
for seed in $seeds; do
  if ! out=$(PARBENCH_EMU_DELAY=random:$seed "$@" 2>&1); then
    echo "FAILED under PARBENCH_EMU_DELAY=random:$seed: $*"
    echo "$out" | tail -40
    status=1
  else
    echo "ok under random:$seed: $(echo "$out" | tail -1)"
  fi
done
exit $status
