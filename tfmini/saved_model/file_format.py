"""The saved-model file (Note [Saved model file] in
csrc/graph/saved_model.h) as Python dicts and lists: decode() a file's
bytes into its fields, encode() them back with a fresh CRC. The int8
converter (tfmini/lite/) rewrites graphs and variables through it; tests
edit files field by field through it as an attacker would
(tests/saved_model_fuzz.py). The C reader still checks everything when
a result is loaded, so this codec checks only what it needs to parse.

Every string field (op, node, graph and function names, sites, texts) is
bytes, as stored: an op name an attacker wrote need not be UTF-8, and a
decode/encode round trip is exact. A model is {"version", "sections"},
each section [tag, body]: VARS a list of variable dicts, FUNC
[name, share, graph or None], any other tag (META's JSON included) its
raw bytes."""
import struct
import zlib

import numpy as np

MAGIC = b"\x89TFMS\r\n\x1a"
NO_SHARE = 0xFFFFFFFF
# tfm_dtype codes (csrc/core/dtype.h, append-only) <-> NumPy.
NP_DTYPES = {0: np.bool_, 1: np.int8, 2: np.uint8, 3: np.int16,
             4: np.int32, 5: np.int64, 6: np.float16, 7: np.float32,
             8: np.float64, 11: np.uint16, 12: np.uint32, 13: np.uint64}
CODES = {np.dtype(v): k for k, v in NP_DTYPES.items()}
K_NONE, K_CONST, K_VAR, K_TEXTS, K_GRAPHS = 0, 1, 2, 3, 4


class FormatError(ValueError):
    pass


class _Reader:
    def __init__(self, b, check):
        self.b, self.p, self.check = b, 0, check

    def take(self, n):
        v = self.b[self.p:self.p + n]
        if len(v) != n:
            raise FormatError("saved model file is truncated")
        self.p += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def i64(self):
        return struct.unpack("<q", self.take(8))[0]

    def f64(self):
        return struct.unpack("<d", self.take(8))[0]

    def str(self):
        return self.take(self.u32())

    def shape(self):
        return [self.i64() for _ in range(self.u8())]

    def meta(self):
        return [self.u8(), self.shape()]

    def tensor(self):
        m = self.meta()
        return [m, self.take(self.i64())]

    def attrs(self):
        ints = [self.i64() for _ in range(self.u32())]
        return {"ints": ints, "i": [self.i64() for _ in range(6)],
                "f": [self.f64() for _ in range(4)], "dtype": self.u8()}

    def graph(self):
        name = self.str()
        nodes = [self.node() for _ in range(self.u32())]
        outs = [[self.u32(), self.u32()] for _ in range(self.u32())]
        return {"name": name, "nodes": nodes, "outs": outs}

    def node(self):
        n = {"op": self.str(), "name": self.str(), "site": self.str()}
        n["in"] = [[self.u32(), self.u32()] for _ in range(self.u32())]
        n["ctrl"] = [self.u32() for _ in range(self.u32())]
        n["attrs"] = self.attrs()
        n["out"] = [self.meta() for _ in range(self.u32())]
        kind = n["kind"] = self.u8()
        if kind == K_CONST:
            n["pay"] = self.tensor()
        elif kind == K_VAR:
            n["pay"] = self.u32()
        elif kind == K_TEXTS:
            n["pay"] = [self.str() for _ in range(self.u32())]
        elif kind == K_GRAPHS:
            n["pay"] = []
            for _ in range(2):
                m = [self.u32() for _ in range(self.u32())]
                n["pay"].append([m, self.graph()])
        elif kind != K_NONE and self.check:
            raise FormatError(f"unknown payload kind {kind}")
        return n


def decode(b, check=True):
    """bytes of a saved_model.tfm -> {"version", "sections": [[tag, x]]}.
    check=False skips the CRC and reads an unknown payload kind as no
    payload: for tests that re-read bytes they damaged on purpose."""
    b = bytes(b)
    if len(b) < 16 or b[:8] != MAGIC:
        raise FormatError("not a tfmini saved model (bad magic)")
    if check and struct.unpack("<I", b[-4:])[0] != zlib.crc32(b[:-4]):
        raise FormatError("saved model file is corrupt (CRC mismatch)")
    r = _Reader(b[:-4], check)
    r.p = 8
    model = {"version": r.u32(), "sections": []}
    while r.p < len(r.b):
        tag = r.take(4)
        n = r.i64()
        end = r.p + n
        if tag == b"VARS":
            vs = []
            for _ in range(r.u32()):
                vs.append({"name": r.str(), "trainable": r.u8(),
                           "any_rank": r.u8(), "shape": r.shape(),
                           "value": r.tensor()})
            sec = vs
        elif tag == b"FUNC":
            name, share = r.str(), r.u32()
            sec = [name, share, r.graph() if share == NO_SHARE else None]
        else:
            sec = r.take(n)
        if r.p != end:
            raise FormatError(f"section {tag!r} has the wrong length")
        model["sections"].append([tag, sec])
    return model


def pay_fits(kind, pay):
    """Whether pay has the form of payload kind (fuzz mutations change
    kinds without changing payloads)."""
    if kind == K_CONST:
        return isinstance(pay, list) and len(pay) == 2 and \
            isinstance(pay[1], bytes)
    if kind == K_VAR:
        return isinstance(pay, int)
    if kind == K_TEXTS:
        return isinstance(pay, list) and all(isinstance(x, bytes)
                                             for x in pay)
    if kind == K_GRAPHS:
        return isinstance(pay, list) and len(pay) == 2 and all(
            isinstance(x, list) and len(x) == 2 and isinstance(x[1], dict)
            for x in pay)
    return True


