#!/usr/bin/env bash
# Launches without MPI, as torchrun and srun start ranks: N processes with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT
# (or SLURM_*) set by hand. Collectives with their data check, bench_train with --check, and bad launches that must
# end within their timeout with the error named.
# usage: launch_tcp.sh BIN_DIR CASE
#   CASE: collectives | train | bad-input | bad-rendezvous | store-intruders | mpirun-shm | emu-nccl
set -uo pipefail
bin=$1
case_name=$2
out=$(mktemp -d); echo "logs: $out"
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_torchrun NAME N PORT WORLD PROGRAM ARGS...: ranks 0..N-1 of WORLD, in the background; logs $out/NAME.R
run_torchrun() {
  local name=$1 n=$2 port=$3 world=$4
  shift 4
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r LOCAL_WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      TORCHELASTIC_RUN_ID=test-$port timeout 120 "$@" >"$out/$name.$r" 2>&1 &
    pids[$r]=$!
  done
}

# wait_ranks NAME N EXPECTED_RC: every rank's exit status must be EXPECTED_RC.
wait_ranks() {
  local name=$1 n=$2 want=$3
  for ((r = 0; r < n; r++)); do
    wait "${pids[$r]}"
    local rc=$?
    [ "$rc" = "$want" ] || { fail "$name rank $r exited $rc, expected $want"; cat "$out/$name.$r"; }
  done
}

within() {  # within SECONDS START WHAT: what began at START (bash's $SECONDS) ended within SECONDS
  [ $((SECONDS - $2)) -le "$1" ] || fail "$3 took $((SECONDS - $2)) s, expected at most $1 s"
}

expect_in() {  # expect_in NAME FILE TEXT
  grep -qF -- "$3" "$2" || { fail "$1: '$3' not in $(basename "$2")"; cat "$2"; }
}

collectives() {
  local sweep=(-b 8 -e 256K -f 8 -n 2 -w 1 --device cpu -T 30 --impl naive,tree,ring,rd,rhd)
  for n in 2 4; do
    for c in allreduce allgather reducescatter; do
      local name=torchrun-$c-$n
      run_torchrun "$name" "$n" "$(free_port)" "$n" "$bin/bench_$c" "${sweep[@]}"
      wait_ranks "$name" "$n" 0
      expect_in "$name" "$out/$name.0" "$n rank(s) on 1 node(s) (torchrun, tcp bootstrap)"
      expect_in "$name" "$out/$name.0" "transport shm"  # one node: shared-memory rings
      expect_in "$name" "$out/$name.0" "# Out of bounds values : 0 OK"
      local impls rows
      impls=$(grep -c '^# impl: ' "$out/$name.0")
      rows=$(grep -c '^ *[0-9]' "$out/$name.0")
      [ "$impls" -ge 3 ] && [ "$rows" = $((impls * 6)) ] || fail "$name: $rows rows of $impls implementations, expected 6 sizes each"
    done
  done
  # The sockets alone (PARBENCH_SHM=off), as between nodes.
  PARBENCH_SHM=off run_torchrun sockets 3 "$(free_port)" 3 "$bin/bench_allreduce" "${sweep[@]}"
  wait_ranks sockets 3 0
  expect_in sockets "$out/sockets.0" "transport tcp"
  expect_in sockets "$out/sockets.0" "# Out of bounds values : 0 OK"
  # srun's variables: the store on the node list's first host, its port from the job id.
  local port
  port=$(free_port)
  for r in 0 1 2; do
    SLURM_PROCID=$r SLURM_NTASKS=3 SLURM_LOCALID=$r SLURM_NODEID=0 SLURM_JOB_NODELIST='localhost,node[02-03]' \
      SLURM_JOB_ID=$((port - 20000)) timeout 120 "$bin/bench_allreduce" "${sweep[@]}" >"$out/srun.$r" 2>&1 &
    pids[$r]=$!
  done
  wait_ranks srun 3 0
  expect_in srun "$out/srun.0" "3 rank(s) on 1 node(s) (srun, tcp bootstrap)"
  expect_in srun "$out/srun.0" "# Out of bounds values : 0 OK"
  # The MPI library's collectives say why they cannot run here.
  run_torchrun no-mpi 2 "$(free_port)" 2 "$bin/bench_allreduce" -b 8 -e 8 --device cpu -T 30 --impl mpi
  wait_ranks no-mpi 2 2  # nothing asked for can run: a usage error
  expect_in no-mpi "$out/no-mpi.0" "needs MPI: launched with the tcp bootstrap (torchrun)"
}

