"""tf.saved_model.load: rebuild an object from a saved model's functions
and variables (see save.py for the meta blob). Nothing here imports or
runs code named by the file: the graphs come back through the C reader,
the structures through JSON (_structure.py), so the Python source of the
saved class is not needed."""
import inspect
import importlib
import json
import os
import weakref

import numpy as np

from .. import _C
from ..errors import DataLossError
from ..composite_tensor import CompositeTensor
from ..function import ConcreteFunction, FuncGraph, TensorSpec
from ..function_structures import _Components, _components_of
from ..variables import Variable
from . import _structure

# The module (tfmini.function, the package's attribute, is tf.function).
_function = importlib.import_module("..function", __package__)
from .save import _FORMAT


class _UserObject:
    """A loaded object: its saved attributes, functions and variables."""

    def __repr__(self):
        return f"<{type(self).__module__}._UserObject object at " \
               f"{id(self):#x}>"


def _callable_class():
    def __call__(self, *args, **kwargs):
        return self.__dict__["__call__"](*args, **kwargs)

    return type("_UserObject", (_UserObject,), {"__call__": __call__})


def _binder(name, params):
    """A _Binder for a saved parameter list (the function itself is not
    saved: a stub with the same signature stands in)."""
    P = inspect.Parameter
    out = []
    for row in params:
        if not (isinstance(row, list) and 2 <= len(row) <= 3 and
                isinstance(row[0], str) and row[0].isidentifier() and
                row[1] in (0, 1, 2, 3, 4)):
            raise _structure.StructureError("bad parameter list")
        kw = {"default": _structure.decode(row[2])} if len(row) == 3 else {}
        out.append(P(row[0], inspect._ParameterKind(row[1]), **kw))
    try:
        sig = inspect.Signature(out)
    except ValueError as e:
        raise _structure.StructureError(f"bad parameter list: {e}") from None

    def stub(*args, **kwargs):
        raise RuntimeError("a loaded function has no Python body")

    stub.__signature__ = sig
    stub.__name__ = name
    return _function._Binder(stub, False)


def _not_in_trace(what):
    """A loaded function called while another tf.function traces: its
    graph is not traced into the caller's, so running it would bake one
    trace-time result (and variable value) into the caller. Refused."""
    if _C.tracing():
        raise NotImplementedError(
            f"{what}, loaded from a SavedModel, cannot be called inside "
            f"another tf.function in tfmini (its graph is not inlined into "
            f"the caller's trace). Call it outside tf.function; a loaded "
            f"object placed as an attribute of a new tf.Module saves with "
            f"it as it is")


class _LoadedConcreteFunction(ConcreteFunction):
    """One saved trace: called like the ConcreteFunction it was."""

    def __init__(self, name, binder, canonical_specs, structured_outputs,
                 graph):
        _C.ConcreteBase.__init__(self)
        self._function_name = name
        self._binder = binder
        self._canonical_specs = canonical_specs
        self._leaf_specs = [_function._leaf_spec(x) for x in
                            _function._flatten_leaves(canonical_specs, [])]
        self._relaxed_key = None
        self._keys = set()
        self.graph = FuncGraph(graph, [], [])
        self.inputs = []
        self.outputs = []
        self.structured_outputs = structured_outputs
        self._saved_ranks = None

    def __call__(self, *args, **kwargs):
        _not_in_trace(f"ConcreteFunction '{self._function_name}'")
        return super().__call__(*args, **kwargs)


def _convert(x, spec):
    """x as a tensor matching spec, or None."""
    from ..ops.constant_op import convert_to_tensor
    if isinstance(x, Variable):
        x = x.read_value() if hasattr(x, "read_value") else x._read()
    if not isinstance(x, _function.Tensor):
        if not isinstance(x, (bool, int, float, list, tuple, np.ndarray,
                              np.generic)):
            return None
        try:
            x = convert_to_tensor(x, dtype_hint=spec.dtype)
        except (TypeError, ValueError):
            return None
    return x if spec.is_compatible_with(x) else None


