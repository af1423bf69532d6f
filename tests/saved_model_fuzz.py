"""Structure-aware fuzzing of saved-model files (used by
tests/test_saved_model.py, which runs it in a subprocess so that a crash
fails a test instead of killing pytest).

Valid files written by small real models are decoded into their fields
(tfmini/saved_model/file_format.py), mutated as an attacker who knows
the format would (counts, dims, dtype codes, op names swapped for other
ops, extreme attribute ints, node references, sub-graph maps, payloads,
the JSON meta), re-encoded with a fresh CRC, then loaded and every
function called. Each case must load and run or
raise a tfmini error; a crash or hang while loading fails.

    python3 tests/saved_model_fuzz.py SEED COUNT MARKS

runs cases SEED*1_000_000 + [0, COUNT), writing "L i" (loading), "C i"
(calling) and "D i" (done) to the file MARKS as it goes, so a driver
that sees the worker die knows which case and phase did it.
`python3 tests/saved_model_fuzz.py --show SEED I` prints what case I
mutated."""
import copy
import glob
import json
import os
import random
import re
import resource
import struct
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tfmini.saved_model.file_format import (  # noqa: E402
    NO_SHARE, decode, encode, pay_fits)

# ---- models whose files are mutated -----------------------------------------

def build_models(tf, root):
    """Save a few small models under root; their directories."""
    dirs = []

    class Dense(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(tf.reshape(tf.range(12.0), [3, 4]) / 10.0,
                                 name="w")
            self.b = tf.Variable([0.5, -0.5, 1.0, 2.0], name="b")
            self.steps = tf.Variable(0, name="steps", trainable=False)

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, x):
            y = tf.matmul(x, self.w) + self.b
            self.steps.assign_add(1)
            return {"sum": tf.reduce_sum(y, axis=1),
                    "t": tf.transpose(y), "max": tf.reduce_max(y)}

        @tf.function(input_signature=[tf.TensorSpec([2, 3], tf.float32),
                                      tf.TensorSpec([2], tf.int32)])
        def pick(self, x, idx):
            g = tf.gather(x, idx)
            tf.print("picked", g, tf.shape(g))
            return tf.reduce_mean(g, axis=0), tf.argmax(g, axis=1)

    m = Dense()
    d = os.path.join(root, "dense")
    tf.saved_model.save(m, d)
    dirs.append(d)

    class Loop(tf.Module):
        def __init__(self):
            super().__init__()
            self.acc = tf.Variable(tf.zeros([3]), name="acc")

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32),
                                      tf.TensorSpec([3], tf.float32)])
        def run(self, n, v):
            def body(i, s):
                return i + 1, s * 1.5 + tf.cast(i, tf.float32)
            i, s = tf.while_loop(lambda i, s: i < n, body,
                                 [tf.constant(0), v],
                                 maximum_iterations=5)
            out = tf.cond(tf.reduce_sum(s) > 10.0,
                          lambda: tf.reverse(s, [0]) - 1.0,
                          lambda: tf.concat([s[:1], s[1:] * 2.0], 0))
            self.acc.assign(out)
            tf.debugging.Assert(i >= 0, [i, out])
            return out, i

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def norm(self, x):
            s = tf.reshape(x, [-1, 1]) * tf.ones([1, 2])
            return tf.nn.softmax(tf.transpose(s)), tf.sort(x)

    m = Loop()
    d = os.path.join(root, "loop")
    tf.saved_model.save(m, d, signatures={"serve": m.norm})
    dirs.append(d)
    return dirs


def op_table():
    """{TF name: input count (-1: any)} from the op table's .def files."""
    ops = {}
    for f in sorted(glob.glob(os.path.join(ROOT, "csrc/ops/*.def"))):
        for name, nin in re.findall(r'^X\(\w+,\s*"(\w+)",\s*(-?\d+)',
                                    open(f).read(), re.M):
            ops[name.encode()] = int(nin)
    return ops


def op_names():
    return list(op_table())


