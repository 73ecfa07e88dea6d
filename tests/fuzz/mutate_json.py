"""Mutations of JSON inputs (plans and model files) for
tests/fuzz/fuzz_inputs.py: structural (deleted keys, changed types, huge /
negative / zero numbers, out-of-range buffer indices and offsets, odd
shapes, wrong dtypes, shuffled or duplicated list entries) and byte-level
(truncation, non-UTF-8 bytes, flipped bytes), and the JSON tree helpers
they and the minimizer share.

Only the Python standard library is used.
"""

import copy
import json

INTERESTING_INTS = [0, -1, 1, 2, 3, 4, 7, 63, 64, 65, 4096, 2**31 - 1, 2**31,
                    -2**31, 2**32 - 1, 2**32, 2**40, 2**48, 2**53, 2**62,
                    2**63 - 1, -2**63, 2**63, 2**64 - 1]
INTERESTING_FLOATS = [0.0, -0.0, 1e-45, -1.5, 0.5, 1.0, 1e30, -1e30, 1e308,
                      -1e308, 3.4e38, 1e39]
INTERESTING_STRINGS = ["", "f16", "bf16", "i32", "i64", "f32", "f64", "param",
                       "grad", "input", "optimizer", "activation",
                       "temporary", "state", "forward", "backward", "matmul",
                       "attention", "embedding", "cross_entropy", "reshape",
                       "transpose", "constant", "sgd_update",
                       "sgd_plain_update", "adamw_update",
                       "labels_of", "sequence", "randint", "randn", "normal",
                       "batch", "width", "1/0", "0", "-1", "2**64",
                       "sqrt(-1)", "(((", "99999999999999999999", "x" * 300,
                       "\u00e9\u4e2d", "a/b", "1e308*1e308"]


# --------------------------------------------------------------------------
# JSON tree helpers