def _match(x, spec, flat):
    """Append x's tensors to flat if x fits the saved spec structure."""
    if isinstance(spec, TensorSpec):
        if flat is None and isinstance(x, TensorSpec):
            # get_concrete_function(TensorSpec(...)): a saved trace that
            # takes every tensor of that spec.
            return x.dtype == spec.dtype and spec.is_compatible_with(x)
        t = _convert(x, spec)
        if t is None:
            return False
        if flat is not None:
            flat.append(t)
        return True
    t = type(spec)
    if isinstance(spec, _Components):
        # A composite argument: its components against the saved ones.
        if isinstance(x, CompositeTensor) and \
                isinstance(x, spec.value_type):
            x = _components_of(x)
        elif type(x) is not type(spec):     # bound already: components
            return False
        return len(x) == len(spec) and \
            all(_match(a, s, flat) for a, s in zip(x, spec))
    if t is list or t is tuple or _function._is_namedtuple(spec):
        return isinstance(x, (list, tuple)) and len(x) == len(spec) and \
            all(_match(a, s, flat) for a, s in zip(x, spec))
    if t is dict:
        if not isinstance(x, dict) or set(x) != set(spec):
            return False
        return all(_match(x[k], spec[k], flat)
                   for k in _function._sorted_keys(spec))
    if isinstance(x, (_function.Tensor, np.ndarray, np.generic)):
        return False
    return _structure.same_value(x, spec)


def _describe_call(args, kwargs):
    lines = [f"  Positional arguments ({len(args)} total):"]
    lines += [f"    * {a!r}" for a in args]
    lines.append(f"  Keyword arguments: {kwargs!r}")
    return "\n".join(lines)


class RestoredFunction:
    """A loaded tf.function: calls the saved trace that fits its
    arguments (it cannot trace new ones: the Python body is not saved)."""

    def __init__(self, name, binder, concretes):
        self._name = name
        self._binder = binder
        self.concrete_functions = concretes

    @property
    def name(self):
        return self._name

    def _find(self, args, kwargs, specs=False):
        """The saved trace args fit and its flat tensors; with specs=True
        (get_concrete_function) args may be TensorSpecs, and no tensors
        are made."""
        try:
            canonical = self._binder.canonicalize(args, kwargs)
        except TypeError:
            return None, None
        for c in self.concrete_functions:
            flat = None if specs else []
            if len(canonical) == len(c._canonical_specs) and all(
                    _match(a, s, flat) for a, s in
                    zip(canonical, c._canonical_specs)):
                return c, flat
        return None, None

    def __call__(self, *args, **kwargs):
        _not_in_trace(f"tf.function '{self._name}'")
        c, flat = self._find(args, kwargs)
        if c is not None:
            return c._run(flat)
        self._check_rank(args, kwargs)
        options = []
        for i, c in enumerate(self.concrete_functions, 1):
            a, k = c.structured_input_signature
            options.append(f"Option {i}:\n{_describe_call(a, k)}")
        raise ValueError(
            f"Could not find matching concrete function to call loaded "
            f"from the SavedModel. Got:\n{_describe_call(args, kwargs)}\n\n"
            f" Expected these arguments to match one of the following "
            f"{len(options)} option(s):\n\n" + "\n\n".join(options))

    def _check_rank(self, args, kwargs):
        """A call of a function saved with unknown-rank inputs whose
        rank has no saved graph: say so (Note [Unknown rank] in
        tfmini/function_unknown_rank.py)."""
        saved = sorted({tuple(c._saved_ranks) for c in
                        self.concrete_functions
                        if c._saved_ranks is not None})
        if not saved:
            return
        try:
            canonical = self._binder.canonicalize(args, kwargs)
        except TypeError:
            return
        ranks = [np.ndim(x) for x in _function._flatten_leaves(
            canonical, [])]
        raise ValueError(
            f"tf.function '{self._name}' (loaded) was saved with "
            f"unknown-rank inputs; tfmini saves one graph per rank, and "
            f"this one has graphs for ranks {[list(r) for r in saved]} of "
            f"those inputs, not for this call (its tensor arguments have "
            f"ranks {ranks}). Call the function with this rank before "
            f"saving it to keep that rank too.")

    def get_concrete_function(self, *args, **kwargs):
        if not args and not kwargs and len(self.concrete_functions) == 1:
            return self.concrete_functions[0]
        c, _ = self._find(args, kwargs, specs=True)
        if c is None:
            raise ValueError(f"tf.function '{self._name}' (loaded) has no "
                             f"saved trace for these arguments")
        return c

    def __repr__(self):
        return f"<RestoredFunction {self._name} at {id(self):#x}>"