train() {
  local common=(--device cpu --model gpt --hidden 16 --heads 2 --seq 6 --vocab 24 --optimizer sgd --lr 0.1
    --steps 3 --warmup 0 --check --check-tolerance 1e-5 --timeout 60 --layers 4 --global-batch 8)
  run_torchrun train-ddp 2 "$(free_port)" 2 "$bin/bench_train" "${common[@]}" --scheme ddp
  wait_ranks train-ddp 2 0
  expect_in train-ddp "$out/train-ddp.0" "diff_vs_single"
  expect_in train-ddp "$out/train-ddp.0" "launch: 2 rank(s) on 1 node(s) (torchrun, tcp bootstrap), device cpu, transport shm"
  run_torchrun train-pp 4 "$(free_port)" 4 "$bin/bench_train" "${common[@]}" --scheme pp --schedule 1f1b \
    --microbatches 4
  wait_ranks train-pp 4 0
  expect_in train-pp "$out/train-pp.0" "diff_vs_single"
  # Sub-groups (tensor- and pipeline-parallel splits of the world) over the same connections.
  run_torchrun train-hybrid 4 "$(free_port)" 4 "$bin/bench_train" "${common[@]}" --scheme hybrid --tp 2 --pp 2 \
    --microbatches 2
  wait_ranks train-hybrid 4 0
  expect_in train-hybrid "$out/train-hybrid.0" "diff_vs_single"
}

# The emulated GPU build: NCCL's id through the store (the emulated NCCL meets in shared memory named after it),
# with the hand-written algorithms beside it, and bench_train's NCCL path.
emu_nccl() {
  for n in 2 4; do
    run_torchrun "nccl-$n" "$n" "$(free_port)" "$n" "$bin/bench_allreduce" -b 8 -e 256K -f 8 -n 2 -w 1 \
      --device cuda -T 60 --impl nccl,ring
    wait_ranks "nccl-$n" "$n" 0
    expect_in "nccl-$n" "$out/nccl-$n.0" "$n rank(s) on 1 node(s) (torchrun, tcp bootstrap), device cuda:0, transport nccl"
    expect_in "nccl-$n" "$out/nccl-$n.0" "# impl: nccl"
    expect_in "nccl-$n" "$out/nccl-$n.0" "# impl: ring"
    [ "$(grep -c '^# Out of bounds values : 0 OK' "$out/nccl-$n.0")" = 2 ] || fail "nccl-$n: not both checked clean"
  done
  local common=(--device cuda --model gpt --hidden 16 --heads 2 --seq 6 --vocab 24 --optimizer sgd --lr 0.1
    --steps 3 --warmup 0 --check --check-tolerance 1e-5 --timeout 60 --layers 4 --global-batch 8)
  run_torchrun emu-ddp 2 "$(free_port)" 2 "$bin/bench_train" "${common[@]}" --scheme ddp
  wait_ranks emu-ddp 2 0
  expect_in emu-ddp "$out/emu-ddp.0" "diff_vs_single"
  run_torchrun emu-pp 2 "$(free_port)" 2 "$bin/bench_train" "${common[@]}" --scheme pp --schedule 1f1b \
    --microbatches 4
  wait_ranks emu-pp 2 0
  expect_in emu-pp "$out/emu-pp.0" "diff_vs_single"
}

# expect_usage NAME TEXT ENV...: a single process with ENV exits 2 naming TEXT.
expect_usage() {
  local name=$1 text=$2
  shift 2
  env "$@" timeout 60 "$bin/bench_allreduce" -b 8 -e 8 --device cpu -T 5 >"$out/$name" 2>&1
  local rc=$?
  [ "$rc" = 2 ] || { fail "$name exited $rc, expected 2"; cat "$out/$name"; }
  expect_in "$name" "$out/$name" "$text"
}

