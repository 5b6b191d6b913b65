#!/usr/bin/env bash
# A cluster of N nodes on this machine, for trying multi-node runs at home and for the tests: each node is a
# network namespace with its own host name (UTS namespace), its own /dev/shm and /etc/hosts (mount namespace) and
# one link to a switch (a bridge in a namespace of its own), so shared memory works inside a node and only TCP
# across. Addresses are 198.18.0.x (the range set aside for network benchmarks), inside the cluster's namespaces
# only: nothing touches this machine's own interfaces. Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN).
#
#   fake_cluster.sh check                        exit 0 if a cluster can be made here, else 77 and the reason
#   fake_cluster.sh up N [--link RATE]           make nodes NAME-node0 .. NAME-node(N-1); RATE as tc's (1gbit)
#   fake_cluster.sh exec NODE CMD [ARG...]       run CMD on node NODE (0..N-1, or its host name)
#   fake_cluster.sh shape NODE RATE              that node's link at RATE both ways (tc tbf); "off" lifts it
#   fake_cluster.sh loss NODE PERCENT            drop PERCENT % of the packets the node sends (nftables); 0 lifts it
#   fake_cluster.sh cut NODE | heal NODE         that node's link down or up again
#   fake_cluster.sh kill NODE                    end every process of that node
#   fake_cluster.sh hosts                        the nodes' host names, one a line
#   fake_cluster.sh ssh HOST COMMAND...          as ssh does: the words joined and run by sh on node HOST (for
#                                                mpirun: --mca plm_rsh_agent "fake_cluster.sh ssh")
#   fake_cluster.sh down                         end every process of the cluster and remove it
#   fake_cluster.sh run N [--link RATE] -- CMD   up, CMD (on this machine, FAKE_CLUSTER set), down: also when
#                                                CMD fails or the script is interrupted
#
# The cluster's name is $FAKE_CLUSTER (default pbc, letters and digits, at most 8): clusters of other names live
# side by side. `up` first removes what a killed run of the same name left.
set -euo pipefail

name=${FAKE_CLUSTER:-pbc}
state_root=/run/parbench-cluster
dir=$state_root/$name
subnet=198.18.0

die() { echo "fake_cluster: $*" >&2; exit 2; }
skip() { echo "fake_cluster: cannot make a cluster here: $*" >&2; exit 77; }

[[ $name =~ ^[a-z][a-z0-9]{0,7}$ ]] || die "FAKE_CLUSTER '$name': expected a lower-case letter and up to 7 letters or digits"

switch_ns() { echo "parbench-$name-sw"; }
node_ns() { echo "parbench-$name-node$1"; }
node_host() { echo "$name-node$1"; }
nodes() { [ -f "$dir/nodes" ] || die "no cluster '$name' is up (fake_cluster.sh up N)"; cat "$dir/nodes"; }

# NODE as an index: 0..N-1 or the node's host name.
node_index() {
  local n i
  n=$(nodes)
  i=${1#"$name-node"}
  [[ $i =~ ^[0-9]+$ ]] && [ "$i" -lt "$n" ] || die "node '$1': expected 0..$((n - 1)) or $name-node0..$name-node$((n - 1))"
  echo "$i"
}

check() {
  [ "$(id -u)" = 0 ] || skip "not root (network namespaces and tc need root; run as root or skip these tests)"
  local tool
  for tool in ip nsenter unshare tc mount; do
    command -v "$tool" >/dev/null || skip "'$tool' is not installed (Debian: iproute2, util-linux)"
  done
  unshare --net --uts --mount true 2>/dev/null ||
    skip "new network, UTS or mount namespaces are refused (a container without CAP_SYS_ADMIN?)"
  local probe=parbench-probe-$$
  ip netns add "$probe" 2>/dev/null || skip "'ip netns add' is refused"
  local ok=1
  ip -n "$probe" link add name a type veth peer name b 2>/dev/null || ok=0
  ip netns del "$probe"
  [ "$ok" = 1 ] || skip "veth pairs cannot be made inside a namespace"
}

down() {
  [ -d "$dir" ] || [ -n "$(ip netns list | grep -E "^parbench-$name-" || true)" ] || return 0
  local ns pid
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^parbench-$name-" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^parbench-$name-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$dir"
}

shape_dev() {  # shape_dev NETNS DEV RATE
  if [ "$3" = off ]; then
    ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null || true
  else
    # A burst of 1 ms at RATE (at least 16 KiB, tbf's minimum for jumbo-free links) and 100 ms of queue.
    ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst 64kb latency 100ms ||
      die "rate '$3': expected one tc accepts (e.g. 1gbit, 200mbit, 10mbit) or off"
  fi
}

up() {
  local n=${1:-}
  shift || true
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "up '$n': expected a node count in 1..64"
  local rate=""
  while [ $# -gt 0 ]; do
    case $1 in
      --link) rate=${2:-}; [ -n "$rate" ] || die "--link needs a rate (e.g. 1gbit)"; shift 2 ;;
      *) die "up: unknown option '$1' (accepted: --link RATE)" ;;
    esac
  done
  check
  down
  mkdir -p "$dir"
  local sw i
  sw=$(switch_ns)
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add name br0 type bridge
  ip -n "$sw" link set br0 up
  {
    echo "127.0.0.1 localhost"
    for ((i = 0; i < n; i++)); do echo "$subnet.$((i + 1)) $(node_host "$i")"; done
  } >"$dir/hosts"
  for ((i = 0; i < n; i++)); do
    local ns
    ns=$(node_ns "$i")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$sw" link add name "port$i" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "port$i" master br0 up
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    # The node's UTS and mount namespaces live as long as a process in them: this one, which only sleeps. Entering
    # through it works from any node as well (mpirun's agent runs on one). Its /sys is its network namespace's,
    # with this machine's cgroup tree inside (slurmd reads it), mounted in the node's namespace only.
    mkdir -p "$dir/cgroup$i"
    nsenter --net="/run/netns/$ns" setsid unshare --uts --mount --propagation private sh -ec "
      hostname $(node_host "$i")
      mount --rbind /sys/fs/cgroup $dir/cgroup$i
      mount -t sysfs sysfs /sys
      mount --rbind $dir/cgroup$i /sys/fs/cgroup
      umount -l $dir/cgroup$i
      mount -t tmpfs -o mode=1777 tmpfs /dev/shm
      mount --bind $dir/hosts /etc/hosts
      echo \$\$ >$dir/node$i.pid
      exec sleep infinity" </dev/null >/dev/null 2>&1 &
    local tries=0
    until [ -s "$dir/node$i.pid" ]; do
      tries=$((tries + 1))
      [ "$tries" -le 100 ] || die "node $i did not start within 10 s"
      sleep 0.1
    done
    if [ -n "$rate" ]; then
      shape_dev "$ns" eth0 "$rate"
      shape_dev "$sw" "port$i" "$rate"
    fi
  done
  echo "$n" >"$dir/nodes"
  echo "fake_cluster: $n node(s) up: $(hosts | tr '\n' ' ')(link ${rate:-unshaped})"
}