# Ops with payloads (made by their own graph functions), and those only
# the optimizer makes: a synthesized node is none of these.
SPECIAL = {b"Placeholder", b"Const", b"ReadVariableOp", b"AssignVariableOp",
           b"AssignAddVariableOp", b"AssignSubVariableOp", b"PrintV2",
           b"If", b"While", b"Assert", b"_FusedElementwise",
           b"_FusedMatMul"}
SIZES = [1, 1, 1, 2, 4, 8, 2, 4, 8]


def synth(rng, table):
    """A model of one function: placeholders and constants feeding one
    node of a random op with random attributes (its outputs are left for
    repair() to fill in from the reader's complaints), the op's outputs
    the function's. No meta: loading makes a signature of it."""
    def attrs(ints=(), dtype=7):
        return {"ints": list(ints), "i": [0] * 6, "f": [0.0] * 4,
                "dtype": dtype}

    nodes = []
    for k in range(rng.randint(1, 3)):
        dt = rng.choice([7, 7, 4, 5, 0, 8, 2])
        dims = [rng.choice([-1, 1, 2, 3]) for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.4:
            dims = [d if d >= 0 else 2 for d in dims]
            numel = 1
            for d in dims:
                numel *= d
            data = bytes(rng.choice([0, 1, 2, 255, 128])
                         for _ in range(numel * SIZES[dt]))
            nodes.append({"op": b"Const", "name": b"c%d" % k, "site": b"",
                          "in": [], "ctrl": [], "attrs": attrs(dims, dt),
                          "out": [[dt, dims]], "kind": 1,
                          "pay": [[dt, dims], data]})
        else:
            nodes.append({"op": b"Placeholder", "name": b"x%d" % k,
                          "site": b"", "in": [], "ctrl": [],
                          "attrs": attrs(dims, dt), "out": [[dt, dims]],
                          "kind": 0})
    op = rng.choice([o for o in table if o not in SPECIAL])
    nin = table[op] if table[op] >= 0 else rng.randint(0, 4)
    a = attrs([pick_int(rng) if rng.random() < 0.2 else rng.randint(-2, 3)
               for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 4, 6]))],
              rng.randint(0, 8))
    for j in range(6):
        if rng.random() < 0.3:
            a["i"][j] = pick_int(rng) if rng.random() < 0.3 else \
                rng.randint(-2, 3)
    for j in range(4):
        if rng.random() < 0.2:
            a["f"][j] = rng.choice(FLOATS)
    nodes.append({"op": op, "name": b"op", "site": b"",
                  "in": [[rng.randrange(len(nodes)), 0] for _ in range(nin)],
                  "ctrl": [], "attrs": a, "out": [], "kind": 0})
    g = {"name": b"f", "nodes": nodes, "outs": []}
    return {"version": 1, "sections": [[b"VARS", []],
                                       [b"FUNC", [b"f", NO_SHARE, g]]]}


# ---- mutations ---------------------------------------------------------------

EXTREME = [0, 1, -1, 2, -2, 3, 7, 255, 256, 2**31 - 1, 2**31, -2**31,
           2**32, 2**40, 2**40 + 1, 2**62, 2**63 - 1, -2**63, -2**40]
FLOATS = [0.0, -0.0, 1.0, -1.0, 1e300, float("inf"), float("-inf"),
          float("nan"), 0.5]


def graphs_of(model):
    """Every graph (functions and their sub-graphs), depth first."""
    out = []

    def walk(g):
        out.append(g)
        for n in g["nodes"]:
            if n["kind"] == 4 and pay_fits(4, n.get("pay")):
                for _, sub in n["pay"]:
                    walk(sub)
    for tag, sec in model["sections"]:
        if tag == b"FUNC" and sec[2] is not None:
            walk(sec[2])
    return out


def pick_int(rng):
    r = rng.random()
    if r < 0.5:
        return rng.choice(EXTREME)
    if r < 0.8:
        return rng.randint(-3, 9)
    return rng.randint(-2**63, 2**63 - 1)