class SignatureFunction(_C.ConcreteBase):
    """A serving signature: keyword tensor inputs, a dict of outputs."""

    def __init__(self, name, inputs, outputs, graph):
        super().__init__()
        self.name = name
        self._inputs = inputs           # [(name, TensorSpec)]
        self._outputs = outputs
        self.graph = FuncGraph(graph, [], [])
        # An unknown-rank signature's graphs, one per rank (Note [Unknown
        # rank] in tfmini/function_unknown_rank.py); None otherwise.
        self._by_rank = None

    def _runner(self, tensors):
        if self._by_rank is None:
            return self
        for sig in self._by_rank:
            if all(s.is_compatible_with(t)
                   for (_, s), t in zip(sig._inputs, tensors)):
                return sig
        raise ValueError(
            f"signature {self.name!r} was saved with unknown-rank inputs; "
            f"tfmini saves one graph per rank, and this one has graphs for "
            f"inputs of ranks "
            f"{[[s.shape.rank for _, s in g._inputs] for g in self._by_rank]}"
            f", not {[t.shape.rank for t in tensors]}")

    @property
    def structured_input_signature(self):
        return (), {n: s for n, s in self._inputs}

    @property
    def structured_outputs(self):
        return {n: TensorSpec(s.shape, s.dtype, n)
                if isinstance(s, TensorSpec) else s.rebuild()
                for n, s in self._outputs}

    def __call__(self, *args, **kwargs):
        _not_in_trace(f"signature {self.name!r}")
        names = [n for n, _ in self._inputs]
        if len(args) > len(names):
            raise TypeError(f"signature {self.name!r} takes {len(names)} "
                            f"inputs ({names}), got {len(args)} positional")
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in given:
                raise TypeError(f"signature {self.name!r}: unexpected or "
                                f"repeated input {k!r} (inputs: {names})")
            given[k] = v
        missing = [n for n in names if n not in given]
        if missing:
            raise TypeError(f"signature {self.name!r}: missing inputs "
                            f"{missing}")
        tensors = []
        for n, spec in self._inputs:
            t = _convert(given[n], spec)
            if t is None:
                raise ValueError(f"signature {self.name!r}: input {n!r} "
                                 f"must match {spec}, got {given[n]!r}")
            tensors.append(t)
        outs = list(self._runner(tensors)._run(tensors))
        result, k = {}, 0
        for n, spec in self._outputs:
            if isinstance(spec, TensorSpec):
                result[n] = outs[k]
            else:           # a composite: rebuilt from its components
                result[n] = _function._pack_outputs(
                    _function._map_leaves(lambda _: _function._LEAF, spec),
                    outs[k:k + _slots(spec)])
            k += _slots(spec)
        return result

    def __repr__(self):
        ins = ", ".join(f"{n}: {s!r}" for n, s in self._inputs)
        outs = ", ".join(f"[{n!r}, {s!r}]" for n, s in
                         self.structured_outputs.items())
        return f"<ConcreteFunction (*, {ins}) -> Dict[{outs}] at " \
               f"{id(self):#X}>"


def _spec_list(rows, what, any_rank=False):
    if not isinstance(rows, list) or not all(
            isinstance(r, list) and len(r) == 2 and isinstance(r[0], str)
            for r in rows):
        raise _structure.StructureError(f"bad {what} list")
    out = [(n, _structure.decode(s)) for n, s in rows]

    def ok(s):
        return isinstance(s, TensorSpec) and (any_rank or
                                              s._dims is not None)

    # An output may be a composite's components (a ragged or sparse
    # result); the inputs are always flat, as TF's signatures.
    if not all(ok(s) or (what == "output" and isinstance(s, _Components)
                         and all(ok(x) or isinstance(x, tuple) for x in s))
               for _, s in out):
        raise _structure.StructureError(f"bad {what} spec")
    return out


