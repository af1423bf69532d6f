"""Post-training quantization of a saved model (Note [Quantized
arithmetic] in csrc/ops/quant.h says what the new ops compute).

Dynamic range: float32 weights of MatMul and Conv2D with at least
1024 elements (TF Lite's default threshold) become int8 constants with
one symmetric scale per output channel; MatMuls become
HybridFullyConnectedPacked (activations quantized per row at run time)
and Conv2Ds HybridConv2DPacked (per image), with the bias add and
Relu/Relu6 that follow. Full integer: each MatMul or Conv2D, with the
bias add and Relu/Relu6 that follow it, becomes one
QuantizedFullyConnectedPacked or QuantizedConv2DPacked, with activation
ranges calibrated on the representative dataset; between two of them
(and through MaxPool, AvgPool, Reshape and Softmax, which run in int8)
values stay int8, and at the model's float edges the layer quantizes
its input and dequantizes its output itself. Other ops stay float.

Weights of the GEMM ops are stored packed (Note [Packed int8 weights]
in csrc/kernels/cpu/qgemm.h) with their column sums, so the kernels
take them as they are."""
import json

import numpy as np

from ..saved_model import file_format as F
from . import _graph as G

MIN_ELEMENTS = 1024     # TF Lite's dynamic-range default threshold
_FC = b"BatchMatMulV2"
_CONV = b"Conv2D"


