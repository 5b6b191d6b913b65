#!/usr/bin/env bash
# Flat against topology-aware collectives on a cluster whose node link is the slow one: on 2 emulated nodes x 2
# ranks (scripts/fake_cluster.sh, the link shaped to RATE), first the cluster's links are measured (bench_sendrecv
# between two ranks of one node and two of different nodes, each fitted to alpha + bytes/bandwidth by
# bench_train --calibrate) into a system file, then one bench_allreduce and one bench_allgather sweep of
# ring, rd, rhd and hier run under mpirun across the nodes with --expect set to that file: each block's table is
# followed by the alpha-beta model's expected time and the share of it measured. Needs root (fake_cluster.sh).
#
#   scripts/topology_table.sh [--link RATE] [--sizes LIST] [--bin DIR] [--out DIR]
#
# Defaults: --link 1gbit, --sizes 64K:64M:x4, --bin build/bin, --out topology-out (its CSVs, logs and the system
# file cluster.json are left there).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
link=1gbit sizes=64K:64M:x4 bin=build/bin out=topology-out
while [ $# -gt 0 ]; do
  case $1 in
    --link | --sizes | --bin | --out)
      [ $# -ge 2 ] || { echo "topology_table: $1 needs a value" >&2; exit 2; }
      declare "${1#--}=$2"
      shift 2 ;;
    *) echo "topology_table: unknown argument '$1'; accepted: --link RATE, --sizes LIST, --bin DIR, --out DIR" >&2
       exit 2 ;;
  esac
done
bin=$(cd "$bin" && pwd) || { echo "topology_table: --bin '$bin' is not a folder" >&2; exit 2; }
for p in bench_sendrecv bench_allreduce bench_allgather bench_train; do
  [ -x "$bin/$p" ] || { echo "topology_table: $bin/$p not found (scripts/build.sh builds it)" >&2; exit 2; }
done
command -v mpirun >/dev/null || { echo "topology_table: mpirun not found (scripts/setup.sh installs OpenMPI)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
export FAKE_CLUSTER=topo
fc=$root/scripts/fake_cluster.sh
"$fc" check
trap '"$fc" down >/dev/null 2>&1 || true' EXIT
"$fc" up 2 --link "$link" >/dev/null

# mpirun from node 0 onto HOSTS (host:slots,...), its ssh replaced by entering the node's namespaces.
across() {
  local hosts=$1
  shift
  "$fc" exec 0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_orte_tmpdir_base="$out" \
    mpirun --mca plm_rsh_agent "$fc ssh" -H "$hosts" "$@"
}
mapfile -t host < <("$fc" hosts)

# The links: one message each way between two ranks, inside node 0 (shared memory) and across the nodes (tcp), by
# naive (the transport the hand-written collectives use; MPI_Sendrecv itself waits milliseconds per call here).
for kind in inside:${host[0]}:2 across:${host[0]}:1,${host[1]}:1; do
  name=${kind%%:*}
  across "${kind#*:}" -np 2 "$bin/bench_sendrecv" --device cpu --impl naive --sizes 4K:16M:x4 -n 10 -w 2 \
    --csv "$out/link-$name.csv" -q >"$out/link-$name.log" 2>&1 ||
    { cat "$out/link-$name.log"; echo "topology_table: measuring the link $name failed" >&2; exit 1; }
done
# bench_train --calibrate's fit: "collective impl ranks sizes alpha_us link_GBps ..." per (collective, impl, ranks).
fit() {
  "$bin/bench_train" --calibrate "$out/link-$1.csv" | awk '$1 == "sendrecv" && $2 == "naive" {print $5, $6; exit}'
}
read -r inside_us inside_gbps < <(fit inside)
read -r across_us across_gbps < <(fit across)
# The model's levels are per rank: the two ranks of a node share its one link, so each has half of what one
# message across measured.
python3 - "$out/cluster.json" "$link" "$inside_us" "$inside_gbps" "$across_us" "$across_gbps" <<'EOF'
import json, sys
path, link, in_us, in_gbps, out_us, out_gbps = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
system = {
    "name": "fake-cluster-" + link,
    "source": "scripts/topology_table.sh: bench_sendrecv inside a node and across, fitted by bench_train --calibrate",
    "gpu": {"name": "cpu", "matrix_tflops_16": 0.1, "matrix_tflops_32": 0.1, "hbm_gbps": 10, "hbm_gb": 1,
            "matrix_efficiency": [[0, 1]], "hbm_efficiency": [[0, 1]]},
    "collective_algorithms": "every",
    "network": [
        {"name": "shm", "gpus": 2, "gbps": in_gbps, "latency_us": in_us, "efficiency": [[0, 1]]},
        {"name": "veth-" + link, "gpus": 1 << 30, "gbps": out_gbps / 2, "latency_us": out_us,
         "efficiency": [[0, 1]]},
    ],
}
json.dump(system, open(path, "w"), indent=1)
EOF
echo "# links: inside a node alpha ${inside_us} us, ${inside_gbps} GB/s; across alpha ${across_us} us," \
  "${across_gbps} GB/s (a node's two ranks share it): $out/cluster.json"

for c in allreduce allgather; do
  across "${host[0]}:2,${host[1]}:2" -np 4 "$bin/bench_$c" --device cpu --sizes "$sizes" -n 10 -w 2 --inplace off \
    --impl ring,rd,rhd,hier --expect "$out/cluster.json" --csv "$out/$c.csv" >"$out/$c.log" 2>&1 ||
    { cat "$out/$c.log"; echo "topology_table: bench_$c failed" >&2; exit 1; }
  cat "$out/$c.log"
done

# The table: per collective and size, each implementation's measured time beside the model's, and the fastest.
python3 - "$out" <<'EOF2'
import csv, sys
out = sys.argv[1]
impls = ["ring", "rd", "rhd", "hier"]
for c in ["allreduce", "allgather"]:
    rows = {}
    for r in csv.DictReader(open(f"{out}/{c}.csv")):
        rows.setdefault(int(r["bytes"]), {})[r["impl"]] = (float(r["time_us"]), r["expected_us"])
    print(f"\n{c}: time (us) measured / expected on 2 nodes x 2 ranks")
    print(f"{'size (B)':>10}" + "".join(f"{i:>22}" for i in impls) + f"{'fastest':>9}")
    for size in sorted(rows):
        cells = "".join(f"{rows[size][i][0]:>11.0f} / {float(rows[size][i][1] or 'nan'):>8.0f}" for i in impls)
        print(f"{size:>10}{cells}{min(impls, key=lambda i: rows[size][i][0]):>9}")
EOF2