bad_input() {
  expect_usage rank-text "RANK='one' (set by torchrun): expected an integer from 0 to 1" \
    RANK=one WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500
  expect_usage rank-high "RANK='2' (set by torchrun): expected an integer from 0 to 1 (below WORLD_SIZE=2)" \
    RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500
  expect_usage no-port "MASTER_PORT is not set" RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1
  expect_usage bad-port "MASTER_PORT='http' (set by torchrun): expected an integer from 1 to 65535" \
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=http
  expect_usage bad-nodelist "SLURM_JOB_NODELIST='node[01-03': a '[' without its ']'" \
    SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_JOB_ID=7 'SLURM_JOB_NODELIST=node[01-03'
  env timeout 60 "$bin/bench_allreduce" --bootstrap tcp -b 8 -e 8 --device cpu >"$out/tcp-alone" 2>&1
  [ $? = 2 ] || fail "--bootstrap tcp without a launcher's variables did not exit 2"
  expect_in tcp-alone "$out/tcp-alone" "--bootstrap tcp needs a launcher's variables: RANK, WORLD_SIZE"
  if [ -n "${NO_MPI:-}" ]; then  # a build without MPI under mpirun's variables says what to do instead
    expect_usage mpirun-without-mpi "but this build has no MPI; rebuild with PARBENCH_MPI=ON, launch with torchrun" \
      OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0
  fi
  env timeout 60 "$bin/bench_allreduce" --bootstrap ssh -b 8 -e 8 --device cpu >"$out/bootstrap-name" 2>&1
  [ $? = 2 ] || fail "--bootstrap ssh did not exit 2"
  expect_in bootstrap-name "$out/bootstrap-name" "--bootstrap"
}

# Each run must end with status 1 and the error named, within a few seconds of its 3 s timeout (however loaded the
# machine, well before the harness's 120 s).
bad_rendezvous() {
  local t=(-b 8 -e 8 --device cpu -T 3)
  local start=$SECONDS
  # torchrun's agent holds MASTER_PORT with torch's own store (a listener here stands for it): with
  # TORCHELASTIC_USE_AGENT_STORE=True ours takes the next port; rank 0 alone with the port taken and no such
  # variable is refused at once, naming where the port came from and the way out.
  # The holder picks its port and keeps it from then on (a port found free and bound again later can be taken by
  # any socket in between), one whose next port is free for the agent's case.
  local held="" holder
  python3 -c 'import socket, time
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    try:
        t = socket.socket(); t.bind(("127.0.0.1", p + 1)); t.close(); break
    except OSError:
        s.close()
s.listen(); print(p, flush=True); time.sleep(60)' >"$out/held-port" &
  holder=$!
  for _ in $(seq 50); do held=$(cat "$out/held-port"); [ -z "$held" ] || break; sleep 0.1; done
  [ -n "$held" ] || fail "the port holder did not start"
  TORCHELASTIC_USE_AGENT_STORE=True run_torchrun agent 2 "$held" 2 "$bin/bench_allreduce" "${t[@]}"
  wait_ranks agent 2 0
  expect_in agent "$out/agent.0" "(torchrun, tcp bootstrap)"
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$held timeout 120 "$bin/bench_allreduce" "${t[@]}" \
    >"$out/port-taken" 2>&1
  [ $? = 1 ] || fail "rank 0 with MASTER_PORT taken did not exit 1"
  expect_in port-taken "$out/port-taken" "cannot listen on port $held"
  expect_in port-taken "$out/port-taken" "PARBENCH_STORE_PORT=N picks another"
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
  within 30 "$start" "the agent's port"
  start=$SECONDS
  run_torchrun nobody 1 "$(free_port)" 2 "$bin/bench_allreduce" "${t[@]}"  # rank 0 of 2 alone
  wait_ranks nobody 1 1
  expect_in nobody "$out/nobody.0" "rank 1 of 2 never joined"
  within 30 "$start" "rank 0 alone"
  # Only rank 1 of 2: nothing listens at MASTER_PORT.
  local port
  start=$SECONDS
  port=$(free_port)
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$bin/bench_allreduce" "${t[@]}" \
    >"$out/no-store" 2>&1
  [ $? = 1 ] || fail "a rank with nothing at MASTER_PORT did not exit 1"
  expect_in no-store "$out/no-store" "rendezvous store at 127.0.0.1:$port, rank 1 of 2: cannot connect"
  within 30 "$start" "rank 1 with no store"
  # Two processes with RANK=1, both waiting for the store when rank 0 starts: one joins, the other is refused;
  # the job runs with the first, long enough for the second to find the store.
  local long=(-b 8 -e 4M -f 2 --device cpu -T 3)
  port=$(free_port)
  for i in 1 2; do
    RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$bin/bench_allreduce" "${long[@]}" \
      >"$out/dup.$i" 2>&1 &
    pids[$i]=$!
  done
  sleep 0.5
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$bin/bench_allreduce" "${long[@]}" \
    >"$out/dup.0" 2>&1
  local rc0=$?
  wait "${pids[1]}"
  local rc1=$?
  wait "${pids[2]}"
  local rc2=$?
  cat "$out/dup.1" "$out/dup.2" >"$out/dup.both"
  expect_in dup "$out/dup.both" "rank 1 has already joined (two processes with the same RANK?)"
  [ $((rc1 + rc2)) = 1 ] || fail "two processes with RANK=1: exits $rc1 and $rc2, expected one 0 and one 1"
  [ "$rc0" = 0 ] || { fail "two processes with RANK=1: rank 0 exited $rc0, expected 0"; cat "$out/dup.0"; }
  # WORLD_SIZE disagreeing: rank 1 is refused, rank 0 waits for it in vain.
  port=$(free_port)
  start=$SECONDS
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$bin/bench_allreduce" "${t[@]}" \
    >"$out/world.0" 2>&1 &
  pids[0]=$!
  RANK=1 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 "$bin/bench_allreduce" "${t[@]}" \
    >"$out/world.1" 2>&1
  [ $? = 1 ] || fail "rank 1 with WORLD_SIZE=3 against 2 did not exit 1"
  wait_ranks world 1 1
  expect_in world "$out/world.1" "was started for 3 ranks, the store for 2 (WORLD_SIZE differs)"
  expect_in world "$out/world.0" "rank 1 of 2 never joined"
  within 30 "$start" "WORLD_SIZE disagreeing"
  # A rank killed while measuring: the others fail at once (not at their timeout of 120 s), naming a rank whose
  # process ended.
  for shm in on off; do
    start=$SECONDS
    PARBENCH_SHM=$shm PARBENCH_FAULT=rank:1,after:5,kind:kill run_torchrun "killed-$shm" 3 "$(free_port)" 3 \
      "$bin/bench_allreduce" -b 8 -e 1M -f 2 --device cpu -T 120 --impl ring
    wait "${pids[1]}"
    [ $? = 137 ] || fail "killed-$shm: rank 1 was not killed"
    pids[1]=${pids[2]}
    wait_ranks "killed-$shm" 2 1
    cat "$out/killed-$shm.0" "$out/killed-$shm.2" >"$out/killed-$shm.both"
    expect_in "killed-$shm" "$out/killed-$shm.both" "the connection to rank 1 (on $(hostname)) closed (that process ended or failed)"
    within 60 "$start" "a killed rank's peers ($shm)"
  done
  # A rank that stops answering (SIGSTOP): the others time out on their 3 s deadline naming the operation and the
  # late peer; then the stopped one is ended (SIGTERM to its `timeout`, which passes it on with a SIGCONT).
  start=$SECONDS
  PARBENCH_FAULT=rank:1,after:5,kind:stall run_torchrun stalled 3 "$(free_port)" 3 "$bin/bench_allreduce" \
    -b 8 -e 1M -f 2 --device cpu -T 3 --impl ring
  local stalled=${pids[1]}
  pids[1]=${pids[2]}
  wait_ranks stalled 2 1
  within 30 "$start" "the peers of a stalled rank"
  kill -TERM "$stalled"
  wait "$stalled"
  expect_in stalled "$out/stalled.2" "rank 2 of 3 on $(hostname) (torchrun, tcp bootstrap): rank 2: allreduce/ring of 8 bytes (2 x f32 per rank, 3 ranks), out of place did not finish within the timeout of 3 s: rank 2 waited for data from rank(s) 1 (on $(hostname))"
}

