"""tf.saved_model.save: the traced graphs of an object's tf.functions and
the variables they use, in the C core's file format (Note [Saved model
file] in csrc/graph/saved_model.h).

The C side writes the graphs and variables; this side decides what to
save and writes the meta blob, JSON that says how to rebuild the Python
face of each function:

    {"format": 1,
     "root": object,                 # the saved object's attributes
     "functions": {key: {"name": str, "params": [[name, kind, default]],
                         "concretes": [{"record": i, "inputs": structure,
                                        "outputs": structure,
                                        "kind": output kind,
                                        "ranks": [int] (optional),
                                        "gradient": gradient (optional)}]}},
     "signatures": {key: {"record": i, "inputs": [[name, spec]],
                          "outputs": [[name, spec]],
                          "ranks": [signature] (optional)}}}
    object = {"attrs": {name: {"fn": key} | {"var": index} |
                              {"obj": object} | {"list"/"tuple": [...]} |
                              {"dict": [[name, ...]]} |
                              {"sig": [key, signature]}}}

A loaded object saves again (load.py's classes): its functions with
every saved trace as they came in (structures, ranks and custom
gradients), its variables with their current values, and its signatures
as the new file's signatures when it is the object saved, else as a
"sig" attribute (a loaded model inside a new object keeps its own
.signatures, as in TF 2.21).

"record" indexes the functions written to the file (one per concrete
function and one per signature; a signature of a concrete function
already saved shares its graph). Structures are _structure.encode's.
"ranks" marks what an unknown-rank signature saved (Note [Unknown rank]
in tfmini/function_unknown_rank.py): one concrete function per rank
pattern, each with the ranks of its unknown-rank inputs; a signature's
specs of unknown rank, with one signature entry per rank under "ranks".

Note [Saved custom gradients]: a trace that used @tf.custom_gradient
differentiates through a second traced function (function.py's
_CustomGradientRun: inputs the trace's leaves and one gradient per
differentiable output; outputs the gradients of the differentiable
leaves, then of the variables the body read). TF saves custom gradients
unless SaveOptions(experimental_custom_gradients=False), and so does
tfmini: that gradient function is one more record, and the concrete
function's entry says

    gradient = {"record": i, "inputs": structure, "outputs": structure,
                "kind": output kind, "wrt": [leaf index],
                "variables": [variable index]}

load.py gives the loaded trace a run that, under a tape, records the
forward call with the saved gradient graph as its backward (no Python
is re-run: the body is not in the file). Without the entry a loaded
function's gradient is the plain one, as before."""
import importlib
import json
import os

from .. import _C, errors
from .. import nest as _nest
from ..function import ConcreteFunction, Function, TensorSpec
from ..function import _CustomGradientRun
from ..function_unknown_rank import RankGenericConcreteFunction
from ..module import Module
from ..variables import Variable
from ..function_structures import _Components
from . import _structure
from .options import SaveOptions

# The module (tfmini.function, the package's attribute, is tf.function).
_function = importlib.import_module("..function", __package__)

_FORMAT = 1


def _loaded():
    """load.py's classes (it imports this module)."""
    return importlib.import_module(".load", __package__)


def _keras_types():
    from ..keras.layers.base import Layer
    from ..keras.models.model import Model
    return Layer, Model