def mutate_node(rng, n, g, ops, model):
    what = rng.choice(["op", "attr_int", "attr_ints", "attr_i", "attr_f",
                       "attr_dtype", "out_dim", "out_dtype", "out_rank",
                       "out_count", "in_ref", "in_count", "ctrl",
                       "payload", "kind", "name", "attr_i", "attr_ints"])
    a = n["attrs"]
    if what == "op":
        n["op"] = rng.choice(ops)
    elif what == "attr_int" and a["ints"]:
        a["ints"][rng.randrange(len(a["ints"]))] = pick_int(rng)
    elif what == "attr_ints":
        k = rng.randint(0, 9)
        a["ints"] = [rng.choice([pick_int(rng), rng.randint(-2, 4)])
                     for _ in range(k)]
    elif what == "attr_i":
        a["i"][rng.randrange(6)] = pick_int(rng)
    elif what == "attr_f":
        a["f"][rng.randrange(4)] = rng.choice(FLOATS)
    elif what == "attr_dtype":
        a["dtype"] = rng.randint(0, 10)
    elif what == "out_dim" and n["out"]:
        m = rng.choice(n["out"])
        if m[1]:
            m[1][rng.randrange(len(m[1]))] = rng.choice(
                [-1, 0, 1, 2, 3, 5, 2**40, 2**33])
    elif what == "out_dtype" and n["out"]:
        rng.choice(n["out"])[0] = rng.randint(0, 9)
    elif what == "out_rank" and n["out"]:
        m = rng.choice(n["out"])
        m[1] = [rng.choice([-1, 1, 2, 3]) for _ in range(rng.randint(0, 4))]
    elif what == "out_count":
        if n["out"] and rng.random() < 0.5:
            n["out"].pop()
        else:
            n["out"].append([rng.randint(0, 8), [rng.choice([-1, 2])]])
    elif what == "in_ref" and n["in"]:
        r = rng.choice(n["in"])
        r[rng.randrange(2)] = rng.choice([0, 1, 2, r[0] + 1, r[0] - 1,
                                          len(g["nodes"]), 2**32 - 1])
    elif what == "in_count":
        if n["in"] and rng.random() < 0.5:
            n["in"].pop(rng.randrange(len(n["in"])))
        elif n["in"]:
            n["in"].append(list(rng.choice(n["in"])))
        else:
            n["in"].append([0, 0])
    elif what == "ctrl":
        n["ctrl"].append(rng.choice([0, len(g["nodes"]), 2**31]))
    elif what == "kind":
        n["kind"] = rng.randint(0, 5)
        if n["kind"] == 1:
            n["pay"] = [[7, [2]], b"\0" * 8]
        elif n["kind"] == 2:
            n["pay"] = rng.choice([0, 1, 5, 2**32 - 1])
        elif n["kind"] == 3:
            n["pay"] = [b"x"] * rng.randint(0, 3)
        elif n["kind"] == 4:
            n["pay"] = copy.deepcopy(rng.choice(
                [x for gg in graphs_of(model) for x in gg["nodes"]
                 if x["kind"] == 4 and pay_fits(4, x.get("pay"))] or [{"pay": [[[], {"name": b"g",
                                                       "nodes": [],
                                                       "outs": []}]] * 2}])
                ["pay"])
    elif what == "name":
        n["name"] = rng.choice([b"", b"x", g["nodes"][0]["name"],
                                b"\xff\xfe", b"a" * 400])
    elif what == "payload":
        mutate_payload(rng, n)
    return what


