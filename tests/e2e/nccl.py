#!/usr/bin/env python3
"""The CUDA backend's NCCL path on the CUDA emulator's fake NCCL
(docs/distributed.md "NCCL", docs/cuda.md "The CPU emulator").

  nccl.py one-rank --run EMU_REMAT_RUN [--remat REMAT]
      `remat run PLAN --backend cuda --comm nccl` (one rank, no MPI
      launcher: every gradient goes through ncclAllReduce) against the
      plain `--backend cuda` run of the same plan: losses of every step and
      the saved params and optimizer state bitwise equal; the fake NCCL
      reports collectives (so the path was taken, REMAT_CUDA_EMU_NCCL_LOG).
  nccl.py two-ranks --run EMU_REMAT_RUN [--remat REMAT]
      `mpirun -np 2 remat run PLAN --backend cuda` (NCCL, the default on
      several ranks) against `mpirun -np 2 remat run PLAN` on the cpu
      backend (MPI): step 1's loss within 1e-6 relative, every later
      step's within 1e-4, the saved params within 1e-4 relative each;
      for a plan with sharded optimizer state (ZeRO-1, uneven slices) too;
      `--comm mpi` on the cuda backend is refused with a clear error.

EMU_REMAT_RUN is `remat-run` of a REMAT_CUDA_EMULATOR=ON build. Plans:
compiled by REMAT (a build with the compiler; default $REMAT_COMPILER, which
tools/test.sh sets) where given, else the
checked-in ones in tests/e2e/plans (GPT-2 tiny; mlp_deep tiny for 2 ranks,
whole and sharded with width 15). Exit 0 on success, 1 with a message on
failure, 77 (skipped) when the build has no CUDA backend with NCCL, or
(two-ranks) no mpirun or no MPI.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import fail, safetensors_entries  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]


def plan_for(args, work, name, model, extra):
    """REMAT compiles it when given, else the checked-in plan `name`."""
    if not args.remat:
        return os.path.join(HERE, "plans", name)
    out = os.path.join(work, name)
    r = subprocess.run([args.remat, "compile",
                        os.path.join(ROOT, "models", model + ".json"),
                        "--preset", "tiny", *extra, "--emit=plan", "-o", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"remat compile {model} {' '.join(extra)}:\n{r.stderr}")
    return out


def run(argv, work, tag, launcher=(), env=None):
    """Losses of every step, the saved state (name -> floats), stderr."""
    log = os.path.join(work, tag + ".jsonl")
    save = os.path.join(work, tag + ".safetensors")
    full = [*launcher, *argv, "--seed", "3", "--log", log, "--save", save]
    r = subprocess.run(full, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        fail(f"{' '.join(full)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    with open(log) as f:
        losses = [json.loads(line)["loss"] for line in f]
    state = {name: array("f", bytes(data))
             for name, info, data in safetensors_entries(save)}
    return losses, state, r.stderr


def needs_nccl(runner, plan, launcher=()):
    """Skips unless the build's cuda backend has NCCL (and, under a
    launcher, MPI)."""
    r = subprocess.run([*launcher, runner, plan, "--steps", "0", "--backend",
                        "cuda", "--comm", "nccl"], capture_output=True,
                       text=True, timeout=300)
    if "built without MPI" in r.stderr:
        print("SKIP: this remat-run was built without MPI")
        sys.exit(SKIP)
    if "unknown backend" in r.stderr or "no CUDA device" in r.stderr:
        print("SKIP: no cuda backend in this build")
        sys.exit(SKIP)
    if "has no NCCL" in r.stderr:
        print("SKIP: this build's cuda backend has no NCCL")
        sys.exit(SKIP)
    if r.returncode != 0:
        fail(f"--comm nccl probe: exit {r.returncode}\n{r.stderr}")


def collectives(stderr):
    """The fake NCCL's collective counts, one per rank."""
    counts = [int(line.split(":")[-1].split()[0]) for line in
              stderr.splitlines() if "cuda emulator: nccl rank" in line]
    if not counts or min(counts) <= 0:
        fail(f"the run did not go through NCCL:\n{stderr}")
    return counts


