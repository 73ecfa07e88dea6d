#!/usr/bin/env python3
"""The bf16 stage's table for tests/device/device-check.sh (stdlib only;
issue #36, acceptance 6): GPT-2's store-all step on the CUDA backend in
float32 (the whole-model stage's run) and with --precision bf16, beside
PyTorch eager and eager under torch.autocast(bfloat16) on the same device.

usage: bf16_table.py LOGS WHOLE OUT.md
  LOGS/bench/WHOLE-all.jsonl, LOGS/bench/WHOLE-bf16.jsonl: remat-run logs;
  LOGS/bf16-torch.json: tools/bench/torch_gpu_bench.py --models gpt2
  --modes eager,autocast.
Per run: the median step time of steps 2+, the device's measured peak
minus its context, arena + workspace, the first and last loss; the ratios
remat bf16 / remat float32 and remat bf16 / PyTorch autocast. Prints the
one-line finding; exit 0 when both remat runs have rows, else 1.
"""
import json
import os
import statistics
import sys

MiB = 2 ** 20


def rows_of(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def median_ms(rows):
    timed = [r["ms"] for r in rows[1:]] or [r["ms"] for r in rows]
    return statistics.median(timed) if timed else None


def mib(v):
    return "-" if v is None else "%.1f" % (v / MiB)


def main(logs, whole, out):
    lines = ["| run | ms (median) | device peak - context MiB (PyTorch: "
             "max_memory_allocated) | arena + workspace MiB | loss |",
             "|---|---|---|---|---|"]
    ms = {}
    for tag, name in (("remat float32", whole + "-all"),
                      ("remat bf16", whole + "-bf16")):
        rows = rows_of(os.path.join(logs, "bench", name + ".jsonl"))
        m = rows[-1].get("device_memory", {}) if rows else {}
        ms[tag] = median_ms(rows)
        lines.append("| %s (%s.plan) | %s | %s | %s | %s |" % (
            tag, name, "-" if ms[tag] is None else "%.1f" % ms[tag],
            mib(m["peak_bytes"] - m["context_bytes"]) if m else "-",
            mib(m["arena_bytes"] + m["workspace_bytes"]) if m else "-",
            "%.5g -> %.5g" % (rows[0]["loss"], rows[-1]["loss"]) if rows
            else "no run"))
    try:
        torch = json.load(open(os.path.join(logs, "bf16-torch.json")))
        results = torch["results"]
    except (OSError, ValueError, KeyError):
        results = []
    for r in results:
        tag = "PyTorch " + r["mode"]
        ms[tag] = r.get("ms_median")
        lines.append("| %s | %s | %s | - | %s |" % (
            tag, "-" if ms[tag] is None else "%.1f" % ms[tag],
            mib(r.get("max_memory_allocated")),
            "%.5g" % r["loss"] if "loss" in r else r.get("status", "")))

    def ratio(a, b):
        return ("%.2fx" % (ms[a] / ms[b])) if ms.get(a) and ms.get(b) else "-"
    finding = ("remat bf16 / remat float32 %s, remat bf16 / PyTorch "
               "autocast %s" % (ratio("remat bf16", "remat float32"),
                                ratio("remat bf16", "PyTorch autocast")))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n\n" + finding + "\n")
    print("\n".join(lines))
    print(finding)
    return 0 if ms.get("remat float32") and ms.get("remat bf16") else 1


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: bf16_table.py LOGS WHOLE OUT.md")
    sys.exit(main(*sys.argv[1:]))