hosts() {
  local n i
  n=$(nodes)
  for ((i = 0; i < n; i++)); do node_host "$i"; done
}

on_node() {  # on_node INDEX CMD...: in the node's namespaces, from this working directory
  local i=$1
  shift
  nsenter --target "$(cat "$dir/node$i.pid")" --net --uts --mount --wd="$PWD" -- "$@"
}

run() {
  local n=${1:-}
  shift || true
  local up_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do up_args+=("$1"); shift; done
  [ "${1:-}" = -- ] || die "run: expected 'run N [--link RATE] -- CMD'"
  shift
  [ $# -gt 0 ] || die "run: no command after --"
  trap 'down' EXIT
  trap 'exit 130' INT TERM
  up "$n" "${up_args[@]}"
  local rc=0
  FAKE_CLUSTER=$name "$@" || rc=$?
  return "$rc"
}

cmd=${1:-}
shift || true
case $cmd in
  check) check; echo "fake_cluster: namespaces, veth pairs and tc are available" ;;
  up) up "$@" ;;
  down) down ;;
  hosts) hosts ;;
  ssh)
    [ $# -ge 2 ] || die "ssh: expected 'ssh HOST COMMAND...'"
    i=$(node_index "$1"); shift
    on_node "$i" sh -c "$*" ;;
  run) run "$@" ;;
  exec)
    [ $# -ge 2 ] || die "exec: expected 'exec NODE CMD [ARG...]'"
    i=$(node_index "$1"); shift
    on_node "$i" "$@" ;;
  shape)
    [ $# = 2 ] || die "shape: expected 'shape NODE RATE' (RATE as tc's, e.g. 1gbit, or off)"
    i=$(node_index "$1")
    shape_dev "$(node_ns "$i")" eth0 "$2"
    shape_dev "$(switch_ns)" "port$i" "$2" ;;
  loss)
    [ $# = 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -le 100 ] || die "loss: expected 'loss NODE PERCENT' (0..100)"
    i=$(node_index "$1")
    command -v nft >/dev/null || skip "'nft' is not installed (Debian: nftables)"
    ns=$(node_ns "$i")
    ip netns exec "$ns" nft delete table inet parbench_loss 2>/dev/null || true
    if [ "$2" -gt 0 ]; then
      ip netns exec "$ns" nft -f - <<EOF
table inet parbench_loss {
  chain out {
    type filter hook output priority 0; policy accept;
    oifname "eth0" numgen random mod 100 < $2 drop
  }
}
EOF
    fi ;;
  cut | heal)
    [ $# = 1 ] || die "$cmd: expected '$cmd NODE'"
    i=$(node_index "$1")
    ip -n "$(node_ns "$i")" link set eth0 "$([ "$cmd" = cut ] && echo down || echo up)" ;;
  kill)
    [ $# = 1 ] || die "kill: expected 'kill NODE'"
    i=$(node_index "$1")
    holder=$(cat "$dir/node$i.pid")
    for pid in $(ip netns pids "$(node_ns "$i")"); do
      [ "$pid" = "$holder" ] || kill -KILL "$pid" 2>/dev/null || true
    done ;;
  "" | -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
  *) die "unknown command '$cmd' (accepted: check, up, exec, shape, loss, cut, heal, kill, hosts, down, run)" ;;
esac