def _placeholder(kind):
    """The smallest payload of a kind, for wrap mode's misfit payloads."""
    return {K_CONST: [[7, []], b"\0" * 4], K_VAR: 0, K_TEXTS: [],
            K_GRAPHS: [[[], {"name": b"g", "nodes": [], "outs": []}]] * 2
            }[kind]


class _Writer:
    def __init__(self, wrap):
        self.parts, self.wrap = [], wrap

    def raw(self, b):
        self.parts.append(bytes(b))

    def _int(self, form, v):
        if self.wrap:
            # Fuzzing writes out-of-range counts and dims on purpose: the
            # file holds them modulo the field's width.
            v &= (1 << (8 * struct.calcsize(form))) - 1
            form = form.upper()
        try:
            self.raw(struct.pack(form, v))
        except struct.error:
            raise FormatError(f"{v!r} does not fit a {form!r} field of "
                              f"the saved model file") from None

    def u8(self, v):
        self._int("<B", v)

    def u32(self, v):
        self._int("<I", v)

    def i64(self, v):
        self._int("<q", v)

    def f64(self, v):
        self.raw(struct.pack("<d", v))

    def str(self, s):
        if not isinstance(s, (bytes, bytearray)):
            raise FormatError(f"string fields of the saved model file are "
                              f"bytes, got {type(s).__name__} {s!r}")
        self.u32(len(s))
        self.raw(s)

    def shape(self, s):
        self.u8(len(s))
        for d in s:
            self.i64(d)

    def meta(self, m):
        self.u8(m[0])
        self.shape(m[1])

    def tensor(self, t):
        self.meta(t[0])
        self.i64(len(t[1]))
        self.raw(t[1])

    def attrs(self, a):
        self.u32(len(a["ints"]))
        for v in a["ints"]:
            self.i64(v)
        for v in a["i"]:
            self.i64(v)
        for v in a["f"]:
            self.f64(v)
        self.u8(a["dtype"])

    def graph(self, g):
        self.str(g["name"])
        self.u32(len(g["nodes"]))
        for n in g["nodes"]:
            self.node(n)
        self.u32(len(g["outs"]))
        for a, b in g["outs"]:
            self.u32(a)
            self.u32(b)

    def node(self, n):
        self.str(n["op"])
        self.str(n["name"])
        self.str(n["site"])
        self.u32(len(n["in"]))
        for a, b in n["in"]:
            self.u32(a)
            self.u32(b)
        self.u32(len(n["ctrl"]))
        for c in n["ctrl"]:
            self.u32(c)
        self.attrs(n["attrs"])
        self.u32(len(n["out"]))
        for m in n["out"]:
            self.meta(m)
        kind, pay = n["kind"], n.get("pay")
        self.u8(kind)
        if kind in (K_CONST, K_VAR, K_TEXTS, K_GRAPHS) and \
                not pay_fits(kind, pay):
            if not self.wrap:
                raise FormatError(f"node {n['name']!r}: payload {pay!r:.60}"
                                  f" does not fit payload kind {kind}")
            pay = _placeholder(kind)
        elif kind not in (K_NONE, K_CONST, K_VAR, K_TEXTS, K_GRAPHS) and \
                not self.wrap:
            raise FormatError(f"node {n['name']!r}: unknown payload kind "
                              f"{kind}")
        if kind == K_CONST:
            self.tensor(pay)
        elif kind == K_VAR:
            self.u32(pay)
        elif kind == K_TEXTS:
            self.u32(len(pay))
            for s in pay:
                self.str(s)
        elif kind == K_GRAPHS:
            for m, g in pay:
                self.u32(len(m))
                for v in m:
                    self.u32(v)
                self.graph(g)

    def bytes(self):
        return b"".join(self.parts)


def encode(model, wrap=False):
    """The model dict -> file bytes with a fresh CRC. Out-of-range
    integers and payloads unfit for their kind raise FormatError; with
    wrap=True (fuzzing) integers are written modulo their field's width
    and a misfit payload becomes the smallest one of its kind."""
    w = _Writer(wrap)
    w.raw(MAGIC)
    w.u32(model["version"])
    for tag, sec in model["sections"]:
        body = _Writer(wrap)
        if tag == b"VARS":
            body.u32(len(sec))
            for v in sec:
                body.str(v["name"])
                body.u8(v["trainable"])
                body.u8(v["any_rank"])
                body.shape(v["shape"])
                body.tensor(v["value"])
        elif tag == b"FUNC":
            name, share, g = sec
            body.str(name)
            body.u32(share)
            if g is not None:
                body.graph(g)
        else:
            body.raw(sec)
        b = body.bytes()
        w.raw(tag)
        w.i64(len(b))
        w.raw(b)
    b = w.bytes()
    return b + struct.pack("<I", zlib.crc32(b))


def tensor_value(t):
    """A file tensor [meta, bytes] -> ndarray."""
    (code, shape), data = t
    if code not in NP_DTYPES:
        raise FormatError(f"dtype code {code} has no NumPy form here")
    return np.frombuffer(data, NP_DTYPES[code]).reshape(shape)


def tensor_of(a):
    a = np.ascontiguousarray(a)
    return [[CODES[a.dtype], list(a.shape)], a.tobytes()]


def new_attrs(ints=(), i=(), f=(), dtype=0):
    return {"ints": list(ints), "i": (list(i) + [0] * 6)[:6],
            "f": ([float(v) for v in f] + [0.0] * 4)[:4], "dtype": dtype}