# Strangers at a running job's store (MASTER_ADDR:MASTER_PORT), once rank 0 is measuring: a hello with another
# job's token, random bytes whose length prefix is out of bounds, and a well-framed body of random bytes. Each is
# refused or dropped and logged on rank 0's stderr, while the job runs on to a clean data check and exit 0.
store_intruders() {
  local port
  port=$(free_port)
  run_torchrun intruded 2 "$port" 2 "$bin/bench_allreduce" -b 8 -e 4M -f 4 -n 20 -w 1 --device cpu -T 60 \
    --impl ring,rd
  python3 - "$port" "$out/intruded.0" >"$out/intruders" 2>&1 <<'PY'
import os, socket, struct, sys, time
port, log, deadline = int(sys.argv[1]), sys.argv[2], time.time() + 60
while "# impl: ring" not in open(log, errors="replace").read():  # measuring now
    if time.time() > deadline:
        sys.exit("rank 0 never started measuring")
    time.sleep(0.01)
def connect():
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=20)
        except OSError:
            if time.time() > deadline:
                sys.exit("nothing listened at the store's port")
            time.sleep(0.01)
def frame(body):
    return struct.pack("<I", len(body)) + body
def field(b):
    return struct.pack("<I", len(b)) + b
def until_closed(s):
    got = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            return got
        got += chunk
