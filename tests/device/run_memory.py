#!/usr/bin/env python3
"""The memory check of one `remat-run --backend cuda` run for
tests/device/device-check.sh (stdlib only): arena + workspace within the
plan's budget, and the device's used bytes accounted for (used - context =
arena + workspace + overhead). Prints one line.

usage: run_memory.py RUN.jsonl PLAN.plan
Exit 0 when both hold, 1 otherwise (OVER, DOES NOT ADD UP, no
device_memory in the log).
"""
import json
import sys

MiB = 2 ** 20


def main(log_path, plan_path):
    rows = [json.loads(line) for line in open(log_path) if line.strip()]
    plan = json.load(open(plan_path))
    m = rows[-1].get("device_memory") if rows else None
    if not m:
        print("no device_memory in the log")
        return 1
    budget = plan.get("report", {}).get("budget_bytes")
    inside = m["arena_bytes"] + m["workspace_bytes"]
    measured = m["used_bytes"] - m["context_bytes"]
    adds_up = measured == inside + m["overhead_bytes"]
    print("arena + workspace %.1f MiB%s; measured %.1f MiB = that + overhead "
          "%.1f MiB (handles %.1f, rounding %.1f, modules %.1f, graphs %.1f, "
          "unattributed %.1f)%s" % (
              inside / MiB,
              "" if budget is None else " of budget %.1f MiB (%s)" % (
                  budget / MiB, "within" if inside <= budget else "OVER"),
              measured / MiB, m["overhead_bytes"] / MiB,
              m["handle_bytes"] / MiB, m["allocation_bytes"] / MiB,
              m["module_bytes"] / MiB, m["graph_bytes"] / MiB,
              m["unattributed_bytes"] / MiB,
              "" if adds_up else " DOES NOT ADD UP"))
    return 0 if adds_up and (budget is None or inside <= budget) else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: run_memory.py RUN.jsonl PLAN.plan")
    sys.exit(main(sys.argv[1], sys.argv[2]))
