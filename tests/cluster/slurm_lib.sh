# Sourced by the cluster tests after cluster_lib.sh: a Slurm cluster on the emulated nodes (slurmctld and a munged of
# its own on node 0, whose socket the other nodes reach through the file system; one slurmd per node), its files
# under $out, so nothing of this machine's own Slurm or MUNGE is used or touched, and every daemon ends with the
# cluster. Skips (77) without Slurm or MUNGE.
for tool in slurmctld slurmd srun sbatch munged mungekey; do
  command -v "$tool" >/dev/null || { echo "'$tool' not found (Debian: slurm-wlm, munge)"; exit 77; }
done
slurm=$out/slurm
export SLURM_CONF=$slurm/slurm.conf

slurm_up() {
  mkdir -p "$slurm/state" "$slurm/log"
  local host
  for host in $("$fc" hosts); do mkdir -p "$slurm/spool-$host"; done
  chmod 700 "$slurm"
  mungekey --create --keyfile="$slurm/munge.key" 2>/dev/null || dd if=/dev/urandom of="$slurm/munge.key" bs=1024 count=1 2>/dev/null
  chmod 600 "$slurm/munge.key"
  on 0 munged --force --socket="$slurm/munge.sock" --key-file="$slurm/munge.key" --pid-file="$slurm/munged.pid" \
    --log-file="$slurm/log/munged.log" --seed-file="$slurm/munged.seed" ||
    { fail "munged did not start"; cat "$slurm/log/munged.log"; return 1; }
  local i nodes
  nodes=$("$fc" hosts | wc -l)
  {
    echo "ClusterName=parbench"
    echo "SlurmctldHost=$FAKE_CLUSTER-node0(198.18.0.1)"
    echo "SlurmUser=root"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$slurm/munge.sock"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$slurm/state"
    echo "SlurmdSpoolDir=$slurm/spool-%n"
    echo "SlurmctldPidFile=$slurm/slurmctld.pid"
    echo "SlurmdPidFile=$slurm/slurmd-%n.pid"
    echo "SlurmctldLogFile=$slurm/log/slurmctld.log"
    echo "SlurmdLogFile=$slurm/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"  # every node is this machine: its CPUs are counted once per node
    echo "SlurmdTimeout=30"
    echo "InactiveLimit=0"
    for ((i = 0; i < nodes; i++)); do
      echo "NodeName=$FAKE_CLUSTER-node$i NodeAddr=198.18.0.$((i + 1)) CPUs=2 State=UNKNOWN"
    done
    echo "PartitionName=emulated Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } >"$SLURM_CONF"
  on 0 slurmctld -i || { fail "slurmctld did not start"; cat "$slurm/log/slurmctld.log"; return 1; }
  for ((i = 0; i < nodes; i++)); do
    on "$i" slurmd || { fail "slurmd on node $i did not start"; cat "$slurm/log/slurmd-"*; return 1; }
  done
  local tries=0
  until [ "$(on 0 sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')" = "$nodes" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 60 ] || { fail "the nodes did not become idle within 30 s"; on 0 sinfo -N; tail "$slurm/log/"*; return 1; }
    sleep 0.5
  done
}

srun_cluster() {  # srun_cluster SRUN_ARGS... PROGRAM ARGS...: from node 0, within 300 s
  on 0 timeout 300 srun --kill-on-bad-exit=1 "$@"
}

slurm_down() {  # the daemons end with their nodes; this only stops them first, in order
  local f
  for f in "$slurm"/slurmd-*.pid "$slurm/slurmctld.pid" "$slurm/munged.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  return 0
}