class _Saver:
    def __init__(self):
        self.variables = []          # tf.Variable, in table order
        self._var_index = {}         # id -> index
        self.records = []            # (name, ConcreteFunction)
        self._record_names = set()
        self.functions = {}          # key -> meta entry
        self._fn_keys = {}           # id(Function/concrete) -> (key, it)
        self._seen = {}              # id -> object (kept alive)
        self.custom_gradients = True     # SaveOptions' setting

    # ---- tables ----
    def var(self, v):
        k = self._var_index.get(id(v))
        if k is None:
            k = self._var_index[id(v)] = len(self.variables)
            self.variables.append(v)
        return k

    def record(self, name, concrete):
        base, n = name, 1
        while name in self._record_names:
            name = f"{base}_{n}"
            n += 1
        self._record_names.add(name)
        self.records.append((name, concrete))
        return len(self.records) - 1

    # ---- functions ----
    def function(self, fn, path):
        """The key of tf.function fn's entry, or None when it has nothing
        to save (never traced and no input_signature, as TF skips)."""
        if id(fn) in self._fn_keys:
            return self._fn_keys[id(fn)][0]
        L = _loaded()
        if isinstance(fn, ConcreteFunction):
            concretes, binder, name = [fn], fn._binder, fn.name
        elif isinstance(fn, L.RestoredFunction):
            concretes, binder, name = list(fn.concrete_functions), \
                fn._binder, fn._name
        else:
            if fn.input_signature is not None and not fn._traces:
                fn.get_concrete_function()
            concretes, binder, name = list(fn._traces), fn._binder, fn._name
        if not concretes:
            return None
        entry = {"name": name, "params": _params(binder), "concretes": []}
        # An unknown-rank signature is saved as its rank traces (Note
        # [Unknown rank] in tfmini/function_unknown_rank.py).
        ranks = []
        for c in concretes:
            if isinstance(c, RankGenericConcreteFunction):
                for r, rc in c.saveable_traces():
                    ranks.append((rc, list(r)))
            else:
                ranks.append((c, None))
        concretes = [c for c, _ in ranks]
        if isinstance(fn, Function) or \
                isinstance(fn, RankGenericConcreteFunction):
            owner = fn if isinstance(fn, Function) else fn._owner()
            concretes = [owner._saveable_trace(c) for c in concretes]
        for c, (_, r) in zip(concretes, ranks):
            what = f"tf.function '{name}'"
            entry["concretes"].append({
                "record": self.record(path, c),
                "inputs": _structure.encode(c._canonical_specs,
                                            f"an argument of {what}"),
                "outputs": _structure.encode(_output_specs(c),
                                             f"the result of {what}"),
                "kind": c._out_kind})
            if r is None and isinstance(c, L._LoadedConcreteFunction):
                r = c._saved_ranks        # a loaded rank trace's ranks
            if r is not None:
                # the ranks of the unknown-rank inputs (load.py's error)
                entry["concretes"][-1]["ranks"] = r
            grad = self.custom_gradient(c, path, name)
            if grad is not None:
                entry["concretes"][-1]["gradient"] = grad
        self.functions[path] = entry
        # fn is kept: its id must not be reused by a later Function.
        self._fn_keys[id(fn)] = (path, fn)
        return path

    def custom_gradient(self, c, path, name):
        """The "gradient" entry of trace c where it used
        @tf.custom_gradient (Note [Saved custom gradients]), else None."""
        run = c.__dict__.get("_run")
        if not isinstance(run, _CustomGradientRun):
            return None
        if not self.custom_gradients:
            return None
        saved = getattr(run, "saved", None)
        if saved is not None:
            # A loaded trace's saved gradient (load.py's
            # _SavedCustomGradientRun) goes out as it came in.
            g, variables, wrt = saved
            what = f"the gradient of tf.function '{name}'"
            return {"record": self.record(path + "_gradient", g),
                    "inputs": _structure.encode(g._canonical_specs, what),
                    "outputs": _structure.encode(_output_specs(g), what),
                    "kind": g._out_kind, "wrt": list(wrt),
                    "variables": [self.var(v) for v in variables]}
        outs = [t for t in _nest.flatten(_function._pack_outputs(
                    c._out_structure, list(c.outputs)))
                if isinstance(t, _function.Tensor) and
                _function._differentiable(t.dtype)]
        if not outs:
            return None
        grad, variables, wrt = run._gradient_trace(outs)
        g = grad.get_concrete_function()
        what = f"the gradient of tf.function '{name}'"
        return {"record": self.record(path + "_gradient", g),
                "inputs": _structure.encode(g._canonical_specs, what),
                "outputs": _structure.encode(_output_specs(g), what),
                "kind": g._out_kind, "wrt": wrt,
                "variables": [self.var(v) for v in variables]}

    # ---- the object tree ----
    def value(self, x, path, depth):
        if depth > 32:
            return None
        if isinstance(x, Variable):
            return {"var": self.var(x)}
        L = _loaded()
        if isinstance(x, (Function, ConcreteFunction, L.RestoredFunction)):
            key = self.function(x, path)
            return None if key is None else {"fn": key}
        if isinstance(x, L.SignatureFunction):
            # A loaded object's signature kept as an attribute (a loaded
            # model's .signatures, once it is part of a new object).
            return {"sig": [x.name, _loaded_signature(self, path, x)]}
        t = type(x)
        if t is list or t is tuple:
            items = [self.value(v, f"{path}.{i}", depth + 1)
                     for i, v in enumerate(x)]
            if all(i is None for i in items):
                return None
            return {t.__name__: items}
        if t is dict:
            items = [[k, self.value(v, f"{path}.{k}", depth + 1)]
                     for k, v in x.items() if isinstance(k, str)]
            items = [i for i in items if i[1] is not None]
            return {"dict": items} if items else None
        Layer, _ = _keras_types()
        if isinstance(x, (Module, Layer, L._UserObject)) or \
                _has_functions(x):
            node = self.obj(x, path, depth + 1)
            return None if node is None else {"obj": node}
        return None

    def obj(self, o, path, depth):
        if id(o) in self._seen:
            return None
        self._seen[id(o)] = o
        Layer, _ = _keras_types()
        attrs = {}
        if isinstance(o, Layer):
            # Keras objects: their weights and call, not their internals.
            for w in o.weights:
                self.var(w)
            call = _keras_call(o, path)
            if call is not None:
                key = self.function(call, _join(path, "__call__"))
                if key is not None:
                    attrs["__call__"] = {"fn": key}
            return {"attrs": attrs}
        names = _attribute_names(o)
        if isinstance(o, _loaded()._UserObject):
            # What load.py added to a loaded root rather than loaded:
            # its variable lists, and its signatures when it is the
            # object saved (save() takes those as its own).
            skip = set(o.__dict__.get("_tfm_added", ())) - {"signatures"}
            if depth == 0:
                skip.add("signatures")
            names = [n for n in names if n not in skip]
            if "__call__" in o.__dict__:      # a loaded Keras model's call
                names.append("__call__")
        for name in names:
            try:
                x = getattr(o, name)
            except Exception:      # a property that fails: not state
                continue
            enc = self.value(x, _join(path, name), depth)
            if enc is not None:
                attrs[name] = enc
        return {"attrs": attrs}


