"""Graph editing over decoded saved-model graphs (file_format): node
construction, consumers, dead-node removal, and an eager evaluator that
runs a graph node by node through the op table (the converter's
calibration needs every intermediate value)."""
import numpy as np

from .. import _C
from ..saved_model import file_format as F

_TABLE = _C.op_table()
# Keyed by bytes: op names in decoded graphs are bytes, as stored.
OP_IDS = {row[0].encode(): k for k, row in enumerate(_TABLE)}
_STATEFUL, _SOURCE = 1 << 3, 1 << 7


def const_node(name, value):
    value = np.ascontiguousarray(value)
    code = F.CODES[value.dtype]
    return {"op": b"Const", "name": name, "site": b"", "in": [], "ctrl": [],
            "attrs": F.new_attrs(ints=value.shape, dtype=code),
            "out": [[code, list(value.shape)]], "kind": F.K_CONST,
            "pay": F.tensor_of(value)}


def op_node(op, name, ins, out_meta, attrs=None):
    return {"op": op, "name": name, "site": b"", "in": [list(x) for x in ins],
            "ctrl": [], "attrs": attrs or F.new_attrs(), "out": [out_meta],
            "kind": F.K_NONE}


def consumers(g):
    """node index -> number of uses of its outputs (graph outputs too)."""
    n = [0] * len(g["nodes"])
    for node in g["nodes"]:
        for a, _ in node["in"]:
            n[a] += 1
        for c in node["ctrl"]:
            n[c] += 1
    for a, _ in g["outs"]:
        n[a] += 1
    return n


def prune(g):
    """Drops the nodes that no output, control edge or stateful op needs
    (what a rewrite left behind), renumbering the rest."""
    nodes = g["nodes"]
    keep = [False] * len(nodes)
    todo = [a for a, _ in g["outs"]]
    for k, node in enumerate(nodes):
        flags = _TABLE[OP_IDS[node["op"]]][3] if node["op"] in OP_IDS \
            else _STATEFUL
        # A variable read is "stateful" only in that it sees assignments;
        # an unread one is dead like any other value.
        if flags & _STATEFUL and not flags & _SOURCE:
            todo.append(k)
    while todo:
        k = todo.pop()
        if keep[k]:
            continue
        keep[k] = True
        todo.extend(a for a, _ in nodes[k]["in"])
        todo.extend(nodes[k]["ctrl"])
    new_index, out = {}, []
    for k, node in enumerate(nodes):
        if keep[k]:
            new_index[k] = len(out)
            node["in"] = [[new_index[a], o] for a, o in node["in"]]
            node["ctrl"] = [new_index[c] for c in node["ctrl"]]
            out.append(node)
    g["nodes"] = out
    g["outs"] = [[new_index[a], o] for a, o in g["outs"]]


def weight_value(node, variables):
    """The float32 value a Const or ReadVariableOp node stands for, or
    None (anything computed)."""
    if node["kind"] == F.K_CONST:
        v = F.tensor_value(node["pay"])
    elif node["kind"] == F.K_VAR and node["op"] == b"ReadVariableOp":
        v = F.tensor_value(variables[node["pay"]]["value"])
    else:
        return None
    return v if v.dtype == np.float32 else None


def evaluate(g, variables, feeds, want):
    """Runs graph g eagerly on feeds (one array per Placeholder, in node
    order) and returns {(node, output): ndarray} for the edges in want."""
    from .. import constant
    vals, got, ph = {}, {}, 0
    for k, node in enumerate(g["nodes"]):
        op = node["op"]
        if op == b"Placeholder":
            outs = [constant(feeds[ph])]
            ph += 1
        elif node["kind"] == F.K_CONST:
            outs = [constant(F.tensor_value(node["pay"]))]
        elif node["kind"] == F.K_VAR:
            outs = [constant(F.tensor_value(
                variables[node["pay"]]["value"]))]
        else:
            if op not in OP_IDS or _TABLE[OP_IDS[op]][3] & (1 << 6):
                raise NotImplementedError(
                    f"tf.lite: calibration runs the graph op by op and "
                    f"cannot run {op.decode(errors='replace')!r} (node "
                    f"{node['name'].decode(errors='replace')!r}); "
                    f"full-integer quantization supports graphs without "
                    f"control flow or stateful ops")
            a = node["attrs"]
            r = _C.call(OP_IDS[op], tuple(vals[x][o] for x, o in node["in"]),
                        ints=tuple(a["ints"]), i=tuple(a["i"]),
                        f=tuple(a["f"]), dtype=a["dtype"])
            outs = list(r) if isinstance(r, (tuple, list)) else [r]
        vals[k] = outs
        for o in range(len(outs)):
            if (k, o) in want:
                got[(k, o)] = np.asarray(outs[o])
    return got
