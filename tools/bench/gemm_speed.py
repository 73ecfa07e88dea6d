#!/usr/bin/env python3
"""GPT-2 at 124M width on the CPU: remat's step with its GEMMs on oneDNN
and on OpenBLAS, and in bf16, against PyTorch eager and autocast (issue
#36, acceptance 4).

The model is models/gpt2.json with --set n_layer=12 seq=256 batch=8
dropout=0 (d_model 768, 12 heads, vocabulary 50257) by default; remat
compiles it without a budget (store-all) and runs it with `remat run
--steps`, its float32 GEMMs on oneDNN's matmul (REMAT_CPU_GEMM=onednn)
and on OpenBLAS (REMAT_CPU_GEMM=blas), and compiled with `--precision
bf16` (remat-bf16, GEMMs as the rule puts them: on oneDNN). PyTorch 1.13 runs the same model (pre-norm blocks, separate
q/k/v projections, causal softmax attention, tanh gelu, tied output
embedding, mean cross-entropy, AdamW lr 6e-4) in eager float32 as
installed, on a CPU with AVX-512 also with OPENBLAS_CORETYPE=SkylakeX
(OpenBLAS's AVX-512 kernel, which Debian's build does not pick itself),
and under torch.autocast("cpu", torch.bfloat16) (torch-autocast).
Every variant runs in its own process, one at a time, the same threads
(--threads, default the machine's cores) for OpenMP and OpenBLAS; rounds
interleave the variants; each process's first --warmup steps are dropped
and the medians of the rest are reported, with the step's FLOPs per second
against the GEMM peak remat-gemm-bench measures in the same run (2048 x 768
x 3072, float32 and bf16; configure with -DREMAT_BUILD_BENCH=ON), a bf16
row's against the bf16 peak. The step's FLOPs are three
times the forward's GEMM FLOPs (model_flops: the projections, the MLP, the
full S x S attention products the kernels compute and the logits).

usage: gemm_speed.py [--build build] [--set k=v ...] [--steps 3]
           [--warmup 1] [--rounds 2] [--threads N] [--variants ...]
           [--work DIR] [--json OUT.json]
Run it with nothing else running; needs PyTorch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_measure  # noqa: E402
from cpu_measure import ROOT  # noqa: E402

TORCH_GPT2 = r"""
import json, math, sys, time
import torch
import torch.nn.functional as F
cfg = json.loads(sys.argv[1])
torch.manual_seed(0)
B, S, V, L, H, D = (cfg[k] for k in ("batch", "seq", "vocab", "n_layer",
                                     "n_head", "d_model"))
def p(*shape, std=0.02):
    return torch.nn.Parameter(torch.randn(*shape) * std)
def z(*shape):
    return torch.nn.Parameter(torch.zeros(*shape))
def o(*shape):
    return torch.nn.Parameter(torch.ones(*shape))
wte, wpe, lnf_g, lnf_b = p(V, D), p(S, D, std=0.01), o(D), z(D)
layers = [dict(ln1_g=o(D), ln1_b=z(D), wq=p(D, D), bq=z(D), wk=p(D, D),
               bk=z(D), wv=p(D, D), bv=z(D), wo=p(D, D), bo=z(D),
               ln2_g=o(D), ln2_b=z(D), w_fc=p(D, 4 * D), b_fc=z(4 * D),
               w_proj=p(4 * D, D), b_proj=z(D)) for _ in range(L)]
params = [wte, wpe, lnf_g, lnf_b] + [t for l in layers for t in l.values()]
opt = torch.optim.AdamW(params, lr=6e-4, weight_decay=0.0)
tokens = torch.randint(0, V, (B, S))
targets = torch.roll(tokens, -1, 1)
mask = torch.triu(torch.ones(S, S, dtype=torch.bool), 1)
def heads(x):
    return x.reshape(B, S, H, D // H).transpose(1, 2)
def step():
    with torch.autocast("cpu", dtype=torch.bfloat16,
                        enabled=cfg["autocast"]):
        loss = forward()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()
def forward():
    x = wte[tokens] + wpe
    for l in layers:
        h = F.layer_norm(x, (D,), l["ln1_g"], l["ln1_b"])
        q, k, v = (heads(h @ l[w] + l[b]) for w, b in
                   (("wq", "bq"), ("wk", "bk"), ("wv", "bv")))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D // H)
        a = torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v
        x = x + a.transpose(1, 2).reshape(B, S, D) @ l["wo"] + l["bo"]
        h = F.layer_norm(x, (D,), l["ln2_g"], l["ln2_b"])
        h = F.gelu(h @ l["w_fc"] + l["b_fc"], approximate="tanh")
        x = x + h @ l["w_proj"] + l["b_proj"]
    x = F.layer_norm(x, (D,), lnf_g, lnf_b)
    return F.cross_entropy((x @ wte.t()).reshape(B * S, V),
                           targets.reshape(-1))
times = []
for _ in range(cfg["warmup"] + cfg["steps"]):
    t0 = time.perf_counter()
    step()
    times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps(times[cfg["warmup"]:]))
