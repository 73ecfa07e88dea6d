#!/usr/bin/env python3
"""summary.md of a tests/device/device-check.sh run (stdlib only), from its
logs folder: the stages, the budgets' and NCCL's bitwise comparisons, a
table of the `remat-run --backend cuda` runs (memory against the budget,
step time, losses), the profile table, compute-sanitizer's summaries, the
PyTorch peer's table and the resnet50 comparison. Prints to stdout.

usage: summary.py LOGS PLANS_DIR TOTAL_S ELAPSED_S [FAILED_STAGE]
"""
import glob
import json
import os
import statistics
import sys

MiB = 2 ** 20


def mib(v):
    return "-" if v in (None, "") else "%.1f" % (v / MiB)


def stages(logs, total, took, failed):
    print("# device check: %s in %ss (budget %ss)\n" % (
        "FAIL at " + failed if failed else "PASS", took, total))
    print("| stage | result | s | detail |\n|---|---|---|---|")
    results = os.path.join(logs, "results.tsv")
    for line in open(results).read().splitlines()[1:]:
        cells = line.split("\t") + [""] * 4
        print("| %s |" % " | ".join(c.replace("|", "/") for c in cells[:4]))


def differences(b):
    """budgets_bitwise.py's largest differences, where not bitwise."""
    return "" if b.get("bitwise") else (
        "; largest loss difference %s, largest gradient difference %s in %s"
        % (b.get("largest_loss_difference", 0),
           b.get("largest_gradient_difference", 0),
           b.get("largest_gradient_difference_in", "-")))


def bitwise(logs):
    path = os.path.join(logs, "bitwise.json")
    if os.path.exists(path):
        b = json.load(open(path))
        print("\nbudgets bitwise (%s vs %s): %s%s" % (
            b.get("a"), b.get("b"), "yes" if b.get("bitwise") else "NO",
            differences(b)))
        if b.get("why"):
            print("why: " + b["why"])
    path = os.path.join(logs, "nccl-bitwise.json")
    if os.path.exists(path):
        b = json.load(open(path))
        print("\none rank through NCCL (%s) vs plain (%s): %s%s" % (
            b.get("b"), b.get("a"),
            "bitwise" if b.get("bitwise") else "NOT bitwise",
            differences(b)))


def read_log(path):
    """The rows of a --log JSONL file that parse (none where it is
    missing)."""
    rows = []
    if os.path.exists(path):
        for line in open(path):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def runs(logs, plans_dir):
    print("\n## remat run (--backend cuda)\n")
    print("budget = the plan's report.budget_bytes; in budget = arena + "
          "workspace (what the budget counts); overhead = measured device "
          "bytes - context - arena - workspace (cuBLAS handle, allocation "
          "rounding, modules, graphs, unattributed); docs/cuda.md, "
          "\"Memory\".\n")
    print("| plan | batch | budget MiB | arena + workspace MiB | within | "
          "measured peak - context MiB | overhead MiB | unattributed MiB | "
          "ms (median, steps 3+) | loss first -> last |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for txt in sorted(glob.glob(os.path.join(logs, "bench", "*.txt"))):
        name = os.path.basename(txt)[:-4]
        rows = read_log(os.path.join(logs, "bench", name + ".jsonl"))
        plan = {}
        try:
            plan = json.load(open(os.path.join(plans_dir, name + ".plan")))
        except Exception:
            pass
        budget = plan.get("report", {}).get("budget_bytes")
        m = rows[-1].get("device_memory", {}) if rows else {}
        inside = (m["arena_bytes"] + m["workspace_bytes"]) if m else None
        within = "-" if budget is None or inside is None else (
            "yes" if inside <= budget else "NO")
        peak = (m["peak_bytes"] - m["context_bytes"]) if m else None
        timed = [r["ms"] for r in rows[2:]] or [r["ms"] for r in rows]
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, plan.get("batch", "-"), mib(budget), mib(inside), within,
            mib(peak), mib(m.get("overhead_bytes")),
            mib(m.get("unattributed_bytes")),
            "%.2f" % statistics.median(timed) if timed else "-",
            "%.4g -> %.4g" % (rows[0]["loss"], rows[-1]["loss"]) if rows
            else "failed (logs/bench/%s.txt)" % name))


def profile(logs):
    path = os.path.join(logs, "profile.md")
    if os.path.exists(path):
        print("\n## remat-run profile (--backend cuda)\n")
        print("Every op call of the plan timed (profiles/NAME.json: plan "
              "with `remat compile --device-profile FILE`); recomputations "
              "measured = the plan's recomputation steps' medians over the "
              "store-all plan's median step.\n")
        print(open(path).read())


def sanitizer(logs):
    for tool in ("racecheck", "synccheck"):
        path = os.path.join(logs, tool + ".txt")
        if os.path.exists(path):
            lines = [line.strip() for line in open(path, errors="replace")
                     if "SUMMARY" in line]
            print("\ncompute-sanitizer %s: %s" % (
                tool, lines[-1] if lines
                else "no summary line (logs/%s.txt)" % tool))


def pytorch_peer(logs):
    print("\n## pytorch peer\n")
    try:
        torch = json.load(open(os.path.join(logs, "torch.json")))
        print("torch %s on %s\n" % (torch["torch"], torch["device_name"]))
        print("| model | mode | batch | ms (median) | max_memory_allocated "
              "MiB | status |\n|---|---|---|---|---|---|")
        for r in torch["results"]:
            print("| %s | %s | %s | %s | %s | %s |" % (
                r["model"], r["mode"], r.get("batch", ""),
                "%.2f" % r["ms_median"] if "ms_median" in r else "-",
                mib(r.get("max_memory_allocated")),
                r["status"] + ("" if r["status"] == "ok"
                               else ": " + r.get("error", "")[:80])))
    except Exception as e:
        print("no PyTorch results (%s)" % e)


def bf16(logs):
    path = os.path.join(logs, "bf16.md")
    if os.path.exists(path):
        print("\n## bf16: --precision bf16 against float32 and PyTorch "
              "autocast\n")
        print(open(path).read().rstrip())


def resnet50(logs):
    path = os.path.join(logs, "resnet50.md")
    if os.path.exists(path):
        print("\n## resnet50: remat --backend cuda against PyTorch\n")
        print(open(path).read().rstrip())


def main(logs, plans_dir, total, took, failed):
    stages(logs, total, took, failed)
    bitwise(logs)
    runs(logs, plans_dir)
    profile(logs)
    sanitizer(logs)
    pytorch_peer(logs)
    bf16(logs)
    resnet50(logs)


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        sys.exit("usage: summary.py LOGS PLANS_DIR TOTAL_S ELAPSED_S "
                 "[FAILED_STAGE]")
    main(*sys.argv[1:5], sys.argv[5] if len(sys.argv) == 6 else "")