def _slots(spec):
    return 1 if isinstance(spec, TensorSpec) else \
        len(_function._flatten_leaves(spec, []))


def _strip_output(x, nout):
    """The packing structure of a saved output structure (output slots
    for its specs), which must have a slot per graph output."""
    s = _function._map_leaves(lambda _: _function._LEAF, x)
    if _count_slots(s) != nout:
        raise _structure.StructureError(
            f"an output structure for {nout} outputs has "
            f"{_count_slots(s)}")
    return s


def _count_slots(s):
    """The outputs _function._pack_outputs takes for s."""
    if s is _function._LEAF:
        return 1
    if type(s) in (list, tuple) or _function._is_namedtuple(s):
        return sum(_count_slots(v) for v in s)
    if type(s) is dict:
        return sum(_count_slots(v) for v in s.values())
    return 0


class _SavedCustomGradientRun(_function._CustomGradientRun):
    """A loaded trace's run under a tape, whose gradient is the saved
    gradient graph (Note [Saved custom gradients] in save.py) rather
    than a new trace of a Python body that was not saved."""

    def __init__(self, concrete, grad, variables, wrt):
        self._concrete = weakref.ref(concrete)
        self._grad = (lambda leaves, dys: grad._run(list(leaves) +
                                                    list(dys)),
                      variables, wrt)
        # Kept for a re-save (save.py's _Saver.custom_gradient).
        self.saved = (grad, variables, wrt)


def _custom_gradient(cf, gcf, entry, variables):
    """Loaded trace cf differentiates through its saved gradient gcf:
    inputs cf's leaves and one gradient per differentiable output,
    outputs the gradients of the leaves in wrt, then of the variables."""
    wrt, vs = entry["wrt"], entry["variables"]
    n = len(cf._leaf_specs)
    if not (isinstance(wrt, list) and isinstance(vs, list) and
            all(type(k) is int and 0 <= k < n for k in wrt) and
            all(type(k) is int and 0 <= k < len(variables) for k in vs) and
            len(gcf._leaf_specs) > n and
            isinstance(gcf.structured_outputs, list) and
            len(gcf.structured_outputs) == len(wrt) + len(vs)):
        raise _structure.StructureError("bad custom gradient")
    cf._run = _SavedCustomGradientRun(cf, gcf, [variables[k] for k in vs],
                                      wrt)