def quantize_weights(w):
    """float [..., C] -> (int8 q, float32 scale [C]): symmetric per last
    axis, q in [-127, 127] (TF Lite's per-channel rule)."""
    m = np.abs(w.reshape(-1, w.shape[-1])).max(axis=0) if w.size else \
        np.zeros(w.shape[-1], np.float32)
    scale = np.where(m > 0, m / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale


def pack_weights(q):
    """int8 [K, N] -> (int8 [ceil(K/4) * 4 * N], int32 column sums [N]):
    the form the int8 GEMM reads (Note [Packed int8 weights] in
    csrc/kernels/cpu/qgemm.h): panels of 16 columns (the last one
    narrower), each [ceil(K/4)][width][4], zero rows past K."""
    k, n = q.shape
    k4 = -(-k // 4)
    full = np.zeros((k4 * 4, n), np.int8)
    full[:k] = q
    panels = [full[:, p:p + 16].reshape(k4, 4, -1).transpose(0, 2, 1)
              .reshape(-1) for p in range(0, n, 16)]
    packed = np.concatenate(panels) if panels else np.zeros(0, np.int8)
    return (np.ascontiguousarray(packed, np.int8),
            q.astype(np.int64).sum(axis=0).astype(np.int32))


def activation_params(lo, hi):
    """(scale, zero_point) of an asymmetric int8 range holding 0."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = (hi - lo) / 255.0
    if not scale > 0 or not np.isfinite(scale):
        scale = 1.0
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zp


def _matmul_weight(g, node, variables):
    """(weight node index, value) when node is a MatMul or Conv2D whose
    weights are a float32 constant or variable the rewrite may freeze."""
    if node["op"] == _FC:
        if node["attrs"]["i"][0] or node["attrs"]["i"][1]:
            return None
        if len(node["out"][0][1]) < 2:
            return None
        rank = 2
    elif node["op"] == _CONV:
        rank = 4
        src = node["in"][0]
        shape = g["nodes"][src[0]]["out"][src[1]][1]
        w_shape = g["nodes"][node["in"][1][0]]["out"][0][1]
        # a grouped convolution (filter channels < input channels) has
        # no quantized form here
        if len(shape) != 4 or len(w_shape) != 4 or \
                shape[3] not in (-1, w_shape[2]):
            return None
    else:
        return None
    k = node["in"][1][0]
    w = G.weight_value(g["nodes"][k], variables)
    if w is None or w.ndim != rank:
        return None
    return k, w


class _Emitter:
    """Rebuilds a graph's node list, keeping indices stable for nodes it
    copies: replaced nodes are redirected through remap."""

    def __init__(self, g):
        self.g, self.nodes, self.remap = g, [], {}

    def add(self, node):
        self.nodes.append(node)
        return len(self.nodes) - 1

    def ref(self, edge):
        return [self.remap[edge[0]], edge[1]]

    def copy(self, k):
        node = dict(self.g["nodes"][k])
        node["in"] = [self.ref(e) for e in node["in"]]
        node["ctrl"] = [self.remap[c] for c in node["ctrl"]]
        self.remap[k] = self.add(node)

    def finish(self):
        self.g["nodes"] = self.nodes
        self.g["outs"] = [self.ref(e) for e in self.g["outs"]]
        G.prune(self.g)


def dynamic_range(g, variables):
    """Rewrites g in place; returns the number of layers quantized. A
    MatMul's or Conv2D's bias add and Relu/Relu6 join its
    HybridFullyConnectedPacked or HybridConv2DPacked, as in TF Lite's
    hybrid FULLY_CONNECTED and CONV_2D."""
    em, count = _Emitter(g), 0
    chains = {c[0]: c for c in _chains(g, variables)}
    skip = set()
    for k, node in enumerate(g["nodes"]):
        if k in skip:
            continue
        hit = _matmul_weight(g, node, variables)
        if hit is None or hit[1].size < MIN_ELEMENTS:
            em.copy(k)
            continue
        q, s = quantize_weights(hit[1])
        base = node["name"] + b"/quantized"
        ws = em.add(G.const_node(base + b"/scale", s))
        x = em.ref(node["in"][0])
        wp, cs = pack_weights(q.reshape(-1, q.shape[-1]))
        ins = [x, [em.add(G.const_node(base + b"/weights", wp)), 0],
               [ws, 0], [em.add(G.const_node(base + b"/colsum", cs)), 0]]
        _, _, bias, act, end, members = chains[k]
        if bias is not None:
            ins.append([em.add(G.const_node(
                base + b"/bias", np.asarray(bias, np.float32))), 0])
        if node["op"] == _FC:
            op, ints, i0 = b"HybridFullyConnectedPacked", [], 0
        else:
            fa = node["attrs"]
            op, i0 = b"HybridConv2DPacked", fa["i"][0]
            ints = list(fa["ints"][:4]) + list(q.shape) + \
                list(fa["ints"][8:12])
        last = g["nodes"][end]
        em.remap[end] = em.add(G.op_node(
            op, last["name"], ins, last["out"][0],
            F.new_attrs(ints=ints, i=[i0, 0, 0, act])))
        skip.update(members[1:])
        count += 1
    em.finish()
    return count


def _chains(g, variables):
    """The MatMul/Conv2D [-> bias AddV2] [-> Relu/Relu6] chains to fuse:
    [(first node, weights, bias value or None, activation code, last
    node, the chain's nodes in order)]."""
    uses = G.consumers(g)
    users = {}
    for k, node in enumerate(g["nodes"]):
        for a, _ in node["in"]:
            users.setdefault(a, []).append(k)
    out = []
    for k, node in enumerate(g["nodes"]):
        hit = _matmul_weight(g, node, variables)
        if hit is None:
            continue
        end, bias, act, members = k, None, 0, [k]
        c = hit[1].shape[-1]
        nxt = users.get(end, [])
        if uses[end] == 1 and len(nxt) == 1 and \
                g["nodes"][nxt[0]]["op"] in (b"AddV2", b"BiasAdd"):
            add = g["nodes"][nxt[0]]
            other = [e for e in add["in"] if e[0] != end]
            if len(other) == 1:
                b = G.weight_value(g["nodes"][other[0][0]], variables)
                if b is not None and b.shape == (c,):
                    end, bias = nxt[0], b
                    members.append(end)
        nxt = users.get(end, [])
        if uses[end] == 1 and len(nxt) == 1 and \
                g["nodes"][nxt[0]]["op"] in (b"Relu", b"Relu6"):
            act = 1 if g["nodes"][nxt[0]]["op"] == b"Relu" else 2
            end = nxt[0]
            members.append(end)
        out.append((k, hit[1], bias, act, end, members))
    return out


_INT8, _FLOAT32 = 1, 7                 # tfm_dtype codes
# Ops that run on int8 here, and the (scale, zero point) of their output
# given their input's: pooling and Reshape keep it, Softmax has TF Lite's.
_POOLS = {b"MaxPool": b"QuantizedMaxPool", b"AvgPool": b"QuantizedAvgPool"}


def _int8_params(node, qin):
    if node["op"] in _POOLS or node["op"] == b"Reshape":
        return qin
    if node["op"] == b"Softmax":
        rank = len(node["out"][0][1])
        if node["attrs"]["i"][0] in (-1, rank - 1):
            return (1.0 / 256.0, -128)
    return None


def full_integer(g, variables, representative_dataset, n_inputs):
    """Calibrates on representative_dataset and rewrites g in place;
    returns the number of layers quantized."""
    chains = _chains(g, variables)
    if not chains:
        return 0
    want = set()
    for k, _, _, _, end, _ in chains:
        want.add(tuple(g["nodes"][k]["in"][0]))
        want.add((end, 0))
    lo, hi, seen = {}, {}, 0
    for sample in representative_dataset():
        feeds = _feeds(sample, n_inputs)
        for k, v in G.evaluate(g, variables, feeds, want).items():
            v = v.astype(np.float64)
            lo[k] = min(lo.get(k, 0.0), float(v.min()) if v.size else 0.0)
            hi[k] = max(hi.get(k, 0.0), float(v.max()) if v.size else 0.0)
        seen += 1
    if not seen:
        raise ValueError("tf.lite: representative_dataset yielded no "
                         "samples; calibration needs at least one")
    nodes = g["nodes"]
    by_end = {c[4]: c for c in chains}
    inside = set()          # a chain's nodes before its last
    for c in chains:
        inside.update(c[5][:-1])
    # Which edges carry int8, with their (scale, zero point): every
    # layer's output, then what int8 ops make of them (node order is
    # topological).
    qp = {}
    for k, node in enumerate(nodes):
        if k in by_end:
            qp[k] = activation_params(lo[(k, 0)], hi[(k, 0)])
        elif node["in"] and node["in"][0][0] in qp and \
                node["in"][0][1] == 0:
            p = _int8_params(node, qp[node["in"][0][0]])
            if p is not None:
                qp[k] = p
    firsts = {c[0] for c in chains}
    int8_users = set()      # int8 edges some node reads as int8
    for k, node in enumerate(nodes):
        if k in qp and k not in by_end:
            int8_users.add(node["in"][0][0])
        if k in firsts and node["in"][0][0] in qp:
            int8_users.add(node["in"][0][0])
    # A layer that only float ops read gives float itself.
    for k in by_end:
        if k not in int8_users:
            del qp[k]
    em, deq = _Emitter(g), {}

    def float_ref(edge):
        """edge as float32: an int8 edge through one Dequantize."""
        a = edge[0]
        if a not in qp:
            return em.ref(edge)
        if a not in deq:
            s_, z_ = qp[a]
            deq[a] = em.add(G.op_node(
                b"Dequantize", nodes[a]["name"] + b"/dequantize",
                [em.ref([a, 0])], [_FLOAT32, list(nodes[a]["out"][0][1])],
                F.new_attrs(i=[0, z_], f=[s_])))
        return [deq[a], 0]

    for k, node in enumerate(nodes):
        if k in inside:
            continue
        if k in by_end:
            em.remap[k] = _emit_layer(em, g, by_end[k], qp, lo, hi,
                                      float_ref)
        elif k in qp:
            new = dict(node)
            new["in"] = [em.ref(node["in"][0])] + \
                [float_ref(e) for e in node["in"][1:]]
            new["ctrl"] = [em.remap[c] for c in node["ctrl"]]
            new["out"] = [[_INT8, list(node["out"][0][1])]]
            if node["op"] in _POOLS:
                new["op"] = _POOLS[node["op"]]
            elif node["op"] == b"Softmax":
                new["op"] = b"QuantizedSoftmax"
                new["attrs"] = F.new_attrs(
                    f=[qp[node["in"][0][0]][0], 1.0])
            em.remap[k] = em.add(new)
        else:
            new = dict(node)
            new["in"] = [float_ref(e) for e in node["in"]]
            new["ctrl"] = [em.remap[c] for c in node["ctrl"]]
            em.remap[k] = em.add(new)
    g["outs"] = [float_ref(e) for e in g["outs"]]
    g["nodes"] = em.nodes
    G.prune(g)
    return len(chains)


def _emit_layer(em, g, chain, qp, lo, hi, float_ref):
    """One QuantizedFullyConnectedPacked or QuantizedConv2DPacked for a
    chain: int8 or float in, int8 or float out, as its neighbours are."""
    first, w, bias, act, end, _ = chain
    fnode = g["nodes"][first]
    xin = fnode["in"][0]
    if xin[0] in qp:
        (s_in, z_in), x = qp[xin[0]], em.ref(xin)
    else:
        s_in, z_in = activation_params(lo[tuple(xin)], hi[tuple(xin)])
        x = float_ref(xin)
    s_out, z_out = activation_params(lo[(end, 0)], hi[(end, 0)])
    out_int8 = end in qp
    q, ws = quantize_weights(w)
    wp, cs = pack_weights(q.reshape(-1, q.shape[-1]))
    base = fnode["name"] + b"/quantized"
    bq = np.zeros(q.shape[-1], np.int64) if bias is None else np.clip(
        np.round(bias / (s_in * ws.astype(np.float64))), -2**31, 2**31 - 1)
    # Note [Quantized arithmetic]: the input's zero point folds in here.
    offset = bq.astype(np.int64) - (z_in + 128) * cs.astype(np.int64)
    if np.abs(offset).max(initial=0) >= 2**31:
        raise ValueError(f"tf.lite: layer {fnode['name'].decode()!r}: its "
                         f"bias and zero-point offset do not fit in int32")
    ins = [x, [em.add(G.const_node(base + b"/weights", wp)), 0],
           [em.add(G.const_node(base + b"/scale", ws)), 0],
           [em.add(G.const_node(base + b"/offset",
                                offset.astype(np.int32))), 0]]
    end_node = g["nodes"][end]
    fa = fnode["attrs"]
    if fnode["op"] == _FC:
        op, ints, i0 = b"QuantizedFullyConnectedPacked", [], 0
    else:
        op, i0 = b"QuantizedConv2DPacked", fa["i"][0]
        ints = list(fa["ints"][:4]) + list(w.shape) + list(fa["ints"][8:12])
    attrs = F.new_attrs(ints=ints, i=[i0, z_in, z_out, act],
                        f=[s_in, s_out],
                        dtype=_INT8 if out_int8 else _FLOAT32)
    meta = [_INT8 if out_int8 else _FLOAT32, list(end_node["out"][0][1])]
    return em.add(G.op_node(op, end_node["name"] if not out_int8 else base,
                            ins, meta, attrs))


def _feeds(sample, n_inputs):
    if isinstance(sample, dict):
        sample = list(sample.values())
    elif not isinstance(sample, (list, tuple)):
        sample = [sample]
    if len(sample) != n_inputs:
        raise ValueError(f"tf.lite: representative_dataset gave {len(sample)}"
                         f" inputs per sample; the model takes {n_inputs}")
    return [np.asarray(s, np.float32) for s in sample]


def _var_refs(g, acc):
    for node in g["nodes"]:
        if node["kind"] == F.K_VAR:
            acc.add(node["pay"])
        elif node["kind"] == F.K_GRAPHS:
            for _, sub in node["pay"]:
                _var_refs(sub, acc)


def _strip_sites(g):
    """Drops the Python source sites (debug info, as TF Lite's converter
    drops it): they are often a third of a small model's file."""
    for node in g["nodes"]:
        node["site"] = b""
        if node["kind"] == F.K_GRAPHS:
            for _, sub in node["pay"]:
                _strip_sites(sub)


def _remap_vars(g, new_index):
    for node in g["nodes"]:
        if node["kind"] == F.K_VAR:
            node["pay"] = new_index[node["pay"]]
        elif node["kind"] == F.K_GRAPHS:
            for _, sub in node["pay"]:
                _remap_vars(sub, new_index)


def _meta_vars(x, acc, new_index=None):
    """Collects (or, given new_index, renumbers) {"var": i} in META."""
    if isinstance(x, dict):
        if set(x) == {"var"} and isinstance(x["var"], int):
            if new_index is None:
                acc.add(x["var"])
            else:
                x["var"] = new_index[x["var"]]
            return
        for v in x.values():
            _meta_vars(v, acc, new_index)
    elif isinstance(x, list):
        for v in x:
            _meta_vars(v, acc, new_index)


def convert_bytes(data, mode, representative_dataset=None,
                  signature_key="serving_default"):
    """Quantizes saved-model bytes; mode "dynamic" or "int8". Returns
    (bytes, layers quantized)."""
    model = F.decode(data)
    secs = model["sections"]
    meta_i = [i for i, (t, _) in enumerate(secs) if t == b"META"]
    meta = json.loads(secs[meta_i[0]][1]) if meta_i else {}
    var_sec = [s for t, s in secs if t == b"VARS"]
    variables = var_sec[0] if var_sec else []
    funcs = [s for t, s in secs if t == b"FUNC"]
    count = 0
    if mode == "dynamic":
        for _, _, g in funcs:
            if g is not None:
                count += dynamic_range(g, variables)
    else:
        sig = meta.get("signatures", {}).get(signature_key)
        if sig is None:
            raise ValueError(f"tf.lite: the saved model has no signature "
                             f"{signature_key!r} (it has "
                             f"{sorted(meta.get('signatures', {}))})")
        rec = sig["record"]
        while funcs[rec][1] != F.NO_SHARE:
            rec = funcs[rec][1]
        count = full_integer(funcs[rec][2], variables,
                             representative_dataset, len(sig["inputs"]))
    # Variables whose every reader became a constant are dropped, and
    # the rest renumbered (that is where the file gets smaller).
    used = set()
    for _, _, g in funcs:
        if g is not None:
            _var_refs(g, used)
    _meta_vars(meta, used)
    keep = [i for i in range(len(variables)) if i in used]
    new_index = {old: new for new, old in enumerate(keep)}
    for _, _, g in funcs:
        if g is not None:
            _remap_vars(g, new_index)
            _strip_sites(g)
    _meta_vars(meta, None, new_index)
    variables[:] = [variables[i] for i in keep]
    if meta_i:
        secs[meta_i[0]][1] = json.dumps(meta).encode()
    return F.encode(model), count
