#!/usr/bin/env python3
"""The budget of a plan at SHARE percent of a store-all plan's activation
memory (activations + grads), plus RESERVE bytes of CUDA workspace, from
the store-all plan's report (`remat compile --report`), for
tests/device/device-plans.sh (stdlib only): planned peak - activation
memory + activation memory * SHARE // 100 + RESERVE. Prints the bytes.

usage: budget_at.py REPORT.json SHARE RESERVE
"""
import json
import sys

if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: budget_at.py REPORT.json SHARE RESERVE")
    report = json.load(open(sys.argv[1]))
    share, reserve = int(sys.argv[2]), int(sys.argv[3])
    breakdown = report["breakdown"]
    activations = breakdown["activations"] + breakdown["grads"]
    print(report["planned_peak_bytes"] - activations
          + activations * share // 100 + reserve)
