"""GraphDef / NodeDef look-alikes for FuncGraph.as_graph_def().

TF returns protocol buffers; tfmini has no protobuf, so these are plain
objects with the fields a user reads (`graph_def.node`, `node.name`,
`node.op`, `node.input`) and protobuf's text format as their str(). They
are a read-only view of a trace: there is nothing to import them into."""


class NodeDef:
    __slots__ = ("name", "op", "input", "device", "attr")

    def __init__(self, name, op, inputs):
        self.name = name
        self.op = op
        self.input = inputs
        self.device = ""
        self.attr = {}

    def _text(self, indent):
        pad = " " * indent
        lines = [f'{pad}name: "{self.name}"', f'{pad}op: "{self.op}"']
        lines += [f'{pad}input: "{i}"' for i in self.input]
        return lines

    def __str__(self):
        return "\n".join(self._text(0)) + "\n"

    __repr__ = __str__


class GraphDef:
    __slots__ = ("node",)

    def __init__(self, nodes):
        self.node = nodes

    def __str__(self):
        lines = []
        for n in self.node:
            lines.append("node {")
            lines += n._text(2)
            lines.append("}")
        return "\n".join(lines) + ("\n" if lines else "")

    __repr__ = __str__


def _input_name(ref):
    # NodeDef spells output 0 of node "a" as "a", output k as "a:k".
    name, _, index = ref.rpartition(":")
    if not name:
        return ref
    return name if index == "0" else ref


def graph_def(operations, outputs=()):
    """A GraphDef of FuncGraph.get_operations(). A TF function graph
    ends each output in an Identity node ("Identity", "Identity_1", ...)
    that tfmini's graph does without; the GraphDef lists them, so node
    counts and names read as in TF."""
    nodes = [NodeDef(op.name, op.type,
                     [_input_name(i) for i in op.inputs] +
                     ["^" + c for c in op.control_inputs])
             for op in operations]
    taken = {n.name for n in nodes}
    k = 0
    for ref in outputs:
        name = "Identity"
        while name in taken:
            k += 1
            name = f"Identity_{k}"
        taken.add(name)
        nodes.append(NodeDef(name, "Identity", [_input_name(ref)]))
    return GraphDef(nodes)
