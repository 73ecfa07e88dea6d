#!/usr/bin/env python3
"""Every model's compiled plans through `remat run --backend cuda` on the CUDA
emulator (stdlib only, and /usr/bin/python3 with torch for the ONNX exports;
tools/test.sh runs it).

  cuda_emulator.py --remat REMAT --run EMU_REMAT_RUN [--work DIR]

REMAT is the compiler (`remat`, main build); EMU_REMAT_RUN is `remat-run`
of a REMAT_CUDA_EMULATOR=ON build (docs/cuda.md, "The CPU emulator"). For
gpt2 (tiny and small, dropout 0.1; tiny at batch 8 also split into 2
micro-batches), mlp_deep (tiny) and seed_mlp (tiny), at store-all
and at half the store-all activation memory plus the CUDA workspace:
- the cuda run's losses and step-1 gradients are bitwise equal at both
  budgets (recomputation changes no bit);
- they match the CPU backend's: losses within 1e-4 relative, each gradient
  within 1e-4 of its largest magnitude or of 1e-4 of the largest gradient
  of all, whichever is larger (GPT-2's key-bias gradients are zero in exact
  arithmetic: rounding noise on both backends);
- a budgeted run reports its arena + workspace within the plan's budget;
- the tiny budgeted runs pass `remat run --check-bounds` (every step reads
  only its operands and writes only its results).
Then every model of models/, the test models of tests/e2e/models and three
ONNX exports (tools/export_onnx.py: cnn, norm, transformer) compiled with
`--precision bf16` (docs/precision.md): the cuda run (bf16 GEMMs through
cuBLAS's GemmEx, other ops on float copies) against the CPU backend's,
losses within 1e-2 relative and each gradient within 1e-2 normalized as
above; GPT-2 tiny in bf16 also at half its store-all activations, bitwise
equal to its store-all run.
Exit 0 on success, 1 with a message on failure.
"""
import argparse
import json
import os
import subprocess
import sys
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workdir  # noqa: E402
from checks import (compile_plan, fail, minimum_budget, model,  # noqa: E402
                    safetensors_entries)

# The CUDA backend's default workspace for these models (32 MiB of cuBLAS
# workspace plus kernel scratch) fits in this reserve, so nothing shrinks.
RESERVE = 40 << 20
# bf16 results on the two backends: the same float math on the same bf16
# values, the float sums in other orders, so a result may round to the
# neighbouring bf16 value (2^-8 relative apart).
BF16_TOLERANCE = 1e-2
HERE = os.path.dirname(os.path.abspath(__file__))
TEST_MODELS = os.path.join(HERE, "models")
EXPORT_ONNX = os.path.join(HERE, "..", "..", "tools", "export_onnx.py")
# Debian's python3-torch (tools/setup.sh installs it).
TORCH_PYTHON = "/usr/bin/python3"


def read_gradients(path):
    """The F32 tensors of a safetensors file, by name."""
    out = {}
    for name, info, data in safetensors_entries(path):
        if info["dtype"] != "F32":
            fail(f"{path}: {name} is {info['dtype']}, expected F32")
        out[name] = array("f", bytes(data))
    return out


def run(runner, plan, backend, steps, work, tag, extra=()):
    log = os.path.join(work, tag + ".jsonl")
    grads = os.path.join(work, tag + ".safetensors")
    r = subprocess.run([runner, plan, "--steps", str(steps), "--seed", "5",
                        "--backend", backend, "--log", log, "--dump-grads",
                        grads, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"remat run {plan} --backend {backend} failed:\n{r.stderr}")
    with open(log) as f:
        losses = [json.loads(line)["loss"] for line in f]
    return losses, read_gradients(grads), r.stdout + r.stderr


def compare_with_cpu(name, cuda, cpu, tolerance=1e-4):
    (cuda_losses, cuda_grads, _), (cpu_losses, cpu_grads, _) = cuda, cpu
    for step, (a, b) in enumerate(zip(cuda_losses, cpu_losses), 1):
        if abs(a - b) > tolerance * max(abs(b), 1e-6):
            fail(f"{name}: step {step} loss {a} on cuda, {b} on the cpu")
    if cuda_grads.keys() != cpu_grads.keys():
        fail(f"{name}: gradient names differ: {sorted(cuda_grads)} vs "
             f"{sorted(cpu_grads)}")
    # A gradient that is zero in exact arithmetic (GPT-2's key biases:
    # softmax ignores a shift shared by a row) is rounding noise on both
    # backends (about 1e-10 of the largest gradient): a gradient is measured
    # against at least 1e-4 of the largest one.
    largest = max(max(abs(v) for v in g) for g in cpu_grads.values())
    worst = 0.0
    for param, b in cpu_grads.items():
        a = cuda_grads[param]
        scale = max(max(abs(v) for v in b), tolerance * largest, 1e-30)
        error = max(abs(x - y) for x, y in zip(a, b)) / scale
        worst = max(worst, error)
        if error > tolerance:
            fail(f"{name}: gradient of {param}: normalized error {error:.3g} "
                 f"between cuda and the cpu")
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--remat", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--work")
    args = parser.parse_args()
    sys.exit(workdir.run_in(lambda work: run_cases(args, work),
                            "remat-cuda-emu-", given=args.work))


