# Sourced by the cluster tests: a cluster of FAKE_CLUSTER's name made by scripts/fake_cluster.sh, removed on exit,
# and the checks the tests share. Expects $root (the source tree) and $bin (the programs' folder).
set -uo pipefail
fc=$root/scripts/fake_cluster.sh
out=$(mktemp -d)
echo "logs: $out"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

finish() {  # the exit status: 0 when every check held
  [ "$failures" = 0 ] && echo "ok: every check held" && exit 0
  echo "$failures check(s) failed"
  exit 1
}

# Nothing of the cluster's runs is left: no process of the programs, no shared-memory segment on any node, and
# after the cluster is taken down no namespace and no state (also checked after every fault).
nothing_left() {
  local what=$1 procs host i ns pid
  procs=""
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^parbench-$FAKE_CLUSTER-node" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      local cmd
      cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
      [[ $cmd != *"$bin/bench_"* ]] || procs+="$pid $cmd; "
    done
  done
  [ -z "$procs" ] || fail "$what: processes left behind: $procs"
  i=0
  for host in $("$fc" hosts 2>/dev/null); do
    local shm
    shm=$(on "$i" ls -A /dev/shm)
    [ -z "$shm" ] || fail "$what: shared memory left behind on $host: $shm"
    i=$((i + 1))
  done
  "$fc" down
  local ns
  ns=$(ip netns list | awk '{print $1}' | grep -E "^parbench-$FAKE_CLUSTER-" || true)
  [ -z "$ns" ] || fail "$what: namespaces left behind: $ns"
  [ ! -d "/run/parbench-cluster/$FAKE_CLUSTER" ] || fail "$what: the cluster's state folder is left behind"
}

cluster_up() {  # cluster_up N [--link RATE]: skips the test (77) with fake_cluster's reason where none can be made
  local why
  if ! why=$("$fc" check 2>&1); then
    echo "$why"
    exit 77
  fi
  trap '"$fc" down; [ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
  "$fc" up "$@" || { echo "FAIL: fake_cluster.sh up $*"; exit 1; }
}

on() {  # on NODE CMD...: in that node's namespaces
  local node=$1
  shift
  "$fc" exec "$node" "$@"
}

expect_in() {  # expect_in NAME FILE TEXT
  grep -qF -- "$3" "$2" || { fail "$1: '$3' not in $(basename "$2")"; tail -40 "$2"; }
}

expect_re() {  # expect_re NAME FILE REGEX (extended)
  grep -qE -- "$3" "$2" || { fail "$1: /$3/ not in $(basename "$2")"; tail -40 "$2"; }
}

within() {  # within SECONDS START WHAT: what began at START (bash's $SECONDS) ended within SECONDS
  [ $((SECONDS - $2)) -le "$1" ] || fail "$3 took $((SECONDS - $2)) s, expected at most $1 s"
}

# The rank table of a collective benchmark's header: ranks 0..k-1 on node 0 as devices (node-local ranks)
# 0..k-1, and so on.
expect_placement() {  # expect_placement NAME FILE RANKS_PER_NODE NODES
  local name=$1 file=$2 k=$3 nodes=$4 r
  for ((r = 0; r < k * nodes; r++)); do
    expect_re "$name" "$file" "^#  Rank +$r Group +0 Pid +[0-9]+ on +$FAKE_CLUSTER-node$((r / k)) device +$((r % k)) "
  done
}

# A collective benchmark's CSV: ROWS rows for each implementation of the comma list IMPLS and none for any other,
# and no wrong element in any of them.
expect_clean_rows() {  # expect_clean_rows NAME CSV IMPLS ROWS
  local name=$1 csv=$2
  [ -s "$csv" ] || { fail "$name: no CSV written"; return; }
  local why
  why=$(python3 - "$csv" "$3" "$4" <<'EOF'
import collections, csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
want = sys.argv[2].split(",")
per = collections.Counter(r["impl"] for r in rows)
bad = [f"{i}: {per[i]} rows, expected {sys.argv[3]}" for i in want if per[i] != int(sys.argv[3])]
bad += [f"{i}: not asked for" for i in per if i not in want]
wrong = sum(1 for r in rows if r["wrong"] != "0")
bad += [f"{wrong} row(s) with wrong elements"] if wrong else []
print("; ".join(bad))
EOF
)
  [ -z "$why" ] || fail "$name: $(basename "$csv"): $why"
}

# mpirun on node 0 over every node: `mpirun_cluster NP PER_NODE ARGS...`, its launch agent entering the nodes.
mpirun_cluster() {
  local np=$1 k=$2 hosts="" i
  shift 2
  for i in $("$fc" hosts); do hosts+="${hosts:+,}$i:$k"; done
  on 0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_orte_tmpdir_base="$out" \
    mpirun --mca plm_rsh_agent "$fc ssh" \
    -H "$hosts" -np "$np" "$@"
}

torchrun_bin() {  # PyPI's torch in a cached venv (scripts/setup.sh --torch); skips the test without it
  local t=${PARBENCH_TORCH_VENV:-$HOME/.cache/parbench/torch-venv}/bin/torchrun
  [ -x "$t" ] || { echo "torchrun not found at $t (scripts/setup.sh --torch installs PyPI's torch there)"; exit 77; }
  echo "$t"
}

# torchrun on every node with c10d rendezvous on node 0: `torchrun_cluster NAME PER_NODE SECONDS PROGRAM ARGS...`;
# logs $out/NAME.node<i>; returns the first non-zero exit status of the nodes' torchruns.
torchrun_cluster() {
  local name=$1 k=$2 limit=$3
  shift 3
  local t nodes i rc=0 pids=()
  t=$(torchrun_bin) || exit 77
  nodes=$("$fc" hosts | wc -l)
  for ((i = 0; i < nodes; i++)); do
    on "$i" timeout "$limit" "$t" --nnodes "$nodes" --nproc_per_node "$k" --rdzv_backend c10d \
      --rdzv_endpoint "$FAKE_CLUSTER-node0:29400" --rdzv_id "$name" --no-python "$@" >"$out/$name.node$i" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    local s=0
    wait "${pids[$i]}" || s=$?
    [ "$rc" != 0 ] || rc=$s
  done
  return "$rc"
}

# Ranks started as torchrun starts them, its variables set by hand (no agent to restart or kill them), PER_NODE on
# each node, meeting at node 0: `start_ranks NAME PER_NODE PROGRAM ARGS...`; rank r's output in $out/NAME.r, its
# pid in rank_pids[r]. `wait_ranks` collects their exit statuses into rank_rc[r].
start_ranks() {
  local name=$1 k=$2
  shift 2
  local nodes i j r
  nodes=$("$fc" hosts | wc -l)
  rank_pids=()
  for ((i = 0; i < nodes; i++)); do
    for ((j = 0; j < k; j++)); do
      r=$((i * k + j))
      on "$i" env RANK=$r WORLD_SIZE=$((nodes * k)) LOCAL_RANK=$j LOCAL_WORLD_SIZE=$k GROUP_RANK=$i \
        MASTER_ADDR="$FAKE_CLUSTER-node0" MASTER_PORT=29500 TORCHELASTIC_RUN_ID="$name" \
        timeout 300 "$@" >"$out/$name.$r" 2>&1 &
      rank_pids[$r]=$!
    done
  done
}

wait_ranks() {
  local r
  rank_rc=()
  for r in "${!rank_pids[@]}"; do
    rank_rc[$r]=0
    wait "${rank_pids[$r]}" || rank_rc[$r]=$?
  done
}