def _build(meta, var_rows, fn_rows, handle):
    nrec = len(fn_rows)
    variables = []
    for name, trainable, value, shape in var_rows:
        base = name[:-2] if name.endswith(":0") else name
        variables.append(Variable(value, trainable=trainable, name=base,
                                  shape=shape))
    adopt = []
    used = set()

    def record(i, what):
        if type(i) is not int or not 0 <= i < nrec:
            raise _structure.StructureError(f"{what} names no function")
        return i

    def concrete(c, what, name=None, binder=None):
        """The _LoadedConcreteFunction of meta entry c, adopted."""
        i = record(c["record"], what)
        if i in used:
            raise _structure.StructureError("a function record used "
                                            "twice")
        used.add(i)
        inputs = _structure.decode(c["inputs"])
        outputs = _structure.decode(c["outputs"])
        kind = c["kind"]
        if not isinstance(inputs, list) or type(kind) is not int or \
                not _function.OUT_NONE <= kind <= _function.OUT_GENERIC:
            raise _structure.StructureError("bad concrete function")
        if binder is None:      # a gradient: called with its flat inputs
            name = fn_rows[i][0]
            binder = _binder(name, [[f"arg_{k}", 1]
                                    for k in range(len(inputs))])
        cf = _LoadedConcreteFunction(name, binder, inputs, outputs,
                                     fn_rows[i][1])
        packing = _strip_output(outputs, len(fn_rows[i][2]))
        # What save.py writes again when this object is re-saved.
        cf._out_kind, cf._out_structure = kind, packing
        cf._saved_outputs = outputs
        adopt.append((i, cf, kind, packing))
        return cf

    functions = {}
    for key, entry in meta.get("functions", {}).items():
        name = entry["name"]
        if not isinstance(name, str):
            raise _structure.StructureError("bad function name")
        binder = _binder(name, entry["params"])
        concretes = []
        for c in entry["concretes"]:
            cf = concrete(c, f"function {key!r}", name, binder)
            ranks = c.get("ranks")
            if ranks is not None:
                if not (isinstance(ranks, list) and all(
                        type(r) is int and r >= 0 for r in ranks)):
                    raise _structure.StructureError("bad ranks")
                cf._saved_ranks = ranks
            if c.get("gradient") is not None:
                gcf = concrete(c["gradient"], f"the gradient of {key!r}")
                _custom_gradient(cf, gcf, c["gradient"], variables)
            concretes.append(cf)
        functions[key] = RestoredFunction(name, binder, concretes)
    def signature(key, s):
        i = record(s["record"], f"signature {key!r}")
        if i in used:
            raise _structure.StructureError("a function record used twice")
        used.add(i)
        sig = SignatureFunction(key, _spec_list(s["inputs"], "input"),
                                _spec_list(s["outputs"], "output"),
                                fn_rows[i][1])
        if len(sig._inputs) != len(fn_rows[i][1].input_names) or \
                sum(_slots(o) for _, o in sig._outputs) != \
                len(fn_rows[i][2]):
            raise _structure.StructureError(f"signature {key!r} does not "
                                            f"fit its function")
        adopt.append((i, sig, _function.OUT_LIST, None))
        return sig

    def any_signature(key, s):
        ranks = s.get("ranks")
        if ranks is None:
            return signature(key, s)
        # Unknown-rank specs shown, one saved signature per rank run.
        if not isinstance(ranks, list) or not ranks:
            raise _structure.StructureError(f"bad ranks of {key!r}")
        by_rank = [signature(key, r) for r in ranks]
        sig = SignatureFunction(
            key, _spec_list(s["inputs"], "input", True),
            _spec_list(s["outputs"], "output", True),
            by_rank[0].graph._graph)
        if any(len(g._inputs) != len(sig._inputs) or
               len(g._outputs) != len(sig._outputs) for g in by_rank):
            raise _structure.StructureError(f"signature {key!r} does not "
                                            f"fit its functions")
        sig._by_rank = by_rank
        return sig

    signatures = {key: any_signature(key, s)
                  for key, s in meta.get("signatures", {}).items()}
    # Signatures kept as attributes (a loaded model inside a re-saved
    # one): adopted with the rest.
    attr_sigs = {}

    def find_sigs(v, depth):
        if depth > 64 or not isinstance(v, dict) or len(v) != 1:
            raise _structure.StructureError("bad object tree")
        (tag, x), = v.items()
        if tag == "sig":
            if not (isinstance(x, list) and len(x) == 2 and
                    isinstance(x[0], str)):
                raise _structure.StructureError("bad signature attribute")
            attr_sigs[id(v)] = any_signature(x[0], x[1])
        elif tag == "obj":
            for a in x.get("attrs", {}).values():
                find_sigs(a, depth + 1)
        elif tag in ("list", "tuple"):
            for a in x:
                if a is not None:
                    find_sigs(a, depth + 1)
        elif tag == "dict":
            for _, a in x:
                find_sigs(a, depth + 1)

    find_sigs({"obj": meta.get("root", {})}, 0)
    _C.saved_model_adopt(handle, variables, adopt)
    for _, cf, _, _ in adopt:
        if isinstance(cf.__dict__.get("_run"), _SavedCustomGradientRun):
            cf._set_taped_in_python()     # a call under a tape: its _run

    def build_value(v, depth):
        if depth > 64 or not isinstance(v, dict) or len(v) != 1:
            raise _structure.StructureError("bad object tree")
        (tag, x), = v.items()
        if tag == "var":
            if type(x) is not int or not 0 <= x < len(variables):
                raise _structure.StructureError("bad variable index")
            return variables[x]
        if tag == "fn":
            if x not in functions:
                raise _structure.StructureError("bad function key")
            return functions[x]
        if tag == "obj":
            return build_obj(x, depth + 1)
        if tag == "sig":
            return attr_sigs[id(v)]
        if tag in ("list", "tuple"):
            items = [None if i is None else build_value(i, depth + 1)
                     for i in x]
            return items if tag == "list" else tuple(items)
        if tag == "dict":
            return {k: build_value(i, depth + 1) for k, i in x}
        raise _structure.StructureError(f"bad object tree tag {tag!r}")

    def build_obj(node, depth):
        attrs = {k: build_value(v, depth) for k, v in
                 node.get("attrs", {}).items()}
        obj = (_callable_class() if "__call__" in attrs else _UserObject)()
        obj.__dict__.update(attrs)
        return obj

    root = build_obj(meta.get("root", {}), 0)
    root.signatures = signatures
    added = ["signatures"]
    for k, v in (("variables", variables),
                 ("trainable_variables",
                  [v for v in variables if v.trainable]),
                 ("non_trainable_variables",
                  [v for v in variables if not v.trainable])):
        if k not in root.__dict__:
            setattr(root, k, v)
            added.append(k)
    # Not the saved object's own attributes: a re-save leaves them out.
    root._tfm_added = tuple(added)
    return root


