#!/usr/bin/env python3
"""Random layered training graphs for the planner (issue #13's hard set).

Writes a networkx node-link JSON in the Checkmate graphs' format
(`remat plan --graph FILE` reads it): nodes with id, name, cost_cpu,
cost_ram and backward; links source -> target with source < target.

The forward part is a stack of layers of 1 to --width nodes; each forward
node reads one or two nodes of the layer before and, with probability
--skip, one node of an older layer (a skip connection). The last layer feeds
a loss node. Then, in reverse order, every forward node v (but the input)
gets a gradient node that reads the gradients of v's consumers (the loss
for those the loss reads), v's own operands and v itself.

Usage:
  tests/tools/gen_layered_graph.py --nodes 200 --seed 1 -o graph.json
  tests/tools/gen_layered_graph.py --suite DIR   # the benchmark set of
                                                 # docs/benchmarks.md
The output depends only on the arguments (Python's seeded random).
"""
import argparse
import json
import os
import random
import sys

# (nodes, seed) of the benchmark set (docs/benchmarks.md, "Random layered
# training graphs").
SUITE = [(20, 1), (28, 2), (40, 3), (74, 4), (120, 5), (216, 6), (500, 7),
         (1000, 8), (3000, 9)]


def generate(nodes, seed, width=3, skip=0.3):
    rng = random.Random(seed)
    # Forward nodes (input included) are about half of the graph.
    forward_target = max(3, (nodes + 3) // 2)
    layers = [[0]]
    count = 1
    while count < forward_target - 1:
        w = min(rng.randint(1, width), forward_target - 1 - count)
        layers.append(list(range(count, count + w)))
        count += w
    operands = {0: []}
    for li in range(1, len(layers)):
        for v in layers[li]:
            prev = layers[li - 1]
            ops = set(rng.sample(prev, min(len(prev), rng.randint(1, 2))))
            if li >= 2 and rng.random() < skip:
                older = layers[rng.randint(0, li - 2)]
                ops.add(rng.choice(older))
            operands[v] = sorted(ops)
    # Every forward node feeds something: dangling ones feed the loss too.
    consumers = {v: [] for v in operands}
    for v, ops in operands.items():
        for o in ops:
            consumers[o].append(v)
    loss = count
    loss_ops = sorted(set(layers[-1]) |
                      {v for v in operands if not consumers[v] and v != loss})
    operands[loss] = loss_ops
    for o in loss_ops:
        consumers[o].append(loss)
    consumers[loss] = []
    sizes, costs, names = {}, {}, {}
    for v in range(loss + 1):
        sizes[v] = rng.randint(1, 16) * 1 << 20
        costs[v] = rng.randint(1, 20)
        names[v] = "f%d" % v
    names[0], names[loss] = "input", "loss"
    sizes[loss], costs[loss] = 4, 1
    # Gradients in reverse order of their forward nodes.
    grad = {}
    next_id = loss + 1
    backward_ops = {}
    for v in range(loss - 1, 0, -1):
        g = next_id
        next_id += 1
        grad[v] = g
        ops = {v} | set(operands[v])
        for c in consumers[v]:
            ops.add(loss if c == loss else grad[c])
        backward_ops[g] = sorted(ops)
        sizes[g] = sizes[v]
        costs[g] = 2 * costs[v]
        names[g] = "grad_f%d" % v
    total = next_id
    out_nodes = []
    for v in range(total):
        out_nodes.append({"id": v, "name": names[v], "cost_cpu": costs[v],
                          "cost_ram": sizes[v], "backward": v >= loss})
    links = []
    for v in range(total):
        ops = operands.get(v, backward_ops.get(v, []))
        for o in ops:
            links.append({"source": o, "target": v})
    return {"directed": True, "multigraph": False,
            "graph": {"name": "layered_n%d_s%d" % (total, seed)},
            "nodes": out_nodes, "links": links}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, default=28,
                   help="approximate node count (forward + backward)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--width", type=int, default=3,
                   help="most nodes per forward layer")
    p.add_argument("--skip", type=float, default=0.3,
                   help="probability of a skip connection per node")
    p.add_argument("-o", "--output", help="output file (default stdout)")
    p.add_argument("--suite", metavar="DIR",
                   help="write the benchmark set into DIR")
    a = p.parse_args()
    if a.suite:
        os.makedirs(a.suite, exist_ok=True)
        for nodes, seed in SUITE:
            g = generate(nodes, seed, a.width, a.skip)
            path = os.path.join(a.suite, "layered_%d_s%d.json" % (nodes, seed))
            with open(path, "w") as f:
                json.dump(g, f)
            print(path, len(g["nodes"]), "nodes")
        return 0
    g = generate(a.nodes, a.seed, a.width, a.skip)
    text = json.dumps(g)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