def check_budgets(args, work, tag, source, steps, tolerance=1e-4):
    """A model at store-all and at half its activations on cuda (bitwise
    equal, the budgeted run within its budget) and on the cpu."""
    plan_all, rep = compile_plan(args.remat, source, work, tag + "-all")
    if plan_all is None:
        fail(rep)
    b = rep["breakdown"]
    persistent = rep["planned_peak_bytes"] - b["activations"] - b["grads"]
    half = persistent + b["activations"] // 2
    # Below the minimum, plan at the minimum.
    arena_budget = max(half, minimum_budget(args.remat, source, work))
    budget = arena_budget + RESERVE
    plan_half, rep_half = compile_plan(
        args.remat, source + ["--budget", str(budget),
                              "--workspace-reserve", str(RESERVE)],
        work, tag + "-half")
    if plan_half is None:
        fail(f"{tag} at budget {budget}: {rep_half}")
    recomputes = sum(1 for s in json.load(open(plan_half))["steps"]
                     if s.get("recompute"))
    all_cuda = run(args.run, plan_all, "cuda", steps, work, tag + "-all-cuda")
    # Under the bounds check (runtime/BoundsCheck.h) where small.
    check = ["--check-bounds"] if "tiny" in source else []
    half_cuda = run(args.run, plan_half, "cuda", steps, work,
                    tag + "-half-cuda", check)
    half_cpu = run(args.run, plan_half, "cpu", steps, work, tag + "-half-cpu")
    if all_cuda[:2] != half_cuda[:2]:
        fail(f"{tag}: cuda results at store-all and at budget {budget} "
             f"differ: losses {all_cuda[0]} vs {half_cuda[0]}")
    if "(within)" not in half_cuda[2]:
        fail(f"{tag}: the budgeted cuda run does not report its "
             f"workspace within the budget:\n{half_cuda[2]}")
    worst = compare_with_cpu(tag, half_cuda, half_cpu, tolerance)
    print(f"{tag}: store-all arena {rep['arena_bytes']} B and budget "
          f"{budget} B (arena {rep_half['arena_bytes']} B, {recomputes} "
          f"recompute steps): cuda bitwise equal across budgets; "
          f"step-{steps} loss {half_cuda[0][-1]:.7f} on cuda, "
          f"{half_cpu[0][-1]:.7f} on the cpu; worst gradient error "
          f"{worst:.2g}")


def run_cases(args, work):
    """Runs every case in the folder `work`; 0 when all pass (a failure
    exits 1 through fail)."""
    # gpt2 small (d_model 128, seq 64, vocab 256) reaches kernel shapes the
    # tiny preset does not (wider rows, more attention slices); ~5 s a step.
    cases = (("gpt2", ["--preset", "tiny", "--set", "dropout=0.1"], 3),
             ("gpt2", ["--preset", "small", "--set", "dropout=0.1"], 2),
             ("mlp_deep", ["--preset", "tiny"], 3),
             ("seed_mlp", ["--preset", "tiny"], 3),
             # A split step: the slices' inputs filled between the runs of
             # the steps, the gradients accumulated.
             ("gpt2", ["--preset", "tiny", "--set", "dropout=0.1",
                       "--set", "batch=8", "--microbatches", "2"], 3),
             # Uneven slices (3, 3, 2 samples; the short one padded):
             # cross_entropy's padding rows, the forum MLP's sample mask.
             ("gpt2", ["--preset", "tiny", "--set", "dropout=0.1",
                       "--set", "batch=8", "--microbatches", "3"], 3),
             ("seed_mlp", ["--preset", "tiny", "--microbatches", "3"], 3))
    for name, config, steps in cases:
        split = [config[i + 1] for i, c in enumerate(config)
                 if c == "--microbatches"]
        tag = f"{name}-{config[1]}" + (f"-k{split[0]}" if split else "")
        check_budgets(args, work, tag, [model(name + ".json")] + config,
                      steps)
    bf16_cases(args, work)
    return 0


def bf16_cases(args, work):
    """Every model with --precision bf16 on cuda against the cpu."""
    bf16 = ["--precision", "bf16"]
    check_budgets(args, work, "gpt2-tiny-bf16",
                  [model("gpt2.json"), "--preset", "tiny", "--set",
                   "dropout=0.1"] + bf16, 2, BF16_TOLERANCE)
    sources = [(n, [model(n + ".json"), "--preset", "tiny"])
               for n in ("mlp_deep", "seed_mlp")]
    sources.append(("classifier", [model("classifier.json")]))
    for n in ("activations", "conv", "norm", "transformer_ops"):
        sources.append((n, [os.path.join(TEST_MODELS, n + ".json")]))
    for n, extra in (("cnn", []), ("norm", []),
                     ("transformer", ["--frozen", "mask"])):
        path = os.path.join(work, n + ".onnx")
        r = subprocess.run([TORCH_PYTHON, EXPORT_ONNX, n, path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"export_onnx.py {n} failed:\n{r.stderr}")
        sources.append((n + ".onnx", [path] + extra))
    for name, source in sources:
        tag = name + "-bf16"
        plan, rep = compile_plan(args.remat, source + bf16, work, tag)
        if plan is None:
            fail(f"{name} --precision bf16: {rep}")
        cuda = run(args.run, plan, "cuda", 2, work, tag + "-cuda")
        cpu = run(args.run, plan, "cpu", 2, work, tag + "-cpu")
        worst = compare_with_cpu(tag, cuda, cpu, BF16_TOLERANCE)
        print(f"{tag}: step-2 loss {cuda[0][-1]:.7f} on cuda, "
              f"{cpu[0][-1]:.7f} on the cpu; worst gradient error "
              f"{worst:.2g}")


if __name__ == "__main__":
    main()