def _join(path, name):
    return f"{path}.{name}" if path else name


def _has_functions(o):
    return any(isinstance(getattr(type(o), n, None), Function)
               for n in dir(type(o)))


def _attribute_names(o):
    """Public instance attributes, then tf.function methods, sorted."""
    names = {n for n in getattr(o, "__dict__", {}) if not n.startswith("_")}
    for n in dir(type(o)):
        if isinstance(getattr(type(o), n, None), Function):
            names.add(n)
    return sorted(names)


def _params(binder):
    out = []
    for p in binder.signature.parameters.values():
        row = [p.name, int(p.kind)]
        if p.default is not p.empty:
            try:
                row.append(_structure.encode(p.default))
            except _structure.StructureError:
                pass         # not saveable: the argument becomes required
        out.append(row)
    return out


def _output_specs(c):
    """c's output structure with a TensorSpec per tensor."""
    if "_saved_outputs" in c.__dict__:     # a loaded trace: as it came
        return c._saved_outputs
    it = iter(c.outputs)

    def spec(t):
        return TensorSpec(t._shape_tuple, t.dtype)

    def walk(s):
        if s is _function._LEAF:
            return spec(next(it))
        t = type(s)
        if t is list or t is tuple:
            return t(walk(v) for v in s)
        if t is dict:
            return {k: walk(v) for k, v in s.items()}
        if _function._is_namedtuple(s):
            return t(*[walk(v) for v in s])
        return s

    return walk(c._out_structure)


