#!/usr/bin/env python3
"""Runs bench_train with --trace and --csv and checks the trace's stream rows: per rank a "compute stream" and a
"comm stream" track, "allreduce bucket" ranges on the comm stream overlapping "backward" ranges on the compute
stream, ranges nested per track; and that tracing left the step thread one host wait per step.
Usage: check_trace_streams.py bench_train args... (the script adds --trace and --csv)"""
import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def tracks_of(trace):
    """{(pid, tid): track name} and {pid: process name} from the metadata."""
    names, processes = {}, {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e["name"] == "process_name":
            processes[e["pid"]] = e["args"]["name"]
    return names, processes


def check_nested(events, where):
    """Every two ranges of one track are disjoint or one holds the other (times in integer nanoseconds)."""
    spans = sorted(((round(e["ts"] * 1000), -round((e["ts"] + e["dur"]) * 1000), e["name"]) for e in events))
    open_ends = []
    for start, neg_end, name in spans:
        end = -neg_end
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        if open_ends and end > open_ends[-1]:
            fail(f"{where}: range '{name}' [{start}, {end}] ns overlaps its enclosing range")
        open_ends.append(end)


def overlap_us(a, b):
    return min(a["ts"] + a["dur"], b["ts"] + b["dur"]) - max(a["ts"], b["ts"])


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp:
        trace_path, csv_path = os.path.join(tmp, "t.json"), os.path.join(tmp, "t.csv")
        run = subprocess.run(sys.argv[1:] + ["--trace", trace_path, "--csv", csv_path], capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"exit status {run.returncode}\n{run.stdout}{run.stderr}")
        with open(csv_path) as f:
            row = next(csv.DictReader(f))
        with open(trace_path) as f:
            trace = json.load(f)
    waits = float(row["host_waits_per_step"])
    print(f"host_waits_per_step = {waits:g} (expected 1)")
    if waits != 1:
        fail("a traced step must wait for the device once, as an untraced one does")
    names, processes = tracks_of(trace)
    per_track = defaultdict(list)
    for e in trace["traceEvents"]:
        if e.get("ph") == "X":
            per_track[(e["pid"], e["tid"])].append(e)
    for key, events in per_track.items():
        check_nested(events, f"{processes.get(key[0])} track '{names.get(key)}'")
    for pid, process in sorted(processes.items()):
        rows = {names[k]: v for k, v in per_track.items() if k[0] == pid}
        for wanted in ("compute stream", "comm stream"):
            if wanted not in rows:
                fail(f"{process}: no '{wanted}' track (tracks: {sorted(rows)})")
        buckets = [e for e in rows["comm stream"] if e["name"] == "allreduce bucket"]
        backward = [e for e in rows["compute stream"] if e["name"].startswith("backward")]
        if not buckets or not backward:
            fail(f"{process}: {len(buckets)} bucket allreduces on the comm stream, {len(backward)} backward ranges "
                 "on the compute stream")
        overlapping = sum(1 for b in buckets if any(overlap_us(b, c) > 0 for c in backward))
        print(f"{process}: {len(buckets)} bucket allreduces on the comm stream, {overlapping} overlap a backward "
              "range on the compute stream")
        if overlapping == 0:
            fail(f"{process}: no bucket allreduce overlaps the backward pass")
    print("OK")


main()