def one_rank(args, work):
    plan = plan_for(args, work, "gpt2_tiny_520k.plan", "gpt2", [])
    needs_nccl(args.run, plan)
    steps = ["--steps", "4", "--backend", "cuda"]
    plain, plain_state, _ = run([args.run, plan, *steps], work, "plain")
    nccl, nccl_state, err = run([args.run, plan, *steps, "--comm", "nccl"],
                                work, "nccl",
                                env={"REMAT_CUDA_EMU_NCCL_LOG": "1"})
    counts = collectives(err)
    if "goes through nccl" not in err:
        fail(f"no one-rank NCCL line on stderr:\n{err}")
    if nccl != plain:
        fail(f"--comm nccl losses {nccl} != plain {plain}")
    if sorted(nccl_state) != sorted(plain_state):
        fail("saved tensors differ in names")
    for name in plain_state:
        if nccl_state[name].tobytes() != plain_state[name].tobytes():
            fail(f"saved {name} differs from the plain run's")
    print(f"one rank: {len(plain)} losses and {len(plain_state)} saved "
          f"tensors bitwise equal; {counts[0]} NCCL collectives")


def close(a, b, tolerance):
    return abs(a - b) <= tolerance * max(abs(b), 1e-30)


def two_ranks(args, work):
    if not shutil.which("mpirun"):
        print("SKIP: no mpirun (openmpi-bin)")
        sys.exit(SKIP)
    cases = [("mlp_deep_tiny_ranks2.plan", ["--ranks", "2"]),
             ("mlp_deep_tiny_ranks2_sharded_w15.plan",
              ["--ranks", "2", "--shard-optimizer", "--set", "width=15"])]
    for name, extra in cases:
        plan = plan_for(args, work, name, "mlp_deep", extra)
        needs_nccl(args.run, plan, MPIRUN)
        steps = ["--steps", "20"]
        tag = name.split(".")[0]
        cpu, cpu_state, _ = run([args.run, plan, *steps], work, tag + "-cpu",
                                launcher=MPIRUN)
        cuda, cuda_state, err = run(
            [args.run, plan, *steps, "--backend", "cuda"], work,
            tag + "-cuda", launcher=MPIRUN,
            env={"REMAT_CUDA_EMU_NCCL_LOG": "1"})
        counts = collectives(err)
        if len(counts) != 2:
            fail(f"{name}: NCCL collectives of {len(counts)} ranks, not 2:\n"
                 f"{err}")
        if "(nccl)" not in err:
            fail(f"{name}: the run does not say it averages with NCCL:\n{err}")
        if len(cuda) != len(cpu) or not cpu:
            fail(f"{name}: {len(cuda)} cuda losses vs {len(cpu)} cpu")
        for i, (a, b) in enumerate(zip(cuda, cpu)):
            if not close(a, b, 1e-6 if i == 0 else 1e-4):
                fail(f"{name}: step {i + 1}: cuda loss {a} vs cpu {b}")
        worst = 0.0
        for tensor, values in cpu_state.items():
            other = cuda_state.get(tensor)
            if other is None or len(other) != len(values):
                fail(f"{name}: saved {tensor} missing or resized")
            num = sum((x - y) ** 2 for x, y in zip(other, values)) ** 0.5
            den = sum(y * y for y in values) ** 0.5
            rel = num / den if den > 0 else num
            worst = max(worst, rel)
            if rel > 1e-4:
                fail(f"{name}: saved {tensor}: relative difference {rel}")
        print(f"{name}: 2 ranks, {len(cpu)} steps: cuda (NCCL, "
              f"{counts} collectives) within tolerance of cpu (MPI); "
              f"largest loss difference "
              f"{max(abs(a - b) for a, b in zip(cuda, cpu)):.3g}, "
              f"largest saved-tensor difference {worst:.3g}")
    # --comm mpi cannot average device memory: a clear error.
    r = subprocess.run(MPIRUN + [args.run, plan, "--backend", "cuda",
                                 "--comm", "mpi"], capture_output=True,
                       text=True, timeout=300)
    if r.returncode == 0 or "--comm mpi averages host memory" not in r.stderr:
        fail(f"--comm mpi on the cuda backend: exit {r.returncode}\n"
             f"{r.stderr}")
    print("--comm mpi on the cuda backend: refused with a clear error")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["one-rank", "two-ranks"])
    parser.add_argument("--run", required=True)
    parser.add_argument("--remat", default=os.environ.get("REMAT_COMPILER"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        if args.check == "one-rank":
            one_rank(args, work)
        else:
            two_ranks(args, work)


if __name__ == "__main__":
    main()
