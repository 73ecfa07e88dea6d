#!/usr/bin/env python3
"""End-to-end checks of `remat` on the CPU (run by ctest; stdlib only).

  checks.py REMAT train-falls      gpt2 tiny trains: loss falls well below its start
  checks.py REMAT forum-plan       seed_mlp at batch 100000 plans ~3 activation buffers
  checks.py REMAT dropout-replay   same seed: identical losses with dropout on;
                                   the masks change the result (vs dropout 0)
  checks.py REMAT cli-errors       usage and input errors exit non-zero with a message
  checks.py REMAT budgets-bitwise  gpt2 tiny (dropout on) and seed_mlp: loss and
                                   every gradient bitwise equal at store-all, half
                                   the activation memory and the minimum budget;
                                   arenas within budget; recompute steps present
  checks.py REMAT sweeps-in-budget every model (tiny): each budget of a sweep has
                                   planned peak and arena within it, and the
                                   compiled plans agree
  checks.py REMAT check-bounds     every model (tiny) at its minimum budget runs
                                   under remat run --check-bounds on the cpu
  checks.py REMAT device-profile   --device-profile names and files reach the
                                   planner and its report; bad ones are usage errors
  checks.py REMAT dump-values      run --dump-values/--dump-names all: gpt2 tiny's
                                   step-1 values bitwise equal at store-all and
                                   the minimum budget (values freed early and
                                   recomputed); name errors
  checks.py REMAT graph-reorder    plan --graph keeps the given order by default
                                   (proven optimum for it); --reorder moves an op
                                   and needs no recomputation
  checks.py REMAT data-memory      --data of a 32 MiB file: the run holds less
                                   than a quarter of it beside the arena
Exit 0 on success, 1 with a message on failure.
"""
import sys
import tempfile

# The helpers, for the scripts that import them from here (torch_parity.py,
# cuda_emulator.py, nccl.py).
from checks_common import (ROOT, compile_plan, fail, losses,  # noqa: F401
                           minimum_budget, model, run_plan,
                           safetensors_entries)
from checks_budgets import (budgets_bitwise, check_bounds, dump_values,
                            graph_reorder, ladder_plateau, max_batch,
                            plans_deterministic,
                            recompute_reads_latest, sweeps_in_budget)
from checks_memory import conv_workspace, data_memory, workspace_reserve
from checks_profiles import (device_profile, measured_profile,
                             measured_recompute)
from checks_train import (cli_errors, dropout_replay, forum_plan,
                          loss_grad_in_place, train_falls)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    remat, check = sys.argv[1], sys.argv[2]
    checks = {"train-falls": train_falls, "forum-plan": forum_plan,
              "dropout-replay": dropout_replay, "cli-errors": cli_errors,
              "budgets-bitwise": budgets_bitwise,
              "sweeps-in-budget": sweeps_in_budget,
              "graph-reorder": graph_reorder,
              "workspace-reserve": workspace_reserve,
              "conv-workspace": conv_workspace,
              "max-batch": max_batch,
              "ladder-plateau": ladder_plateau,
              "loss-grad-in-place": loss_grad_in_place,
              "check-bounds": check_bounds,
              "device-profile": device_profile,
              "measured-profile": measured_profile,
              "measured-recompute": measured_recompute,
              "plans-deterministic": plans_deterministic,
              "recompute-reads-latest": recompute_reads_latest,
              "dump-values": dump_values,
              "data-memory": data_memory}
    if check not in checks:
        print(f"unknown check {check}; one of {', '.join(checks)}")
        return 2
    with tempfile.TemporaryDirectory() as work:
        checks[check](remat, work)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
