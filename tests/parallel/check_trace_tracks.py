#!/usr/bin/env python3
"""Runs bench_train with --trace (rank threads: --ranks N among the arguments) and checks that every thread that
recorded a range said whose it is: one trace process per rank, "rank 0" .. "rank N-1", each with a "compute" track
that holds ranges, the same tracks on every rank (a rank's communication thread on its own "comm" track, not on
another rank's), and no range on an anonymous "thread K" track (what a thread without a TraceTrack gets, always under
rank 0).
Usage: check_trace_tracks.py bench_train args... (the script adds --trace)"""
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    if len(sys.argv) < 2 or "--ranks" not in sys.argv:
        print(__doc__)
        sys.exit(2)
    ranks = int(sys.argv[sys.argv.index("--ranks") + 1])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        run = subprocess.run(sys.argv[1:] + ["--trace", path], capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"exit status {run.returncode}\n{run.stdout}{run.stderr}")
        with open(path) as f:
            trace = json.load(f)
    tracks, processes = {}, {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            tracks[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e["name"] == "process_name":
            processes[e["pid"]] = e["args"]["name"]
    ranges = defaultdict(int)  # (process, track) -> ranges
    for e in trace["traceEvents"]:
        if e.get("ph") == "X":
            ranges[(processes.get(e["pid"], f"pid {e['pid']}"), tracks.get((e["pid"], e["tid"]), "?"))] += 1
    anonymous = {k: n for k, n in ranges.items() if k[1].startswith("thread ") or k[1] == "?"}
    if anonymous:
        fail("ranges on tracks that name no role: " + ", ".join(f"{p} / {t}: {n}" for (p, t), n in anonymous.items()))
    want = {f"rank {r}" for r in range(ranks)}
    if set(processes.values()) != want:
        fail(f"processes {sorted(processes.values())}, expected {sorted(want)}")
    for p in sorted(want):
        if not ranges.get((p, "compute")):
            fail(f"{p} has no ranges on its compute track")
    tracks_of = {p: sorted(t for q, t in ranges if q == p) for p in want}
    if len({tuple(t) for t in tracks_of.values()}) != 1:
        fail("ranks with different tracks: " + "; ".join(f"{p}: {', '.join(t)}" for p, t in sorted(tracks_of.items())))
    print(f"ok: {len(ranges)} tracks over {ranks} ranks, " +
          ", ".join(f"{p} / {t}" for p, t in sorted(ranges) if t != "compute"))


if __name__ == "__main__":
    main()
