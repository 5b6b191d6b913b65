#!/usr/bin/env bash
# Network faults on two emulated nodes (scripts/fake_cluster.sh), 2 ranks on each, started as torchrun starts them:
# the node link cut, 5% packet loss, the link throttled to 1% of its rate, one node's processes killed, the store's
# node unreachable at start; during a collective sweep and during bench_train. A fault that stops the run ends
# every rank within the timeout + 10 s, naming the rank, its node and the operation, keeps the rows already
# written, and leaves no process, shared-memory segment or namespace behind; loss and a throttled link that still
# make progress finish with a clean data check. Exit 77 (skipped) where no cluster can be made.
# usage: faults.sh SOURCE_DIR BIN_DIR
root=$1
bin=$2
source "$root/tests/cluster/cluster_lib.sh"

timeout_s=8
sweep=(--device cpu --impl ring)
train=(--device cpu --model gpt --hidden 16 --heads 2 --seq 6 --vocab 24 --optimizer sgd --lr 0.1 --warmup 0
  --check --check-tolerance 1e-5 --timeout "$timeout_s" --layers 4 --global-batch 8 --scheme ddp)

# Every rank exited non-zero within the timeout + 10 s of START, and the message of each rank that was not killed
# names it and its node.
expect_stopped() {  # expect_stopped NAME START [KILLED_RANK...]
  local name=$1 start=$2 r
  shift 2
  wait_ranks
  within $((timeout_s + 10)) "$start" "$name: the ranks' end after the fault"
  for r in "${!rank_rc[@]}"; do
    [ "${rank_rc[$r]}" != 0 ] || fail "$name: rank $r exited 0"
    [ "${rank_rc[$r]}" != 124 ] || fail "$name: rank $r was still running at its 300 s limit"
    [[ " $* " == *" $r "* ]] ||
      expect_re "$name" "$out/$name.$r" "rank $r of 4 on $FAKE_CLUSTER-node$((r / 2)) \(torchrun, tcp bootstrap\)"
  done
}

# The rows written before the fault are there, whole and clean (the CSV is written row by row).
expect_rows_kept() {  # expect_rows_kept NAME
  local csv=$out/$1.csv
  [ -s "$csv" ] || { fail "$1: no CSV"; return; }
  python3 - "$csv" <<'EOF' || fail "$1: the CSV's rows are not whole and clean"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["wrong"] == "0" and r["time_us"] for r in rows), rows
EOF
}

# Waits (at most 120 s) until FILE has a line matching REGEX: the run got that far before the fault.
wait_for() {  # wait_for FILE REGEX
  local tries=0
  until grep -qE -- "$2" "$1" 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -le 600 ] || { fail "no /$2/ in $(basename "$1") within 120 s"; return 1; }
    sleep 0.2
  done
}

# A sweep of large messages, so that the fault lands inside one: rows from 1 MiB up, the first two written.
big_sweep() {  # big_sweep NAME
  start_ranks "$1" 2 "$bin/bench_allreduce" -b 1M -e 64M -f 2 -n 5 -w 1 "${sweep[@]}" -T "$timeout_s" \
    --csv "$out/$1.csv"
  wait_for "$out/$1.csv" "^allreduce,ring,.*,2097152,"
}

# The link cut mid-sweep: each rank names the collective and the peer it waited for, or whose receipt of its data it
# waited for, with the peer's node.
cluster_up 2 --link 1gbit
big_sweep cut
start=$SECONDS
"$fc" cut 1
expect_stopped cut "$start"
for r in 0 1 2 3; do
  expect_re cut "$out/cut.$r" "allreduce/ring of [0-9]+ bytes"
  expect_re cut "$out/cut.$r" "(waited for data from rank\(s\)|sent data to rank\(s\)|the connection to rank) [0-9] \(on $FAKE_CLUSTER-node[01]\)"
done
expect_rows_kept cut
nothing_left cut

# One node's processes killed mid-sweep: the other node's ranks name the collective, and the first of them to notice
# names the connection that closed and its node (the other may see that first rank's end instead).
cluster_up 2 --link 1gbit
big_sweep killed
start=$SECONDS
"$fc" kill 1
expect_stopped killed "$start" 2 3
for r in 0 1; do expect_re killed "$out/killed.$r" "allreduce/ring of [0-9]+ bytes"; done
cat "$out/killed.0" "$out/killed.1" >"$out/killed.node0"
expect_re killed "$out/killed.node0" "the connection to rank [23] \(on $FAKE_CLUSTER-node1\) closed"
expect_rows_kept killed
nothing_left killed

# The store's node unreachable at start: the ranks of node 1 cannot reach it, those of node 0 wait for them; each
# names the store or the ranks that never joined.
cluster_up 2
"$fc" cut 0
start=$SECONDS
start_ranks nostore 2 "$bin/bench_allreduce" -b 8 -e 1K -f 2 "${sweep[@]}" -T "$timeout_s" --csv "$out/nostore.csv"
expect_stopped nostore "$start"
for r in 2 3; do expect_in nostore "$out/nostore.$r" "rendezvous store at $FAKE_CLUSTER-node0:29500"; done
for r in 0 1; do expect_re nostore "$out/nostore.$r" "never joined"; done
[ ! -s "$out/nostore.csv" ] || [ "$(wc -l <"$out/nostore.csv")" -le 1 ] || fail "nostore: rows written without a run"
nothing_left nostore

# 5% of node 1's packets dropped: TCP resends them; the sweep finishes with a clean data check.
cluster_up 2 --link 1gbit
"$fc" loss 1 5
start_ranks loss 2 "$bin/bench_allreduce" -b 8 -e 1M -f 8 -n 3 "${sweep[@]}" -T 60 --csv "$out/loss.csv"
wait_ranks
[ "${rank_rc[*]}" = "0 0 0 0" ] || fail "loss: exit statuses ${rank_rc[*]}, expected 0 0 0 0"
expect_clean_rows loss "$out/loss.csv" ring 12
nothing_left loss

# The link throttled to 1% of its rate (1 Gbit/s to 10 Mbit/s) mid-sweep: slower, still correct.
cluster_up 2 --link 1gbit
start_ranks throttled 2 "$bin/bench_allreduce" -b 8 -e 1M -f 8 -n 3 "${sweep[@]}" -T 60 --csv "$out/throttled.csv"
sleep 1
"$fc" shape 1 10mbit
wait_ranks
[ "${rank_rc[*]}" = "0 0 0 0" ] || fail "throttled: exit statuses ${rank_rc[*]}, expected 0 0 0 0"
expect_clean_rows throttled "$out/throttled.csv" ring 12
nothing_left throttled

# The link cut during training: every rank ends naming the training step it was in; no row is written.
cluster_up 2 --link 1gbit
start_ranks train-cut 2 "$bin/bench_train" "${train[@]}" --steps 100000 --csv "$out/train-cut.csv"
wait_for "$out/train-cut.0" "^launch: "
sleep 2  # into the timed steps
start=$SECONDS
"$fc" cut 1
expect_stopped train-cut "$start"
for r in 0 1 2 3; do
  expect_re train-cut "$out/train-cut.$r" "training step [0-9]+ of 100000"
  expect_re train-cut "$out/train-cut.$r" "(from rank\(s\)|the connection to rank) [0-9] \(on $FAKE_CLUSTER-node[01]\)"
done
[ ! -s "$out/train-cut.csv" ] || [ "$(wc -l <"$out/train-cut.csv")" -le 1 ] || fail "train-cut: a row written"
nothing_left train-cut

finish