def mutate_payload(rng, n):
    kind, pay = n["kind"], n.get("pay")
    if not pay_fits(kind, pay):
        return
    if kind == 1:
        meta, data = pay
        r = rng.random()
        if r < 0.3:
            meta[0] = rng.randint(0, 8)
        elif r < 0.6 and meta[1]:
            meta[1][rng.randrange(len(meta[1]))] = rng.choice([0, 1, 3, 7])
        elif r < 0.8:
            meta[1] = [rng.choice([0, 1, 2]) for _ in range(rng.randint(0, 3))]
        else:
            pay[1] = bytes(rng.randrange(256) for _ in range(len(data)))
            return
        # Keep the byte count right (so the shape rule and kernels see
        # it) most of the time.
        if rng.random() < 0.9:
            numel = 1
            for d in meta[1]:
                numel *= d
            size = [1, 1, 1, 2, 4, 8, 2, 4, 8][meta[0]]
            pay[1] = bytes(rng.randrange(256) for _ in range(numel * size))
    elif kind == 2:
        n["pay"] = rng.choice([0, 1, 2, 3, 2**32 - 1])
    elif kind == 3:
        r = rng.random()
        if r < 0.4 and pay:
            pay.pop()
        elif r < 0.7:
            pay.append(b"{}%s%n\xff")
        elif pay:
            pay[rng.randrange(len(pay))] = rng.choice(
                [b"%s%s%s", b"\xc3", b"a" * 5000, b""])
    elif kind == 4:
        b = rng.randrange(2)
        m, sub = pay[b]
        r = rng.random()
        if r < 0.3 and m:
            m[rng.randrange(len(m))] = rng.choice([0, 1, 2, 3, 2**32 - 1])
        elif r < 0.45:
            m.append(rng.randint(0, 3))
        elif r < 0.6 and m:
            m.pop()
        elif r < 0.75:
            pay[0], pay[1] = pay[1], pay[0]
        elif r < 0.85:
            sub["outs"].reverse() if len(sub["outs"]) > 1 else \
                sub["outs"].append([0, 0])
        elif sub["nodes"]:
            # Change a placeholder or output meta of the sub-graph.
            x = rng.choice(sub["nodes"])
            if x["out"]:
                mm = rng.choice(x["out"])
                if mm[1]:
                    mm[1][rng.randrange(len(mm[1]))] = rng.choice(
                        [-1, 1, 4, 9])
                else:
                    mm[0] = rng.randint(0, 8)
            if x["op"] == b"Placeholder" and x["attrs"]["ints"]:
                x["attrs"]["ints"] = [d if d < 0 else rng.choice([1, 4, 9])
                                      for d in x["attrs"]["ints"]]


def mutate_meta(rng, raw):
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        return raw, "meta(raw)"
    slots = []

    def walk(x, parent, key, depth):
        slots.append((parent, key, x))
        if depth > 40:
            return
        if isinstance(x, dict):
            for k, v in list(x.items()):
                walk(v, x, k, depth + 1)
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, x, i, depth + 1)
    walk(meta, None, None, 0)
    parent, key, x = rng.choice(slots)
    choices = [None, True, 0, -1, 1, 4, 2**63, -2**70, 1.5, "", "x",
               "__class__", "float32", [], {}, [None], {"v": 1},
               {"leaf": 1}, {"spec": ["float32", [2**62], None]},
               {"obj": {}}, {"fn": "nope"}, {"var": 10**6},
               {"list": [None] * 3}, [[]] * 3, ["x", 9]]
    new = rng.choice(choices)
    if parent is None:
        meta = new
    elif isinstance(parent, dict) and rng.random() < 0.2:
        del parent[key]
    else:
        parent[key] = copy.deepcopy(new)
    if rng.random() < 0.02:
        return b"[" * 100000, "meta(deep)"
    return json.dumps(meta).encode(), "meta"