"""


def model_flops(cfg):
    """A GPT-2 step's FLOPs: 3x the forward's GEMMs (backward 2x)."""
    b, s, v, l, d = (int(cfg[k]) for k in ("batch", "seq", "vocab",
                                            "n_layer", "d_model"))
    per_token = l * (24 * d * d + 4 * s * d) + 2 * d * v
    return 3 * b * s * per_token


def has_avx512():
    try:
        return " avx512f" in open("/proc/cpuinfo").read()
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--variants",
                    default="remat-onednn,remat-openblas,remat-bf16,torch,"
                    "torch-skylakex,torch-autocast")
    ap.add_argument("--work")
    ap.add_argument("--json")
    args = ap.parse_args()
    remat = os.path.join(args.build, "tools", "remat", "remat")
    bench = os.path.join(args.build, "tools", "bench", "remat-gemm-bench")
    work = args.work or tempfile.mkdtemp(prefix="remat-gemm-speed.")
    sets = dict(s.split("=", 1) for s in
                ["n_layer=12", "seq=256", "batch=8", "dropout=0"] + args.set)
    cfg = json.load(open(os.path.join(ROOT, "models", "gpt2.json")))["config"]
    cfg.update({k: float(v) if "." in v else int(v) for k, v in sets.items()})
    set_args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    plans = {}
    for precision in ("fp32", "bf16"):
        plans[precision], _ = cpu_measure.compile_plan(
            remat, os.path.join(ROOT, "models", "gpt2.json"),
            set_args + ["--precision", precision], work, "gpt2-" + precision)
    flops = model_flops(cfg)
    threads = str(args.threads)
    base = dict(os.environ, OMP_NUM_THREADS=threads,
                OPENBLAS_NUM_THREADS=threads)
    variants = args.variants.split(",")
    if "torch-skylakex" in variants and not has_avx512():
        print("torch-skylakex: not run, this CPU has no AVX-512")
        variants.remove("torch-skylakex")
    times = {v: [] for v in variants}
    gemm = []
    for rnd in range(args.rounds):
        gemm.append(cpu_measure.gemm_peaks(bench, base))
        for v in variants:
            t0 = time.time()
            if v.startswith("remat"):
                env = dict(base)
                if v == "remat-openblas":
                    env["REMAT_CPU_GEMM"] = "blas"
                if v == "remat-onednn":
                    env["REMAT_CPU_GEMM"] = "onednn"
                plan = plans["bf16" if v == "remat-bf16" else "fp32"]
                log = cpu_measure.run_plan(remat, plan,
                                           args.warmup + args.steps, work,
                                           f"{v}-{rnd}", env=env)
                times[v] += [e["ms"] for e in log[args.warmup:]]
            else:
                env = dict(base)
                if v == "torch-skylakex":
                    env["OPENBLAS_CORETYPE"] = "SkylakeX"
                c = dict(cfg, warmup=args.warmup, steps=args.steps,
                         autocast=v == "torch-autocast")
                r = subprocess.run(["/usr/bin/python3", "-c", TORCH_GPT2,
                                    json.dumps(c)], capture_output=True,
                                   text=True, env=env, check=True)
                times[v] += json.loads(r.stdout.strip().splitlines()[-1])
            print(f"round {rnd + 1}: {v} {time.time() - t0:.0f} s",
                  file=sys.stderr)
    peak = {}
    for measured in gemm:
        for k, v in measured.items():
            peak[k] = max(peak.get(k, 0.0), v)
    print(f"GPT-2 {sets}, {threads} threads, {args.rounds} rounds x "
          f"{args.steps} steps (after {args.warmup} warm-up)")
    print(f"step {flops / 1e12:.3f} TFLOP; GEMM peak (2048x768x3072, "
          "best): " + ", ".join(
        f"{k} {v:.0f} GFLOP/s" for k, v in peak.items()))
    torch_ms = statistics.median(times["torch"]) if "torch" in times else None
    rows = []
    print("| variant | median ms | vs PyTorch eager | GFLOP/s | of GEMM peak |")
    print("|---|---:|---:|---:|---:|")
    top32 = max([peak[k] for k in ("onednn", "blas") if k in peak],
                default=None)
    for v in variants:
        ms = statistics.median(times[v])
        rate = flops / ms / 1e6 if flops else None
        bf16 = v in ("remat-bf16", "torch-autocast")
        top = peak.get("bf16") if bf16 else top32
        rows.append(dict(variant=v, median_ms=ms, steps=times[v],
                         gflops=rate))
        ratio = f"{ms / torch_ms:.2f}x" if torch_ms else "-"
        print(f"| {v} | {ms:,.0f} | {ratio} | "
              f"{rate:.0f} | {rate / top:.2f} |" if rate and top else
              f"| {v} | {ms:,.0f} | {ratio} | - | - |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(config=sets, threads=args.threads, flops=flops,
                           gemm_peak=peak, rows=rows), f, indent=1)
    # The ratios, where both sides ran.
    for a, b in (("remat-onednn", "torch"), ("remat-onednn", "torch-skylakex"),
                 ("remat-bf16", "remat-onednn"),
                 ("remat-bf16", "torch-autocast")):
        if a in times and b in times:
            ratio = statistics.median(times[a]) / statistics.median(times[b])
            print(f"{a} / {b}: {ratio:.2f}")


if __name__ == "__main__":
    main()
