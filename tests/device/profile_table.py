#!/usr/bin/env python3
"""The profile stage's check and table for tests/device/device-check.sh
(stdlib only). For each plan NAME (the first is store-all): PROFILES/NAME.json
(`remat-run profile`) against PLANS/NAME.plan: the profile's ops cover the
plan's, the device memory of the profiled run adds up and its arena +
workspace is within the plan's budget; the recomputations' measured share
of the store-all step beside the plan's modeled overhead. Writes the
markdown table to TABLE and prints one line (the problems, or what was
profiled).

usage: profile_table.py PROFILES PLANS TABLE NAME...
Exit 0 when no problem was found, 1 otherwise.
"""
import json
import os
import sys

MiB = 2 ** 20


def main(profiles, plans, table, names):
    rows, problems, base = [], [], None
    for name in names:
        prof = json.load(open(os.path.join(profiles, name + ".json")))
        plan = json.load(open(os.path.join(plans, name + ".plan")))
        step = prof["source"]["step_seconds"]
        if name == names[0]:
            base = step
        kinds = {s["op"] for s in plan["steps"]}
        timed = {k.split(" ")[0] for k in prof["ops"]}
        if timed != kinds or not all(v >= 0 for v in prof["ops"].values()):
            problems.append("%s: profile ops do not cover the plan's" % name)
        rec = sum(c["seconds"] for c in prof["calls"] if c["recompute"])
        m = prof["source"].get("device_memory")
        budget = plan.get("report", {}).get("budget_bytes")
        if not m:
            problems.append("%s: no device_memory" % name)
            inside = measured = None
        else:
            inside = m["arena_bytes"] + m["workspace_bytes"]
            measured = m["used_bytes"] - m["context_bytes"]
            if measured != inside + m["overhead_bytes"]:
                problems.append("%s: used bytes do not add up" % name)
            if budget is not None and inside > budget:
                problems.append("%s: arena + workspace over the budget"
                                % name)
        modeled = plan.get("report", {}).get("recompute_overhead", 0) or 0
        rows.append(
            "| %s | %s | %s | %s | %.2f | %d | %.1f%% | %.1f%% | %s |" % (
                name, "-" if budget is None else "%.1f" % (budget / MiB),
                "-" if inside is None else "%.1f" % (inside / MiB),
                "-" if measured is None else "%.1f" % (measured / MiB),
                1000 * step, len(prof["ops"]), 100 * modeled,
                100 * rec / base if base else 0,
                "-" if base is None
                else "%+.1f%%" % (100 * (step / base - 1))))
    with open(table, "w") as f:
        f.write("| plan | budget MiB | arena + workspace MiB | measured - "
                "context MiB | step ms (median) | op calls | modeled overhead "
                "| recomputations measured (of store-all's step) | step "
                "against store-all |\n|---|---|---|---|---|---|---|---|---|\n")
        f.write("\n".join(rows) + "\n")
    print("; ".join(problems) if problems else
          "%d plans profiled; profiles in profiles/" % len(names))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit("usage: profile_table.py PROFILES PLANS TABLE NAME...")
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