def all_paths(node, path=()):
    """Every (path, value) in the tree, root included."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from all_paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from all_paths(v, path + (i,))


def get_at(root, path):
    for p in path:
        root = root[p]
    return root


def set_at(root, path, value):
    if not path:
        return value
    get_at(root, path[:-1])[path[-1]] = value
    return root


def delete_at(root, path):
    parent = get_at(root, path[:-1])
    if isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent.pop(path[-1])


def count_buffers(doc):
    if isinstance(doc, dict) and isinstance(doc.get("buffers"), list):
        return len(doc["buffers"])
    return 8


def count_names(doc):
    """Names defined in a model file (inputs, params, ops)."""
    names = []
    if isinstance(doc, dict):
        for key in ("inputs", "params", "ops"):
            for e in doc.get(key, []) if isinstance(doc.get(key), list) else []:
                if isinstance(e, dict) and isinstance(e.get("name"), str):
                    names.append(e["name"])
    return names


# --------------------------------------------------------------------------
# Mutations


class Mutator:
    def __init__(self, rng):
        self.rng = rng

    def number(self, old):
        r = self.rng
        choice = r.randrange(9)
        if choice == 0:
            return r.choice(INTERESTING_INTS)
        if choice == 1:
            return r.choice(INTERESTING_FLOATS)
        if isinstance(old, bool) or not isinstance(old, (int, float)):
            return r.choice(INTERESTING_INTS)
        if choice == 2:
            return -old
        if choice == 3:
            return old * r.choice([2, 3, 1 << 16, 1 << 32])
        if choice == 4:
            return old + r.choice([-64, -1, 1, 64, 4096])
        if choice == 5:
            return 0
        if choice == 6 and isinstance(old, int):
            return old // r.choice([2, 3, 64])
        if choice == 7:
            return float(old) + 0.5
        return r.choice(INTERESTING_INTS)

    def other_type(self, old):
        r = self.rng
        candidates = [None, True, False, "str", 0, -1, 1.5, [], {}, [1, 2],
                      {"kind": "zeros"}, [0], [-1], [2**63]]
        return copy.deepcopy(r.choice(candidates))

    def mutate_node(self, doc, path, value, meta):
        """One mutation at `path`; returns the new document."""
        r = self.rng
        key = path[-1] if path else None
        parent = get_at(doc, path[:-1]) if path else None
        ops = ["type", "delete"]
        if isinstance(value, bool):
            ops += ["flip"]
        elif isinstance(value, (int, float)):
            ops += ["number"] * 4
            if key in ("inputs", "outputs", "loss", "of") or (
                    isinstance(key, int) and len(path) >= 2 and
                    path[-2] in ("inputs", "outputs")):
                ops += ["index"] * 4
        elif isinstance(value, str):
            ops += ["string"] * 3 + ["name"] * 2
        elif isinstance(value, list):
            ops += ["list"] * 4
        elif isinstance(value, dict):
            ops += ["addkey", "dupkey"]
        op = r.choice(ops)
        if op == "delete" and path:
            delete_at(doc, path)
            return doc
        if op == "delete" or op == "type":
            return set_at(doc, path, self.other_type(value))
        if op == "flip":
            return set_at(doc, path, not value)
        if op == "number":
            return set_at(doc, path, self.number(value))
        if op == "index":
            n = meta["buffers"]
            return set_at(doc, path,
                          r.choice([-1, -2, n, n + 1, 2**31, 2**63 - 1,
                                    r.randrange(max(n, 1))]))
        if op == "string":
            return set_at(doc, path, r.choice(INTERESTING_STRINGS))
        if op == "name":
            names = meta["names"] or ["x"]
            return set_at(doc, path, r.choice(names + [value + "_", ""]))
        if op == "list":
            lst = value
            sub = r.randrange(8)
            if sub == 0 and lst:
                lst.append(copy.deepcopy(r.choice(lst)))
            elif sub == 1:
                r.shuffle(lst)
            elif sub == 2 and lst:
                del lst[r.randrange(len(lst)):]
            elif sub == 3:
                lst.clear()
            elif sub == 4 and len(lst) >= 2:
                i, j = r.sample(range(len(lst)), 2)
                lst[i], lst[j] = lst[j], lst[i]
            elif sub == 5:
                lst.insert(r.randrange(len(lst) + 1),
                           r.choice([0, 1, 2**62, -3, 65536, 2**31 - 1]))
            elif sub == 6 and lst:
                lst.reverse()
            else:
                lst.append(r.choice([0, 1, 2**32, [], {}]))
            return doc
        if op == "addkey":
            value[r.choice(["bogus", "kind", "shift", "vocab", "of", "a", "c",
                            "low", "high", "std", "data", "init", "attrs",
                            "shape", "dtype", "recompute"])] = \
                self.other_type(None) if r.random() < 0.5 else \
                r.choice(INTERESTING_INTS)
            return doc
        if op == "dupkey" and value:
            # Copy one key's value from a sibling object of the same list.
            if isinstance(parent, list) and len(parent) > 1:
                other = r.choice(parent)
                if isinstance(other, dict) and other:
                    k = r.choice(list(other))
                    value[k] = copy.deepcopy(other[k])
            return doc
        return doc

    # Plan-aware mutations: keep the plan mostly consistent (bytes match
    # the shape, offsets aligned and inside the arena) so the mutant gets
    # past the first checks and reaches the step rules and the kernels.

    DTYPE_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8}

    def place_at_end(self, plan, b):
        align = plan.get("alignment", 64)
        if not isinstance(align, int) or align <= 0:
            align = 64
        arena = plan.get("arena_bytes", 0)
        if not isinstance(arena, int):
            arena = 0
        off = (arena + align - 1) // align * align
        b["offset"] = off
        plan["arena_bytes"] = off + max(int(b.get("bytes", 0)), 1)

    def fix_bytes(self, b):
        n = 1
        for d in b.get("shape", []):
            n *= d if isinstance(d, int) else 1
        b["bytes"] = n * self.DTYPE_SIZE.get(b.get("dtype"), 4)

    def mutate_plan(self, plan):
        r = self.rng
        bufs = plan.get("buffers")
        steps = plan.get("steps")
        if not isinstance(bufs, list) or not bufs or \
                not isinstance(steps, list) or not steps:
            return plan
        b = r.choice(bufs)
        if not isinstance(b, dict):
            return plan
        choice = r.randrange(10)
        if choice == 0:      # alias another buffer's bytes
            o = r.choice(bufs)
            if isinstance(o, dict):
                b["offset"] = o.get("offset", 0)
                if r.random() < 0.5:
                    for k in ("shape", "bytes", "dtype"):
                        if k in o:
                            b[k] = copy.deepcopy(o[k])
        elif choice == 1:    # new shape, consistent bytes, fresh bytes
            shape = list(b.get("shape", []))
            sub = r.randrange(5)
            if sub == 0 and shape:
                i = r.randrange(len(shape))
                shape[i] = r.choice([1, 2, 3, 7, 64, 4096, 1 << 20])
            elif sub == 1:
                shape.insert(r.randrange(len(shape) + 1), r.choice([1, 2]))
            elif sub == 2 and shape:
                shape.pop(r.randrange(len(shape)))
            elif sub == 3:
                shape = []
            else:
                shape = [r.choice([1, 2, 4, 16]) for _ in range(r.randint(1, 5))]
            b["shape"] = shape
            self.fix_bytes(b)
            self.place_at_end(plan, b)
        elif choice == 2:    # dtype change, consistent bytes
            b["dtype"] = r.choice(list(self.DTYPE_SIZE))
            self.fix_bytes(b)
            self.place_at_end(plan, b)
        elif choice == 3:    # op swap within the same step shape
            s = r.choice(steps)
            if isinstance(s, dict):
                s["op"] = r.choice(INTERESTING_STRINGS[15:25] + [
                    "add", "sub", "mul", "div", "relu", "gelu", "tanh", "exp",
                    "softmax", "layer_norm", "reduce_sum", "reduce_mean",
                    "broadcast_to", "sum_to", "mse", "dropout",
                    "relu_grad", "softmax_grad", "layer_norm_grad",
                    "embedding_grad", "cross_entropy_grad", "mse_grad",
                    "attention_grad"])
        elif choice == 4:    # operand swap to a buffer of the same shape
            s = r.choice(steps)
            if isinstance(s, dict):
                key = r.choice(["inputs", "outputs"])
                lst = s.get(key)
                if isinstance(lst, list) and lst:
                    i = r.randrange(len(lst))
                    old = lst[i]
                    shape = bufs[old].get("shape") if isinstance(old, int) \
                        and 0 <= old < len(bufs) and \
                        isinstance(bufs[old], dict) else None
                    same = [j for j, o in enumerate(bufs)
                            if isinstance(o, dict) and o.get("shape") == shape]
                    lst[i] = r.choice(same or [r.randrange(len(bufs))])
        elif choice == 5:    # input data generators
            b["role"] = "input"
            b.pop("init", None)
            kind = r.choice(["randn", "randint", "sequence", "labels_of"])
            data = {"kind": kind}
            if kind == "randint":
                data["low"] = r.choice(INTERESTING_INTS + [0, -5])
                data["high"] = r.choice(INTERESTING_INTS + [1, 10])
            elif kind == "sequence":
                data["vocab"] = r.choice(INTERESTING_INTS)
                data["a"] = r.choice(INTERESTING_INTS)
                data["c"] = r.choice(INTERESTING_INTS)
            elif kind == "labels_of":
                data["of"] = r.randrange(-1, len(bufs) + 1)
                data["shift"] = r.choice(INTERESTING_INTS)
            else:
                data["std"] = r.choice(INTERESTING_FLOATS)
            b["data"] = data
            if kind != "randn":
                b["dtype"] = r.choice(["i32", "i64"])
            self.fix_bytes(b)
            self.place_at_end(plan, b)
        elif choice == 6:    # attributes
            s = r.choice(steps)
            if isinstance(s, dict):
                attrs = s.setdefault("attrs", {})
                if isinstance(attrs, dict):
                    key = r.choice(["permutation", "axes", "keep_dims",
                                    "transpose_a", "transpose_b", "rate",
                                    "seed", "causal", "scale", "value",
                                    "epsilon", "lr", "beta1", "beta2", "eps"])
                    attrs[key] = r.choice([
                        [1, 0], [0], [], [0, 1, 2], [2, 0, 1], [-1], [1, 1],
                        True, False, 0.0, 0.99999, 1.0, -1.0, 1e38, 2**63,
                        -2**63])
        elif choice == 7:    # reorder steps
            if len(steps) > 1:
                i, j = r.sample(range(len(steps)), 2)
                steps[i], steps[j] = steps[j], steps[i]
        elif choice == 8:    # huge but consistent sizes
            plan["arena_bytes"] = r.choice([2**40, 2**50, 2**63, 2**64 - 1])
            if r.random() < 0.5:
                b["shape"] = [r.choice([2**20, 2**31, 2**33])] + \
                    list(b.get("shape", []))[1:]
                self.fix_bytes(b)
        else:                # loss / alignment / batch
            key = r.choice(["loss", "alignment", "batch", "tokens_per_sample",
                            "seed"])
            plan[key] = r.choice(INTERESTING_INTS + [r.randrange(len(bufs))])
        return plan

    def mutate(self, text):
        """A mutated version of `text` (str) as bytes."""
        r = self.rng
        if r.random() < 0.12:
            return self.mutate_bytes(text.encode())
        try:
            doc = json.loads(text)
        except ValueError:
            return self.mutate_bytes(text.encode())
        meta = {"buffers": count_buffers(doc), "names": count_names(doc)}
        for _ in range(r.choice([1, 1, 1, 2, 2, 3, 5])):
            if isinstance(doc, dict) and "buffers" in doc and r.random() < 0.5:
                try:
                    doc = self.mutate_plan(doc)
                    continue
                except (TypeError, ValueError, KeyError, AttributeError,
                        IndexError):
                    pass  # an earlier mutation broke the plan's structure
            paths = list(all_paths(doc))
            # Prefer leaves and small containers: more targeted changes.
            path, value = r.choice(paths)
            doc = self.mutate_node(doc, path, value, meta)
        out = json.dumps(doc, indent=None if r.random() < 0.5 else 1)
        data = out.encode()
        if r.random() < 0.03:
            data = self.mutate_bytes(data)
        return data

    def mutate_bytes(self, data):
        r = self.rng
        data = bytearray(data)
        choice = r.randrange(5)
        if choice == 0 and data:
            del data[r.randrange(len(data)):]          # truncate
        elif choice == 1:
            # non-UTF-8 bytes inside a string literal where possible
            quotes = [i for i, c in enumerate(data) if c == 0x22]
            pos = r.choice(quotes) + 1 if quotes else r.randrange(len(data) + 1)
            data[pos:pos] = r.choice([b"\xff", b"\xc3", b"\xed\xa0\x80",
                                      b"\xf8\x88\x80\x80\x80", b"\x00",
                                      b"\\ud800", b"\\u0000"])
        elif choice == 2 and data:
            for _ in range(r.randint(1, 4)):
                data[r.randrange(len(data))] = r.randrange(256)
        elif choice == 3:
            data = data + r.choice([b"}", b"\xff", b"garbage", b"\n{}",
                                    b"\x00"])
        else:
            data = bytearray(r.choice([b"", b"{}", b"[]", b"null", b"{",
                                       b"\xef\xbb\xbf{}", b"1e999",
                                       b"[" * 100000]))
        return bytes(data)