def _keras_call(model, path):
    """A tf.function for a built Keras model's call on a batch of its
    input shape (what TF saves as the model's serving signature)."""
    shape = getattr(model, "_keras_batch_input_shape", None)
    if shape is None or not model.built:
        return None
    if isinstance(shape, list) or (shape and isinstance(shape[0], tuple)):
        raise NotImplementedError(
            "tf.saved_model.save: tfmini saves Keras models of one input "
            "only")
    try:        # a functional model knows its input's dtype (strings...)
        dtype = model.inputs[0].dtype
    except (AttributeError, IndexError, TypeError):
        dtype = "float32"
    spec = TensorSpec((None,) + tuple(shape)[1:], dtype, name="inputs")

    def serve(inputs):
        return model(inputs)

    return _function.function(serve, input_signature=[spec])


def _signature(saver, key, fn):
    """Save fn as signature key: keyword inputs, outputs a flat dict. An
    unknown-rank signature shows its specs and keeps one graph per rank
    under "ranks" (entries of the same form), the first one's record as
    its own."""
    if isinstance(fn, Function):
        if fn.input_signature is None:
            raise ValueError(
                f"tf.saved_model.save: signature {key!r} is a tf.function "
                f"with no input_signature; give it one, or pass "
                f"fn.get_concrete_function(tf.TensorSpec(...)) instead")
        fn = fn.get_concrete_function()
    L = _loaded()
    if isinstance(fn, L.SignatureFunction):
        return _loaded_signature(saver, key, fn)
    if isinstance(fn, L.RestoredFunction):
        if len(fn.concrete_functions) != 1:
            raise ValueError(
                f"tf.saved_model.save: signature {key!r} is the loaded "
                f"tf.function '{fn.name}', which has "
                f"{len(fn.concrete_functions)} saved traces; pass one of "
                f"its concrete_functions")
        fn = fn.concrete_functions[0]
    if not isinstance(fn, ConcreteFunction):
        raise ValueError(
            f"tf.saved_model.save: signature {key!r} must be a tf.function "
            f"with an input_signature or a ConcreteFunction, got "
            f"{type(fn).__name__}")
    if isinstance(fn, RankGenericConcreteFunction):
        ranked = [_signature_entry(saver, key, c, True)
                  for _, c in fn.saveable_traces()]
        entry = _signature_entry(saver, key, fn, False)
        entry["record"] = ranked[0]["record"]
        entry["ranks"] = ranked
        return entry
    return _signature_entry(saver, key, fn, True)


def _loaded_signature(saver, key, sig):
    """A loaded signature saved again as it was loaded (its graphs, one
    per rank where it was saved from an unknown-rank signature)."""
    def specs(rows):
        return [[n, _structure.encode(s)] for n, s in rows]

    if sig._by_rank is not None:
        ranked = [_loaded_signature(saver, key, g) for g in sig._by_rank]
        return {"record": ranked[0]["record"], "inputs": specs(sig._inputs),
                "outputs": specs(sig._outputs), "ranks": ranked}
    return {"record": saver.record(key, sig), "inputs": specs(sig._inputs),
            "outputs": specs(sig._outputs)}


def _flat_output_specs(fn):
    """A TensorSpec per graph output of trace fn, in packing order."""
    if isinstance(fn, RankGenericConcreteFunction):
        return fn.general_output_specs()
    if "_saved_outputs" not in fn.__dict__:
        return [TensorSpec(t._shape_tuple, t.dtype) for t in fn.outputs]
    out = []

    def walk(s):        # _output_specs' order: the specs stand in slots
        if isinstance(s, TensorSpec):
            out.append(s)
        elif type(s) in (list, tuple) or _function._is_namedtuple(s):
            for v in s:
                walk(v)
        elif type(s) is dict:
            for v in s.values():
                walk(v)

    walk(fn._saved_outputs)
    return out


