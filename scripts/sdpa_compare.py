#!/usr/bin/env python3
"""sdpa_compare.py: our attention kernels' times (from bench_kernels) beside PyTorch's
torch.nn.functional.scaled_dot_product_attention (bf16, causal) at the same shapes, with %SDPA (SDPA's time over
ours, in percent: above 100 we are faster). An optional reference on a machine with Python, PyTorch and a GPU;
nothing in the build depends on it.

  scripts/sdpa_compare.py --csv bench_kernels.csv [--csv ...] [--label NAME=B,T,NH,HS ...] [--out FILE.csv]
  scripts/sdpa_compare.py --bench-kernels build/bin/bench_kernels [--bench-shape gpt2-124M ...]

Our times: bench_kernels rows (its --csv) named OP/cuda:N/bf16/SHAPE for OP in --ops (default flash_attention_forward
and flash_attention_backward). A row's SHAPE label gives B, T, NH and HS: a named bench_kernels shape (gpt2-124M,
gpt2-1.5B, ...), a label carrying them (B2_T4096_NH16_HS128 or B2_T4096_C2048_NH16, any separators), or --label.
Shapes compared: B 8, T 1024, NH 12, hs 64 (gpt2-124M) and B 2, T 4096, NH 16, hs 128, plus --extra-shape ones;
a shape without a row of ours shows SDPA alone. --bench-kernels runs bench_kernels at the --bench-shape names
(bf16 on cuda, the attention ops only) and reads its CSV. Backward: SDPA's gradient of q, k, v from a kept graph.

Exit: 0 compared, 2 bad arguments or input, 3 PyTorch or a CUDA GPU is absent (nothing compared).
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile

DEFAULT_SHAPES = [(8, 1024, 12, 64), (2, 4096, 16, 128)]
# bench_kernels' named shapes (kernels/op_params.cpp): B, T, C, NH.
NAMED_SHAPES = {"tiny": (2, 32, 64, 4), "small": (1, 64, 128, 4), "gpt2-124M": (8, 1024, 768, 12),
                "gpt2-1.5B": (4, 1024, 1600, 25)}
UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


class InputError(Exception):
    pass


def parse_dims(text, what):
    """'B,T,NH,HS' (four positive integers) -> tuple."""
    parts = text.split(",")
    if len(parts) != 4 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise InputError(f"{what} '{text}' is not B,T,NH,HS (four positive integers, e.g. 2,4096,16,128)")
    return tuple(int(p) for p in parts)


def dims_of_label(label, labels):
    """B, T, NH, HS of a bench_kernels shape label, or None when the label does not say."""
    if label in labels:
        return labels[label]
    if label in NAMED_SHAPES:
        b, t, c, nh = NAMED_SHAPES[label]
        return (b, t, nh, c // nh)
    found = {k: int(v) for k, v in re.findall(r"(?i)(?<![a-z])(NH|HS|B|T|C)[=:]?(\d+)", label)}
    found = {k.upper(): v for k, v in found.items()}
    if {"B", "T", "NH"} <= found.keys() and ("HS" in found or "C" in found):
        hs = found.get("HS") or found["C"] // found["NH"]
        return (found["B"], found["T"], found["NH"], hs)
    return None


def read_ours(paths, ops, labels):
    """{(op, dims): microseconds} from bench_kernels CSVs: bf16 rows on cuda without an error."""
    ours = {}
    for path in paths:
        if not os.path.isfile(path):
            raise InputError(f"--csv '{path}' is not a readable file (a bench_kernels --csv output)")
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if rows and not {"name", "real_time", "time_unit"} <= rows[0].keys():
            raise InputError(f"--csv '{path}' lacks the name, real_time and time_unit columns of bench_kernels' CSV")
        for row in rows:
            parts = row["name"].split("/")
            on_cuda = parts[1:2] and (parts[1] == "cuda" or parts[1].startswith("cuda:"))
            if len(parts) < 4 or parts[0] not in ops or not on_cuda or parts[2] != "bf16":
                continue
            if row.get("error_occurred", "0") not in ("", "0", "false") or not row["real_time"]:
                continue
            dims = dims_of_label(parts[-1], labels)
            if dims is None:
                print(f"sdpa_compare: skipping {row['name']}: its shape label does not give B, T, NH, HS "
                      f"(pass --label {parts[-1]}=B,T,NH,HS)", file=sys.stderr)
                continue
            ours[(parts[0], dims)] = float(row["real_time"]) * UNIT_TO_US.get(row["time_unit"], 1.0)
    return ours


def run_bench_kernels(binary, shapes, min_time):
    out = tempfile.NamedTemporaryFile(prefix="sdpa_ours_", suffix=".csv", delete=False).name
    os.unlink(out)
    for shape in shapes:
        cmd = [binary, "--device", "cuda", "--dtype", "bf16", "--shape", shape, "--min-time", str(min_time),
               "--benchmark_filter=attention", "--csv", out] + (["--resume"] if os.path.exists(out) else [])
        print("$ " + " ".join(cmd), file=sys.stderr)
        if subprocess.run(cmd, stdout=sys.stderr).returncode != 0:
            print(f"sdpa_compare: bench_kernels at --shape {shape} failed; its rows so far are used", file=sys.stderr)
    return out


def time_sdpa(torch, dims, backward, warmup, iters):
    """Milliseconds per call of SDPA (forward, or the backward of a kept graph) at B, T, NH, HS."""
    b, t, nh, hs = dims
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q, k, v = (torch.randn(b, nh, t, hs, device="cuda", dtype=torch.bfloat16, requires_grad=backward)
               for _ in range(3))
    if backward:
        out = sdpa(q, k, v, is_causal=True)
        grad = torch.randn_like(out)
        call = lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)  # noqa: E731
    else:
        call = lambda: sdpa(q, k, v, is_causal=True)  # noqa: E731
    with torch.no_grad() if not backward else torch.enable_grad():
        for _ in range(warmup):
            call()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            call()
        stop.record()
        torch.cuda.synchronize()
    return start.elapsed_time(stop) / iters * 1e3  # microseconds


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--csv", action="append", default=[], help="a bench_kernels --csv output (repeatable)")
    p.add_argument("--bench-kernels", help="run this bench_kernels binary for our times instead of --csv")
    p.add_argument("--bench-shape", action="append", default=[], help="bench_kernels --shape names to run "
                   "(default gpt2-124M)")
    p.add_argument("--label", action="append", default=[], help="LABEL=B,T,NH,HS: the dims of a CSV shape label")
    p.add_argument("--extra-shape", action="append", default=[], help="B,T,NH,HS: one more shape to compare")
    p.add_argument("--ops", default="flash_attention_forward,flash_attention_backward",
                   help="our ops compared (bench_kernels names; *_backward ones against SDPA's backward)")
    p.add_argument("--iters", type=int, default=50, help="timed SDPA calls per shape (default 50)")
    p.add_argument("--warmup", type=int, default=5, help="untimed SDPA calls first (default 5)")
    p.add_argument("--min-time", type=float, default=0.2, help="bench_kernels --min-time (default 0.2)")
    p.add_argument("--out", help="also write the comparison as CSV here")
    a = p.parse_args(argv)
    if bool(a.csv) == bool(a.bench_kernels):
        raise InputError("give our times as --csv FILE (bench_kernels' --csv) or --bench-kernels PATH, one of them")
    if a.iters < 1 or a.warmup < 0:
        raise InputError(f"--iters {a.iters} / --warmup {a.warmup}: iters must be >= 1 and warmup >= 0")
    a.labels = {}
    for item in a.label:
        name, sep, dims = item.partition("=")
        if not sep or not name:
            raise InputError(f"--label '{item}' is not LABEL=B,T,NH,HS")
        a.labels[name] = parse_dims(dims, f"--label {name}")
    a.shapes = DEFAULT_SHAPES + [parse_dims(s, "--extra-shape") for s in a.extra_shape]
    a.op_list = [o for o in a.ops.split(",") if o]
    if not a.op_list or not all(re.fullmatch(r"[a-z0-9_]+", o) for o in a.op_list):
        raise InputError(f"--ops '{a.ops}' is not a comma-separated list of bench_kernels op names")
    if a.bench_kernels and not os.access(a.bench_kernels, os.X_OK):
        raise InputError(f"--bench-kernels '{a.bench_kernels}' is not an executable (a build's bin/bench_kernels)")
    if a.out and os.path.isdir(a.out):
        raise InputError(f"--out '{a.out}' is a folder, not a file")
    return a


def load_torch():
    try:
        import torch
    except ImportError:
        print("sdpa_compare: PyTorch is not installed (import torch failed): nothing compared; it is an optional "
              "reference (pip install torch on a machine with a GPU)", file=sys.stderr)
        sys.exit(3)
    if not torch.cuda.is_available():
        print("sdpa_compare: PyTorch finds no CUDA GPU (torch.cuda.is_available() is False): nothing compared",
              file=sys.stderr)
        sys.exit(3)
    return torch


def main(argv):
    try:
        a = parse_args(argv)
        for path in a.csv:  # bad files are named before the (slow) torch import
            read_ours([path], a.op_list, a.labels)
    except InputError as e:
        print(f"sdpa_compare: error: {e}", file=sys.stderr)
        return 2
    torch = load_torch()
    try:
        paths = a.csv or [run_bench_kernels(a.bench_kernels, a.bench_shape or ["gpt2-124M"], a.min_time)]
        ours = read_ours(paths, a.op_list, a.labels)
    except InputError as e:
        print(f"sdpa_compare: error: {e}", file=sys.stderr)
        return 2
    rows = []
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, bf16, causal; times in microseconds")
    print(f"{'B':>3} {'T':>5} {'NH':>3} {'hs':>4}  {'op':<26} {'ours':>10} {'SDPA':>10} {'%SDPA':>7}")
    for dims in a.shapes:
        for op in a.op_list:
            sdpa_us = time_sdpa(torch, dims, op.endswith("_backward"), a.warmup, a.iters)
            mine = ours.get((op, dims))
            pct = 100.0 * sdpa_us / mine if mine else None
            rows.append((*dims, op, mine, sdpa_us, pct))
            print(f"{dims[0]:>3} {dims[1]:>5} {dims[2]:>3} {dims[3]:>4}  {op:<26} "
                  f"{(f'{mine:.1f}' if mine else '-'):>10} {sdpa_us:>10.1f} {(f'{pct:.0f}' if pct else '-'):>7}")
    if a.out:
        with open(a.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["B", "T", "NH", "hs", "op", "ours_us", "sdpa_us", "pct_sdpa"])
            for r in rows:
                w.writerow([*r[:5], "" if r[5] is None else f"{r[5]:.3f}", f"{r[6]:.3f}",
                            "" if r[7] is None else f"{r[7]:.1f}"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
