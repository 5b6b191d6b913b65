#!/usr/bin/env python3
"""llama_torch_reference.py: parbench's Llama-style model against PyTorch. Runs llama_dump (one forward and
backward of a small model with grouped-query attention on --device and --dtype), rebuilds the same model in PyTorch
from the published definitions (Llama's RMSNorm, rotate-half rotary embedding, SwiGLU MLP, grouped-query causal
attention as Hugging Face's LlamaModel computes them, an untied head and the mean cross-entropy), in float64 from
the dumped parameters, and compares the loss and every parameter's gradient: the largest |ours - torch| over the
tensor's largest |torch|, at most --tolerance.

  llama_torch_reference.py --dump PATH_TO_llama_dump --device cpu|simt --dtype f32|bf16|f64
                           [--attention flash|plain] [--tolerance X]

PyTorch: the interpreter in $PARBENCH_TORCH_VENV or ~/.cache/parbench/torch-venv (scripts/setup.sh --torch), else
this one's. Exit: 0 agreed, 1 a difference above the tolerance, 2 bad arguments or a failed dump, 3 no PyTorch
(nothing compared).
"""
import argparse
import array
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

SKIP = 3
# PyPI's torch warns when numpy is absent; nothing here uses numpy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")


def reexec_with_torch():
    """Runs this script under the torch venv's python when this interpreter has no torch."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    venv = os.environ.get("PARBENCH_TORCH_VENV", os.path.expanduser("~/.cache/parbench/torch-venv"))
    python = os.path.join(venv, "bin", "python")
    if os.environ.get("PB_LLAMA_REF_REEXEC") or not os.access(python, os.X_OK):
        print(f"llama_torch_reference: no PyTorch here nor in {venv}; nothing compared")
        sys.exit(SKIP)
    os.environ["PB_LLAMA_REF_REEXEC"] = "1"
    os.execv(python, [python] + sys.argv)


def read_doubles(path):
    a = array.array("d")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


def reference(meta, flat):
    """The loss and the float64 gradient of every parameter, by autograd, as {unit.param: tensor}."""
    import torch
    c = meta["config"]
    B, T, C, NH, KV, F = meta["samples"], c["seq"], c["hidden"], c["heads"], c["kv_heads"], c["ffn"]
    D, eps, theta = C // NH, c["rms_norm_eps"], c["rope_theta"]
    data = torch.tensor(flat, dtype=torch.float64)
    params = {}
    for unit in meta["units"]:
        for p in unit["params"]:
            begin = unit["offset"] + p["offset"]
            n = math.prod(p["shape"])
            t = data[begin:begin + n].reshape(p["shape"]).clone().requires_grad_(True)
            params[unit["name"] + "." + p["name"]] = t
    tokens = torch.tensor(meta["tokens"]).reshape(B, T)
    targets = torch.tensor(meta["targets"]).reshape(B, T)

    def rmsnorm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    # Rotary: channel i pairs with i + D/2 (rotate_half), angle t * theta^(-2i/D).
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rotate(x):  # (B, heads, T, D)
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = params["embedding.wte"][tokens]
    for layer in range(c["layers"]):
        w = lambda name: params[f"block{layer}.{name}"]  # noqa: E731
        n1 = rmsnorm(x, w("attn_norm"))
        qkv = n1 @ w("qkvw").T
        q = qkv[..., :C].reshape(B, T, NH, D).transpose(1, 2)
        k = qkv[..., C:C + KV * D].reshape(B, T, KV, D).transpose(1, 2)
        v = qkv[..., C + KV * D:].reshape(B, T, KV, D).transpose(1, 2)
        q, k = rotate(q), rotate(k)
        # Each kv head serves NH / KV consecutive query heads (Hugging Face's repeat_kv).
        k, v = k.repeat_interleave(NH // KV, 1), v.repeat_interleave(NH // KV, 1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        att = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ w("ow").T
        gate_up = rmsnorm(x, w("mlp_norm")) @ w("gate_upw").T
        gate, up = gate_up[..., :F], gate_up[..., F:]
        x = x + (torch.nn.functional.silu(gate) * up) @ w("downw").T
    logits = rmsnorm(x, params["head.normw"]) @ params["head.lmw"].T
    loss = torch.nn.functional.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))
    loss.backward()
    return loss.item(), {name: t.grad for name, t in params.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="the llama_dump program")
    ap.add_argument("--device", choices=["cpu", "simt"], default="cpu")
    ap.add_argument("--dtype", choices=["f32", "bf16", "f64"], default="f32")
    ap.add_argument("--attention", choices=["flash", "plain"], default="flash")
    ap.add_argument("--tolerance", type=float, default=None,
                    help="largest relative difference per tensor (default: f64 1e-7, f32 1e-5, bf16 4e-2)")
    args = ap.parse_args()
    # f64: the loss gradient's scale 1/(B T) reaches the kernels as a float (a relative 6e-8 at most).
    tolerance = args.tolerance or {"f64": 1e-7, "f32": 1e-5, "bf16": 4e-2}[args.dtype]
    reexec_with_torch()
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([args.dump, "--device", args.device, "--dtype", args.dtype, "--attention", args.attention,
                              "--out", out],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"llama_torch_reference: llama_dump failed ({run.returncode}): {run.stderr.strip()}")
            sys.exit(SKIP if run.returncode == SKIP else 2)
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
        flat, grads = read_doubles(os.path.join(out, "params.f64")), read_doubles(os.path.join(out, "grads.f64"))
    loss, ref = reference(meta, flat)
    worst = abs(meta["loss"] - loss) / abs(loss)
    print(f"loss: ours {meta['loss']:.10f} torch {loss:.10f} relative difference {worst:.3g}")
    failed = worst > tolerance
    for unit in meta["units"]:
        for p in unit["params"]:
            name = unit["name"] + "." + p["name"]
            begin = unit["offset"] + p["offset"]
            expect = ref[name].reshape(-1).tolist()
            ours = grads[begin:begin + len(expect)]
            scale = max(abs(e) for e in expect) or 1.0
            diff = max(abs(a - e) for a, e in zip(ours, expect)) / scale
            worst = max(worst, diff)
            mark = "" if diff <= tolerance else "  <- above the tolerance"
            failed = failed or diff > tolerance
            print(f"{name:22s} {str(p['shape']):12s} max|ours - torch| / max|torch| = {diff:.3g}{mark}")
    verdict = "FAILED" if failed else "agreed"
    print(f"{verdict}: {args.device} {args.dtype} {args.attention} attention, largest relative difference {worst:.3g} (tolerance {tolerance:g})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
