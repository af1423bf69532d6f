"""Post-training quantization of a saved model (Note [Quantized
arithmetic] in csrc/ops/quant.h says what the new ops compute).

Dynamic range: float32 weights of MatMul and Conv2D with at least
1024 elements (TF Lite's default threshold) become int8 constants with
one symmetric scale per output channel; MatMuls become
HybridFullyConnected (activations quantized per row at run time), Conv2D
reads Dequantize(weights). Full integer: each MatMul or Conv2D, with the
bias add and Relu/Relu6 that follow it, becomes one QuantizedFullyConnected
or QuantizedConv2D between a Quantize and a Dequantize, with activation
ranges calibrated on the representative dataset. Other ops stay float."""
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
    """Rewrites g in place; returns the number of layers quantized."""
    em, count = _Emitter(g), 0
    for k, node in enumerate(g["nodes"]):
        hit = _matmul_weight(g, node, variables)
        if hit is None or hit[1].size < MIN_ELEMENTS:
            em.copy(k)
            continue
        q, s = quantize_weights(hit[1])
        base = node["name"] + b"/quantized"
        wq = em.add(G.const_node(base + b"/weights", q))
        ws = em.add(G.const_node(base + b"/scale", s))
        x = em.ref(node["in"][0])
        if node["op"] == _FC:
            new = G.op_node(b"HybridFullyConnected", node["name"],
                            [x, [wq, 0], [ws, 0]], node["out"][0])
        else:
            deq = em.add(G.op_node(b"Dequantize", base + b"/dequantize",
                                   [[wq, 0], [ws, 0]], [7, list(q.shape)]))
            new = dict(node)
            new["in"] = [x, [deq, 0]]
            new["ctrl"] = [em.remap[c] for c in node["ctrl"]]
        em.remap[k] = em.add(new)
        count += 1
    em.finish()
    return count


def _chains(g, variables):
    """The MatMul/Conv2D [-> bias AddV2] [-> Relu/Relu6] chains to fuse:
    [(first node, bias value or None, activation code, last node)]."""
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
        end, bias, act = k, None, 0
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
        nxt = users.get(end, [])
        if uses[end] == 1 and len(nxt) == 1 and \
                g["nodes"][nxt[0]]["op"] in (b"Relu", b"Relu6"):
            act = 1 if g["nodes"][nxt[0]]["op"] == b"Relu" else 2
            end = nxt[0]
        out.append((k, hit[1], bias, act, end))
    return out


def full_integer(g, variables, representative_dataset, n_inputs):
    """Calibrates on representative_dataset and rewrites g in place;
    returns the number of layers quantized."""
    chains = _chains(g, variables)
    if not chains:
        return 0
    want = set()
    for k, _, _, _, end in chains:
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
    by_end = {c[4]: c for c in chains}
    em = _Emitter(g)
    for k, node in enumerate(g["nodes"]):
        if k not in by_end:
            em.copy(k)
            continue
        first, w, bias, act, end = by_end[k]
        fnode = g["nodes"][first]
        xin = fnode["in"][0]
        s_in, z_in = activation_params(lo[tuple(xin)], hi[tuple(xin)])
        s_out, z_out = activation_params(lo[(end, 0)], hi[(end, 0)])
        q, ws = quantize_weights(w)
        base = fnode["name"] + b"/quantized"
        xmeta = g["nodes"][xin[0]]["out"][xin[1]]
        qx = em.add(G.op_node(b"Quantize", base + b"/input", [em.ref(xin)],
                              [1, list(xmeta[1])],
                              F.new_attrs(i=[0, z_in], f=[s_in])))
        ins = [[qx, 0], [em.add(G.const_node(base + b"/weights", q)), 0],
               [em.add(G.const_node(base + b"/scale", ws)), 0]]
        if bias is not None:
            bq = np.clip(np.round(bias / (s_in * ws.astype(np.float64))),
                         -2**31, 2**31 - 1).astype(np.int32)
            ins.append([em.add(G.const_node(base + b"/bias", bq)), 0])
        shape = list(node["out"][0][1])
        qa = dict(fnode["attrs"])
        qa["i"] = [fnode["attrs"]["i"][0], z_in, z_out, act, 0, 0]
        qa["f"] = [s_in, s_out, 0.0, 0.0]
        qa["dtype"] = 0
        op = b"QuantizedFullyConnected" if fnode["op"] == _FC else \
            b"QuantizedConv2D"
        qy = em.add(G.op_node(op, base, ins, [1, shape], qa))
        em.remap[k] = em.add(G.op_node(
            b"Dequantize", node["name"], [[qy, 0]], [7, shape],
            F.new_attrs(i=[0, z_out], f=[s_out])))
    em.finish()
    return len(chains)


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