def _build_plain(var_rows, fn_rows, handle):
    """A model a C program saved (no meta): each function as a signature
    whose inputs are its placeholders, outputs output_0, output_1, ..."""
    variables = [Variable(value, trainable=t, name=n.split(":")[0],
                          shape=s) for n, t, value, s in var_rows]
    root = _UserObject()
    sigs, adopt = {}, []
    for i, (name, graph, _) in enumerate(fn_rows):
        ops = {op[0]: op for op in graph.ops()}
        ins = []
        for n in graph.input_names:
            dt, dims = ops[n][3][0]
            ins.append((n, TensorSpec(dims, _function._dtypes.from_enum(dt),
                                      n)))
        outs = [(f"output_{k}", TensorSpec(
            dims, _function._dtypes.from_enum(dt), f"output_{k}"))
            for k, (dt, dims) in enumerate(fn_rows[i][2])]
        sig = SignatureFunction(name, ins, outs, graph)
        adopt.append((i, sig, _function.OUT_LIST, None))
        sigs[name] = sig
        # (Not "__class__" and the like: a name is data, not an order
        # to replace the object's machinery.)
        if name.isidentifier() and not name.startswith("__"):
            setattr(root, name, sig)
    _C.saved_model_adopt(handle, variables, adopt)
    root.signatures = sigs
    root.variables = variables
    root.trainable_variables = [v for v in variables if v.trainable]
    root._tfm_added = ("signatures", "variables", "trainable_variables")
    return root


def load(export_dir, tags=None, options=None):
    """Load what tf.saved_model.save wrote under export_dir."""
    from .options import LoadOptions
    from .save import _check_options
    _check_options(options, LoadOptions, "load")
    export_dir = os.fspath(export_dir)
    if not os.path.isfile(os.path.join(export_dir, "saved_model.tfm")):
        raise OSError(f"SavedModel file does not exist at: "
                      f"{os.path.join(export_dir, 'saved_model.tfm')}")
    meta, var_rows, fn_rows, handle = _C.saved_model_load(export_dir)
    try:
        if meta is None:
            return _build_plain(var_rows, fn_rows, handle)
        meta = json.loads(meta.decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise _structure.StructureError(
                f"format {meta.get('format')!r} is not {_FORMAT}"
                if isinstance(meta, dict) else "not an object")
        return _build(meta, var_rows, fn_rows, handle)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError,
            OverflowError, RecursionError) as e:
        # Only plain data comes from the meta blob: anything that does not
        # fit what save.py writes is a corrupt (or hostile) file.
        raise DataLossError(f"saved model {export_dir}: its Python "
                            f"structure is corrupt: {e}") from None