def mutate(rng, model, ops):
    """Mutate model in place (1-3 edits); a description."""
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        r = rng.random()
        graphs = graphs_of(model)
        secs = model["sections"]
        if r < 0.55 and graphs:
            g = rng.choice(graphs)
            if not g["nodes"]:
                continue
            i = rng.randrange(len(g["nodes"]))
            what = mutate_node(rng, g["nodes"][i], g, ops, model)
            done.append(f"{g['name']!r}[{i}] {g['nodes'][i]['op']!r}:{what}")
        elif r < 0.62 and graphs:
            g = rng.choice(graphs)
            if g["outs"] and rng.random() < 0.6:
                o = rng.choice(g["outs"])
                o[rng.randrange(2)] = rng.choice([0, 1, len(g["nodes"]) - 1,
                                                  len(g["nodes"])])
            elif g["outs"]:
                g["outs"].pop()
            else:
                g["outs"].append([0, 0])
            done.append(f"{g['name']!r}:outs")
        elif r < 0.67 and graphs:
            g = rng.choice(graphs)
            if len(g["nodes"]) > 1:
                i, j = rng.randrange(len(g["nodes"])), \
                    rng.randrange(len(g["nodes"]))
                if rng.random() < 0.5:
                    g["nodes"][i], g["nodes"][j] = g["nodes"][j], g["nodes"][i]
                    done.append(f"{g['name']!r}:swap {i} {j}")
                else:
                    g["nodes"].insert(j, copy.deepcopy(g["nodes"][i]))
                    done.append(f"{g['name']!r}:dup {i} at {j}")
        elif r < 0.77:
            vs = [s for t, s in secs if t == b"VARS"]
            if vs and vs[0]:
                v = rng.choice(vs[0])
                k = rng.randrange(5)
                if k == 0:
                    v["shape"] = [rng.choice([-1, 0, 1, 3, 4])
                                  for _ in range(rng.randint(0, 3))]
                elif k == 1:
                    v["any_rank"] = rng.randint(0, 2)
                elif k == 2:
                    v["value"][0][0] = rng.randint(0, 8)
                    numel = 1
                    for d in v["value"][0][1]:
                        numel *= d
                    v["value"][1] = b"\1" * (numel * [1, 1, 1, 2, 4, 8, 2, 4,
                                                      8][v["value"][0][0]])
                elif k == 3:
                    v["value"][0][1] = [2] * rng.randint(0, 3)
                    v["value"][1] = b"\0" * (4 * 2 ** len(v["value"][0][1]))
                else:
                    vs[0].remove(v)
                done.append(f"var {v['name']!r}:{k}")
        elif r < 0.85:
            metas = [i for i, (t, _) in enumerate(secs) if t == b"META"]
            if metas:
                i = metas[0]
                if rng.random() < 0.05:
                    secs.pop(i)
                    done.append("meta dropped")
                else:
                    secs[i][1], what = mutate_meta(rng, secs[i][1])
                    done.append(what)
        elif r < 0.92:
            fs = [s for t, s in secs if t == b"FUNC"]
            if fs:
                f = rng.choice(fs)
                k = rng.randrange(4)
                if k == 0:
                    f[0] = rng.choice([fs[0][0], b"", b"\xff"])
                elif k == 1 and f[2] is not None:
                    f[1] = rng.choice([0, 1, 5])
                    if f[1] != NO_SHARE:
                        f[2] = None
                elif k == 2:
                    secs.append([b"FUNC", copy.deepcopy(f)])
                else:
                    i = secs.index([b"FUNC", f])
                    j = rng.randrange(len(secs))
                    secs[i], secs[j] = secs[j], secs[i]
                done.append(f"func {f[0]!r}:{k}")
        else:
            # Unstructured: one byte of the encoded body, then decode
            # again where that still parses.
            b = bytearray(encode(model, wrap=True))
            at = rng.randrange(12, len(b) - 4)
            b[at] = rng.randrange(256)
            try:
                model.clear()
                model.update(decode(bytes(b[:-4]) + b"\0\0\0\0",
                                    check=False))
            except Exception:
                model["raw"] = bytes(b[:-4])
            done.append(f"byte {at}")
            if "raw" in model:
                break
    return "; ".join(done) or "none"


def model_bytes(model):
    if "raw" in model:
        b = model["raw"]
        return b + struct.pack("<I", zlib.crc32(b))
    return encode(model, wrap=True)


# ---- calling what was loaded ------------------------------------------------