s = connect()  # a rank of another job: the store answers why, then closes
s.sendall(frame(bytes([1]) + field(b"another-job") + field(b"0 2")))
reply = until_closed(s)
if len(reply) < 5 or reply[4] != 1 or b"wrong job token" not in reply:
    sys.exit("the wrong token got %r, expected a refusal naming it" % reply)
s = connect()  # random bytes; the last of the 4-byte little-endian length is 0xff: over the 1 MiB bound
s.sendall(os.urandom(3) + b"\xff" + os.urandom(60))
if until_closed(s):
    sys.exit("the store answered random bytes")
s = connect()  # a frame of random bytes, its request type unknown (0xee)
s.sendall(frame(b"\xee" + os.urandom(40)))
if until_closed(s):
    sys.exit("the store answered a frame of random bytes")
print("three strangers dropped")
PY
  [ $? = 0 ] || { fail "store intruders: $(cat "$out/intruders")"; }
  local alive=0
  for r in 0 1; do kill -0 "${pids[$r]}" 2>/dev/null && alive=$((alive + 1)); done
  [ "$alive" = 2 ] || fail "store intruders: the job ended before the strangers were done (make it longer)"
  wait_ranks intruded 2 0
  [ "$(grep -c '^# Out of bounds values : 0 OK' "$out/intruded.0")" = 2 ] ||
    { fail "intruded: not both implementations checked clean"; cat "$out/intruded.0"; }
  expect_in intruded "$out/intruded.0" "parbench store: dropped a connection from 127.0.0.1:"
  expect_in intruded "$out/intruded.0" ": a wrong job token (a rank of another job?)"
  expect_in intruded "$out/intruded.0" "(1 to 1048576 accepted)"
  expect_in intruded "$out/intruded.0" ": unknown request type 238"
  [ "$(grep -c 'parbench store: dropped a connection' "$out/intruded.0")" = 3 ] ||
    { fail "intruded: expected 3 dropped connections logged"; cat "$out/intruded.0"; }
}

# Under mpirun, PARBENCH_HOST_TRANSPORT=shm: the hand-written algorithms on the mesh's shared-memory rings, MPI's own
# allreduce beside them in the same job, every data check clean; a value other than mpi or shm is a usage error.
mpirun_shm() {
  local mpirun=("${MPIRUN:-mpirun}" --oversubscribe --bind-to none)  # MPIRUN: ctest's (a session folder of its own)
  [ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
  for n in 2 3; do
    PARBENCH_HOST_TRANSPORT=shm timeout 120 "${mpirun[@]}" -np "$n" "$bin/bench_allreduce" -b 8 -e 256K -f 8 -n 2 \
      -w 1 --device cpu -T 30 --impl mpi,ring,rd,rhd >"$out/mpirun-shm-$n" 2>&1
    local rc=$?
    [ "$rc" = 0 ] || { fail "mpirun-shm-$n exited $rc"; cat "$out/mpirun-shm-$n"; }
    expect_in "mpirun-shm-$n" "$out/mpirun-shm-$n" "$n rank(s) on 1 node(s) (mpirun, mpi bootstrap), device cpu, transport shm"
    [ "$(grep -c '^# Out of bounds values : 0 OK' "$out/mpirun-shm-$n")" = 4 ] ||
      { fail "mpirun-shm-$n: not all four implementations checked clean"; cat "$out/mpirun-shm-$n"; }
  done
  PARBENCH_HOST_TRANSPORT=udp timeout 120 "${mpirun[@]}" -np 2 "$bin/bench_allreduce" -b 8 -e 8 --device cpu -T 30 \
    >"$out/mpirun-udp" 2>&1
  [ $? != 0 ] || fail "PARBENCH_HOST_TRANSPORT=udp did not fail"
  expect_in mpirun-udp "$out/mpirun-udp" "PARBENCH_HOST_TRANSPORT='udp' is not 'mpi'"
}

case $case_name in
  collectives) collectives ;;
  train) train ;;
  bad-input) bad_input ;;
  bad-rendezvous) bad_rendezvous ;;
  store-intruders) store_intruders ;;
  mpirun-shm) mpirun_shm ;;
  emu-nccl) emu_nccl ;;
  *) echo "unknown case $case_name" >&2; exit 2 ;;
esac
[ "$failures" = 0 ] && echo "launch_tcp $case_name: all passed"
exit $((failures > 0))