def _signature_entry(saver, key, fn, record):
    structure = fn._out_structure
    flat_specs = iter(_flat_output_specs(fn))

    def one(v):
        """An output's spec: a TensorSpec, or a composite's components
        (TF's signatures return RaggedTensors and SparseTensors whole)."""
        if v is _function._LEAF:
            return next(flat_specs)
        return type(v)(*[one(x) if x is _function._LEAF else x for x in v])

    def is_output(v):
        return v is _function._LEAF or (
            isinstance(v, _Components) and all(
                x is _function._LEAF or isinstance(x, tuple) for x in v))

    if type(structure) is dict and all(
            is_output(v) for v in structure.values()):
        out_names = [str(k) for k in structure]   # packing order
        values = list(structure.values())
    elif is_output(structure):
        out_names, values = ["output_0"], [structure]
    elif structure is None:
        out_names, values = [], []
    elif type(structure) in (list, tuple) and all(
            is_output(v) for v in structure):
        out_names = [f"output_{i}" for i in range(len(structure))]
        values = list(structure)
    else:
        raise ValueError(
            f"tf.saved_model.save: signature {key!r} must return a tensor "
            f"or composite tensor, a flat list/tuple of them or a flat "
            f"dict of them; got "
            f"{_function._type_text(fn.structured_outputs)}")
    specs = [one(v) for v in values]
    graph_names = fn.graph._graph.input_names
    in_specs = fn._leaf_specs
    in_names = [s.name or n for s, n in zip(in_specs, graph_names)]
    if len(set(in_names)) != len(in_names):
        raise ValueError(f"tf.saved_model.save: signature {key!r} has "
                         f"repeated input names {in_names}")
    return {"record": saver.record(key, fn) if record else None,
            "inputs": [[n, _structure.encode(s)] for n, s in
                       zip(in_names, in_specs)],
            "outputs": [[n, _structure.encode(s)] for n, s in
                        zip(out_names, specs)]}


def _check_options(options, kind, fn):
    if options is not None and not isinstance(options, kind):
        raise TypeError(f"tf.saved_model.{fn}: options must be a "
                        f"tf.saved_model.{kind.__name__}, got "
                        f"{type(options).__name__}")


def save(obj, export_dir, signatures=None, options=None):
    """Save obj's tf.functions (those traced or with an input_signature)
    and the variables reachable from it under export_dir."""
    _check_options(options, SaveOptions, "save")
    export_dir = os.fspath(export_dir)
    saver = _Saver()
    saver.custom_gradients = options is None or \
        options.experimental_custom_gradients
    Layer, _ = _keras_types()
    root = saver.obj(obj, "", 0)
    L = _loaded()
    if isinstance(obj, Module):
        for v in obj.variables:
            saver.var(v)
    if isinstance(obj, L._UserObject):
        for v in obj.__dict__.get("variables", ()):
            if isinstance(v, Variable):
                saver.var(v)
    if signatures is None:
        if isinstance(obj, L._UserObject):
            # A loaded object keeps its signatures, as in TF.
            signatures = dict(obj.__dict__.get("signatures") or {})
        elif isinstance(obj, Layer):
            call = root["attrs"].get("__call__")
            if call is not None:
                signatures = {"serving_default": saver.functions[
                    call["fn"]]["concretes"][0]["record"]}
        else:
            found = [getattr(obj, n) for n in _attribute_names(obj)]
            # TF's rule: the one tf.function with an input_signature
            # that returns something (one with no outputs cannot be a
            # signature, as mutate(v) in TF's saved_model guide).
            found = [f for f in found if isinstance(f, Function) and
                     f.input_signature is not None and
                     f.get_concrete_function().outputs]
            if len(found) == 1:
                signatures = found[0]
    if signatures is not None and not isinstance(signatures, dict):
        signatures = {"serving_default": signatures}
    sigs = {}
    for key, fn in (signatures or {}).items():
        if not isinstance(key, str):
            raise ValueError(f"tf.saved_model.save: signature keys must be "
                             f"strings, got {key!r}")
        if isinstance(fn, int):          # a Keras call saved above
            fn = saver.records[fn][1]
        sigs[key] = _signature(saver, key, fn)
    meta = {"format": _FORMAT, "root": root, "functions": saver.functions,
            "signatures": sigs}
    names = [getattr(v, "name", f"variable_{i}")
             for i, v in enumerate(saver.variables)]
    try:
        os.makedirs(export_dir, exist_ok=True)
    except OSError as e:
        # As the C writer reports its file errors: a tf.errors type.
        raise errors.NotFoundError(
            None, None, f"tf.saved_model.save: cannot make the directory "
            f"{export_dir}: {e.strerror}") from None
    _C.saved_model_save(export_dir, json.dumps(meta).encode(),
                        list(zip(names, saver.variables)),
                        [(n, c) for n, c in saver.records])