def example(tf, spec, rng):
    dims = [rng.choice([0, 1, 2, 3]) if d is None else d
            for d in (spec.shape.as_list()
                                            if spec.shape.rank is not None
                                            else [2])]
    if any(d > 64 for d in dims):
        return None
    import numpy as np
    dt = spec.dtype
    if dt.is_floating:
        v = np.asarray(rng.choice([0.5, -3.0, 7.25]) *
                       np.arange(int(np.prod(dims))).reshape(dims))
    elif dt.is_bool:
        v = np.arange(int(np.prod(dims))).reshape(dims) % 2 == 0
    else:
        v = np.arange(int(np.prod(dims))).reshape(dims) % 3
    return tf.constant(v, dtype=dt)


def call_all(tf, loaded, rng):
    from tfmini.function import TensorSpec
    fns = []
    for k, v in sorted(vars(loaded).items()):
        if hasattr(v, "concrete_functions"):
            fns.append(v)
    for v in fns:
        for c in v.concrete_functions:
            args, kwargs = c.structured_input_signature
            leaves = [s for s in list(args) + list(kwargs.values())
                      if isinstance(s, TensorSpec)]
            flat = [example(tf, s, rng) for s in leaves]
            if any(x is None for x in flat):
                continue
            try:
                c._run(flat)
            except tf.errors.InvalidArgumentError:
                pass
    for name, sig in sorted(getattr(loaded, "signatures", {}).items()):
        a, kw = sig.structured_input_signature
        given = {k: example(tf, s, rng) for k, s in kw.items()}
        if any(x is None for x in given.values()):
            continue
        sig(**given)


ALLOWED = None


DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16",
          "float32", "float64"]
GIVES = re.compile(r"node '([^']*)' \((\w+)\) of graph '([^']*)': output "
                   r"(\d+) is \w+\[[^\]]*\] but its shape rule gives "
                   r"(\w+)\[([^\]]*)\]")

COUNT = re.compile(r"node '([^']*)' \(\w+\) of graph '[^']*': it has "
                   r"(\d+) outputs but its shape rule gives (\d+)")


def repair(model, message):
    """Make the outputs the reader rejected what their shape rule gives,
    so that a mutated op or attribute gets past loading to the passes and
    kernels. Whether anything was repaired."""
    m = COUNT.search(message)
    if m:
        name, want = m.group(1).encode(), int(m.group(3))
        for g in graphs_of(model):
            for k, n in enumerate(g["nodes"]):
                if n["name"] == name and len(n["out"]) == int(m.group(2)):
                    n["out"] = [[7, []] for _ in range(want)]
                    if name == b"op":      # a synthesized model
                        g["outs"] = [[k, j] for j in range(want)]
                    return True
        return False
    m = GIVES.search(message)
    if not m or m.group(5) not in DTYPES:
        return False
    name, op, k = m.group(1).encode(), m.group(2).encode(), int(m.group(4))
    dims = [-1 if d == "?" else int(d) for d in m.group(6).split(",") if d]
    for g in graphs_of(model):
        for n in g["nodes"]:
            if n["name"] == name and n["op"] == op and k < len(n["out"]):
                n["out"][k] = [DTYPES.index(m.group(5)), dims]
                return True
    return False


def run_case(tf, base, ops, seed, i, where, marks=None):
    rng = random.Random(seed * 1_000_000 + i)
    if rng.random() < float(os.environ.get("TFMINI_SMFUZZ_SYNTH", 0.4)):
        model = synth(rng, TABLE)
        n = model["sections"][1][1][2]["nodes"][-1]
        desc = f"synth {n['op']!r} ints={n['attrs']['ints']} " \
               f"i={n['attrs']['i']} dtype={n['attrs']['dtype']} " \
               f"f={n['attrs']['f']}"
    else:
        model = copy.deepcopy(rng.choice(base))
        desc = mutate(rng, model, ops)
    d = os.path.join(where, f"case{i % 4}")
    os.makedirs(d, exist_ok=True)
    for attempt in range(12):
        with open(os.path.join(d, "saved_model.tfm"), "wb") as f:
            f.write(model_bytes(model))
        if marks is not None:
            os.write(marks, f"L {i} {desc} (try {attempt})\n".encode())
        try:
            loaded = tf.saved_model.load(d)
            break
        except (tf.errors.OpError, ValueError, TypeError) as e:
            if isinstance(e, tf.errors.InternalError):
                raise
            if "raw" in model or not repair(model, str(e)):
                return desc, "load: " + type(e).__name__
    else:
        return desc, "load: unrepaired"
    if marks is not None:
        os.write(marks, f"C {i}\n".encode())
    try:
        call_all(tf, loaded, rng)
    except (tf.errors.OpError, ValueError, TypeError) as e:
        if isinstance(e, tf.errors.InternalError):
            raise
        return desc, "call: " + type(e).__name__
    return desc, "ok"


