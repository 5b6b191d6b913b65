#!/usr/bin/env bash
# bench_links on four emulated nodes (scripts/fake_cluster.sh), one rank each under mpirun, every link at 1 Gbit/s
# but node 3's at 20 Mbit/s: node 3 and its rank are named slow, no other rank or node, the messages check clean
# and nothing is left behind. Exit 77 (skipped) where no cluster can be made.
# usage: links.sh SOURCE_DIR BIN_DIR
root=$1
bin=$2
source "$root/tests/cluster/cluster_lib.sh"
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 77; }

cluster_up 4 --link 1gbit
# 2% of the others' rate, judged by bandwidth with a factor of 4: beside the other tests on a busy host every link
# loses much of its rate, and latency grows to milliseconds, several times more on some pairs than on others.
"$fc" shape 3 20mbit
mpirun_cluster 4 1 "$bin/bench_links" --bandwidth-size 256K -n 3 --passes 3 --slow-factor 4 --judge bandwidth --csv "$out/links.csv" \
  >"$out/links" 2>&1 ||
  fail "bench_links exited non-zero"
cat "$out/links"
expect_in links "$out/links" "4 rank(s) on 4 node(s)"
expect_in links "$out/links" "# Wrong bytes received : 0 OK"
expect_re links "$out/links" "^# slow rank: 3 on node 3 \($FAKE_CLUSTER-node3\): bandwidth .* across nodes"
expect_in links "$out/links" "# slow node: node 3 ($FAKE_CLUSTER-node3): all its ranks are slow"
[ "$(grep -c '^# slow rank:' "$out/links")" = 1 ] || fail "links: a rank other than 3 was named slow"
[ "$(grep -c '^# slow node:' "$out/links")" = 1 ] || fail "links: a node other than 3 was named slow"
[ "$(grep -c ',rank 3$' "$out/links.csv")" = 3 ] || fail "links: the CSV does not mark rank 3's three pairs"
nothing_left links
finish