def drive(seed, count, case_timeout=30, env=None):
    """Run cases [0, count) of seed in worker processes, restarting after
    a crash or a case that runs past case_timeout seconds. Returns
    (problems, outcome counts): a problem is a crash, a hang while
    loading, or an exception other than a tfmini error / ValueError /
    TypeError (or an InternalError)."""
    from fuzz_worker import count_outcomes, run_worker
    problems, outcomes, start = [], {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        marks = os.path.join(tmp, "marks")
        while start < count:
            rc, err, lines = run_worker(
                [os.path.abspath(__file__), str(seed), str(count), marks,
                 str(start)], tmp, case_timeout, env, ROOT)
            problems += [line for line in lines if line.startswith("F ")]
            count_outcomes(lines, outcomes)
            if rc == 0:
                break
            steps = [x for x in lines if x[:1] in "LCD"]
            if not steps:
                problems.append(f"worker failed to start (rc {rc}): "
                                f"{err[-2000:]}")
                break
            i = int(steps[-1].split()[1])
            loading = [x for x in lines if x.startswith(f"L {i} ")]
            what = loading[-1] if loading else f"case {i}"
            if rc == "timeout" and steps[-1][0] == "C":
                # A hostile graph may loop forever, as a program may.
                outcomes["call: hang"] = outcomes.get("call: hang", 0) + 1
            elif steps[-1][0] != "D":
                problems.append(f"{'hang' if rc == 'timeout' else 'crash'}"
                                f" (rc {rc}) in phase {steps[-1][0]} of "
                                f"seed {seed} {what}\n{err[-3000:]}")
            else:
                problems.append(f"worker died (rc {rc}) after case {i}\n"
                                f"{err[-3000:]}")
            start = i + 1
    return problems, outcomes


def main(argv):
    # Hostile sizes must fail as errors, not by exhausting the machine.
    # (Not under ASan, which maps terabytes of shadow memory.)
    if "asan" not in os.environ.get("LD_PRELOAD", ""):
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
    sys.path.insert(0, ROOT)
    import tfmini as tf
    ops = op_names()
    global TABLE
    TABLE = op_table()
    with tempfile.TemporaryDirectory() as where:
        dirs = build_models(tf, where)
        base = [decode(open(os.path.join(d, "saved_model.tfm"), "rb")
                       .read()) for d in dirs]
        for m, d in zip(base, dirs):   # the decoder round-trips
            assert encode(m) == open(os.path.join(d, "saved_model.tfm"),
                                     "rb").read()
        if argv[0] == "--show":
            seed, i = int(argv[1]), int(argv[2])
            print(run_case(tf, base, ops, seed, i, where))
            return
        seed, count, marks_path = int(argv[0]), int(argv[1]), argv[2]
        start = int(argv[3]) if len(argv) > 3 else 0
        marks = os.open(marks_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        for i in range(start, count):
            try:
                desc, res = run_case(tf, base, ops, seed, i, where, marks)
            except Exception as e:
                res = "BUG"
                msg = str(e).replace("\n", " ")[:300]
                os.write(marks, f"F {i} {type(e).__name__}: {msg}\n"
                         .encode())
            os.write(marks, f"D {i} {res}\n".encode())


if __name__ == "__main__":
    main(sys.argv[1:])
