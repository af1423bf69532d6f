"""tf.function: trace Python into a C graph, cache it by signature, run it
from C.

The call of a Function is C (csrc/python/function_cache.c, Note [The call
path]): on a cache hit no Python code runs. This module is the slow path:
binding arguments, tracing, the retracing rules, input signatures and
the printable signatures. TensorSpec (tensor_spec.py), the trace frames
and tf.init_scope (trace_frames.py), how arguments and results are
walked (function_structures.py) and tf.print (ops/logging_ops.py) live
in their own modules; their names stay importable from here."""
import collections
import functools
import inspect
import logging
import threading
import os
import sys
import threading
import weakref

import numpy as np

from . import _C
from . import dtypes as _dtypes
from ._tensor import Tensor
from .errors import InvalidArgumentError
from .tensor_spec import TensorSpec
from .trace_frames import (  # noqa: F401  (re-exported for other modules)
    _TraceFrame, _frames, _lift_to_eager, _suspend_tapes, _symbolic_name,
    _tracing, _variable_creation_scope, init_scope)
from .ops.logging_ops import _print, _stream_id, print  # noqa: F401,A004
from .function_structures import (  # noqa: F401  (saved_model uses them)
    OUT_GENERIC, OUT_LIST, OUT_NONE, OUT_SINGLE, OUT_TUPLE, _LEAF,
    _ObjectArg, _Packer, _describe, _desc_text, _diff, _flatten_leaves,
    _forget_objects, _in_flat_order, _is_leaf, _is_namedtuple,
    _leaf_names, _leaf_spec, _map_leaves, _pack_outputs, _prepare_outputs,
    _sorted_keys, _expand_composites, _rebuild_composites, _weak_outputs)
from .composite_tensor import CompositeTensor, TypeSpec
from .function_structures import _Components
from .extension_type import static_mismatch

# TF's top-level names (tfmini/__init__.py star-imports them). Function,
# ConcreteFunction and FunctionSignatureError stay in this module, as in
# TF, where they are not in the tf namespace either.
__all__ = ["function", "TensorSpec", "init_scope", "print"]

_logger = logging.getLogger("tfmini")

# AutoGraph (issue 6) sets this to a converter: f -> f' with Python
# control flow on tensors rewritten into graph ops. Function applies it
# to the Python function before its first trace when autograph=True.
_autograph_converter = None

# Alias keys (an exact call signature served by a more general trace) kept
# per function: bounds the cache when shapes vary without end.
_MAX_ALIASES = 256
# Traces kept per function, the least recently called dropped first (a
# serving loop over ever new shapes would otherwise keep every graph and
# plan it traced). TF keeps all and only warns; 128 is far above what a
# function that does not retrace without end uses. The arenas of plans
# not run recently are released separately (Note [Arena budget] in
# csrc/graph/exec.c).
_MAX_TRACES = 128
_RETRACE_WINDOW = 10
_RETRACE_THRESHOLD = 5
_MAX_RETRACE_WARNINGS = 2

# Called with each new ConcreteFunction (tf.summary.trace_on collects the
# graphs traced while it is on).
_trace_listeners = []


def _weak_like(placeholder, leaf):
    """The placeholder, weak when the argument was (Note [One weak flag]:
    the C key already tells weak from strong, so the trace must too)."""
    if getattr(leaf, "_weak", False):
        from .experimental.numpy import weak_tensor
        weak_tensor.mark(placeholder)
    return placeholder


class FunctionSignatureError(TypeError, ValueError):
    """Arguments that do not match a tf.function's input_signature (or a
    ConcreteFunction's inputs). TF raises TypeError ("Binding inputs to
    tf.function failed ...") where older versions raised ValueError: this
    class is both."""


class ConcreteInputError(InvalidArgumentError, FunctionSignatureError):
    """A tensor of the wrong dtype or shape given to a ConcreteFunction.
    TF raises InvalidArgumentError for a wrong dtype ("cannot compute
    ... as input #0(zero-based) was expected to be a float tensor");
    calls that fail to bind raise TypeError: this class is both."""


# ---- concrete functions --------------------------------------------------

class Operation:
    """A node of a traced graph, for inspection."""

    __slots__ = ("name", "type", "inputs", "outputs", "control_inputs",
                 "site", "program")

    def __init__(self, row):
        # program: a fused node's instructions as text (None otherwise).
        (self.name, self.type, self.inputs, outs, self.control_inputs,
         self.site, self.program) = row
        self.outputs = [TensorSpec(dims, _dtypes.from_enum(dt))
                        for dt, dims in outs]

    def __repr__(self):
        return f"<Operation '{self.name}' type={self.type}>"


class FuncGraph:
    """The graph of one trace (inspection only; the graph itself is C)."""

    def __init__(self, graph, inputs, outputs):
        self._graph = graph
        self.inputs = inputs
        self.outputs = outputs

    @property
    def name(self):
        return self._graph.name

    def get_operations(self):
        return [Operation(r) for r in self._graph.ops()]

    def as_graph_def(self, from_version=None, add_shapes=False):
        """The nodes as a GraphDef look-alike (see tfmini/graph_def.py):
        `.node` with each node's name, op and inputs."""
        from .graph_def import graph_def
        return graph_def(self.get_operations(),
                         [o.name for o in self.outputs])

    def as_text(self):
        """One line per node: name = Op(inputs) -> outputs, with control
        inputs after ^ and the user's line after #."""
        lines = [f"graph '{self.name}' ({len(self._graph.ops())} nodes)"]
        for op in self.get_operations():
            outs = ", ".join(f"{o.dtype.name}{list(o.shape)}"
                             for o in op.outputs) or "()"
            text = f"  {op.name} = {op.type}({', '.join(op.inputs)}) -> {outs}"
            if op.control_inputs:
                text += "  " + " ".join("^" + c for c in op.control_inputs)
            if op.site:
                text += f"  # {op.site}"
            lines.append(text)
            if op.program:
                lines.append("      { " + op.program + " }")
        return "\n".join(lines)

    def __repr__(self):
        return f"<FuncGraph '{self.name}'>"


class ConcreteFunction(_C.ConcreteBase):
    """One trace of a tf.function: a compiled graph with fixed input
    dtypes and shapes. Call it with tensors (the tensor arguments of the
    original call, or all arguments as the Function took them)."""

    def __init__(self, function, graph, inputs, outputs, kind, structure,
                 canonical_specs, structured_outputs):
        super().__init__()
        packing = _Packer.compile(structure) if kind == OUT_GENERIC \
            else structure
        weak = [i for i, t in enumerate(outputs)
                if getattr(t, "_weak", False)]
        if weak:
            # A weak result stays weak outside the trace, as in TF:
            # the call packs through a _Packer that marks them.
            packing = _weak_outputs(packing, kind, weak)
        self._build(graph, outputs, OUT_GENERIC if weak else kind,
                    packing)
        # How the flat outputs pack (tf.saved_model.save writes them).
        self._out_kind = kind
        self._out_structure = _in_flat_order(structure)
        self._structure_raw = structure
        self._function_name = function._name
        self._binder = function._binder
        self._canonical_specs = canonical_specs
        self._leaf_specs = [_leaf_spec(x) for x in
                            _flatten_leaves(canonical_specs, [])]
        self._relaxed_key = None
        self._keys = set()
        self.graph = FuncGraph(graph, inputs, outputs)
        self.inputs = inputs
        self.outputs = outputs
        self.structured_outputs = structured_outputs

    @property
    def name(self):
        return self._function_name

    @property
    def optimized_graph(self):
        """The graph the cached call runs: self.graph after the graph
        passes (tf.config.optimizer). Compare their as_text() to see what
        the optimizer did."""
        return FuncGraph(self._optimized_graph, self.inputs, self.outputs)

    @property
    def structured_input_signature(self):
        args, kwargs = self._binder.split(self._canonical_specs)
        return tuple(args), kwargs

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == len(self._leaf_specs) and \
                all(_is_leaf(a) for a in args):
            flat = list(args)
        else:
            try:
                canonical = self._binder.canonicalize(args, kwargs)
            except TypeError as e:
                raise FunctionSignatureError(
                    f"Binding inputs to ConcreteFunction "
                    f"{self._short_name()} failed: {e}") from None
            flat = _flatten_leaves(canonical, [])
            bad = static_mismatch(canonical, self._canonical_specs) or \
                next((r for r in map(_value_mismatch, canonical,
                                     self._canonical_specs,
                                     map(repr, self._binder.names))
                      if r is not None), None)
            if bad is not None:         # Python values the trace baked in
                raise FunctionSignatureError(
                    f"Binding inputs to ConcreteFunction "
                    f"{self._short_name()} failed: {bad}")
            if len(flat) != len(self._leaf_specs):
                raise FunctionSignatureError(
                    f"ConcreteFunction {self._short_name()} takes {len(self._leaf_specs)} tensors, got "
                    f"{len(flat)}")
        from .ops.constant_op import convert_to_tensor
        tensors = []
        for i, (x, spec) in enumerate(zip(flat, self._leaf_specs)):
            t = x if isinstance(x, Tensor) else convert_to_tensor(
                x, dtype_hint=spec.dtype)
            if not spec.is_compatible_with(t):
                raise ConcreteInputError(
                    None, None,
                    f"ConcreteFunction {self._short_name()}: input {i} "
                    f"must be compatible with {spec}, got {t.dtype.name} "
                    f"tensor of shape {t.shape}")
            tensors.append(t)
        return self._run(tensors)

    def _short_name(self):
        return f"{self._function_name}({', '.join(self._binder.names)})"

    def pretty_printed_signature(self, verbose=True):
        """TF's text for this trace: a parameter block (verbose) or one
        line `(x: TensorSpec(...)) -> TensorSpec(...)`."""
        params = self._binder.parameter_types(self._canonical_specs)
        out = _type_text(self.structured_outputs)
        if not verbose:
            return f"{_params_line(params)} -> {out}"
        lines = ["Input Parameters:"]
        lines += [f"  {name} ({kind}): {text}" for name, kind, text in params]
        # Captured variables and tensors are constants of the graph here,
        # not inputs, so there is nothing to list.
        lines += ["Output Type:", f"  {out}", "Captures:", "  None"]
        return "\n".join(lines)

    @property
    def function_type(self):
        """TF's FunctionType of this trace: str() is the one-line
        signature, repr() the parameter block."""
        return _FunctionType(self.pretty_printed_signature(False),
                             self.pretty_printed_signature())

    @property
    def inference_fn(self):
        """TF's AtomicFunction: the graph called on its flat inputs,
        returning its flat outputs."""
        return _AtomicFunction(self)

    def __str__(self):
        return "ConcreteFunction " + self.pretty_printed_signature()

    def __repr__(self):
        return (f"<ConcreteFunction {self.pretty_printed_signature(False)} "
                f"at 0x{id(self):X}>")


def _value_mismatch(given, traced, path):
    """A message if a Python value among the arguments `given` differs
    from the one the trace was made with (`traced`, its canonical specs),
    else None: a concrete function runs its one trace, so as in TF a
    different value is an error, not silently the traced one. Tensors and
    objects keyed by identity are not compared here."""
    if _is_leaf(traced) or isinstance(traced, _ObjectArg) or \
            getattr(type(traced), "_tfm_static_key", False):
        return None
    where = f"argument {path}"
    if _is_leaf(given):
        return f"{where} is a tensor; the trace has {traced!r}"
    t = type(traced)
    if t in (list, tuple) or _is_namedtuple(traced):
        if not isinstance(given, (list, tuple)) or len(given) != len(traced):
            return f"{where} is {given!r}; the trace has {traced!r}"
        for i, (g, v) in enumerate(zip(given, traced)):
            r = _value_mismatch(g, v, f"{path}[{i}]")
            if r is not None:
                return r
        return None
    if t is dict:
        if not isinstance(given, dict) or set(given) != set(traced):
            return f"{where} is {given!r}; the trace has {traced!r}"
        for k in traced:
            r = _value_mismatch(given[k], traced[k], f"{path}[{k!r}]")
            if r is not None:
                return r
        return None
    try:
        same = bool(given == traced)      # TF 2.21: 2 fits Literal[2.0]
    except Exception:               # noqa: BLE001 (an odd __eq__)
        same = False
    if not same:
        return f"{where} is {given!r}; the trace has {traced!r}"
    return None


class _FunctionType:
    __slots__ = ("_line", "_block")

    def __init__(self, line, block):
        self._line, self._block = line, block

    def __str__(self):
        return self._line

    def __repr__(self):
        return self._block


class _AtomicFunction:
    __slots__ = ("_concrete",)

    def __init__(self, concrete):
        self._concrete = concrete

    def __call__(self, *tensors):
        c = self._concrete
        if len(tensors) != len(c._leaf_specs):
            raise TypeError(
                f"AtomicFunction of {c._short_name()} takes "
                f"{len(c._leaf_specs)} tensors, got {len(tensors)}")
        from . import nest
        flat = nest.flatten(c(*tensors), expand_composites=True)
        return flat[0] if len(flat) == 1 else tuple(flat)

    @property
    def function_type(self):
        return self._concrete.function_type

    def __repr__(self):
        return (f"AtomicFunction(name=b'__inference_"
                f"{self._concrete.name}', function_type="
                f"{self._concrete.function_type!r})")


def _type_text(x):
    """A signature entry as TF 2.21 prints its TraceType."""
    if isinstance(x, TensorSpec):
        return repr(x)
    if isinstance(x, (_Components, CompositeTensor)):
        return repr(x.rebuild() if isinstance(x, _Components)
                    else x._type_spec)
    if isinstance(x, Tensor):
        return repr(TensorSpec(x._shape_tuple, x.dtype))
    if isinstance(x, (np.ndarray, np.generic)):
        return repr(_leaf_spec(x))
    if hasattr(x, "_as_tensor"):           # a Variable among the outputs
        return repr(TensorSpec.from_tensor(x))
    if isinstance(x, _ObjectArg):
        return x.text
    t = type(x)
    if t is list:
        return "List[" + ", ".join(_type_text(v) for v in x) + "]"
    if t is tuple:
        return "Tuple[" + ", ".join(_type_text(v) for v in x) + "]"
    if t is dict:
        return "Dict[" + ", ".join(f"[{k!r}, {_type_text(v)}]"
                                   for k, v in x.items()) + "]"
    if _is_namedtuple(x):
        return t.__name__ + "[" + ", ".join(
            f"[{f!r}, {_type_text(v)}]" for f, v in zip(t._fields, x)) + "]"
    return f"Literal[{x!r}]"


def _params_line(params):
    """(a: T, b: T, /, *, k: T) as inspect.Signature spells the kinds."""
    parts = []
    kinds = [k for _, k, _ in params]
    last_posonly = max((i for i, k in enumerate(kinds)
                        if k == "POSITIONAL_ONLY"), default=-1)
    star = False
    for i, (name, kind, text) in enumerate(params):
        if kind == "KEYWORD_ONLY" and not star:
            parts.append("*")
            star = True
        parts.append(f"{name}: {text}")
        if i == last_posonly:
            parts.append("/")
    return "(" + ", ".join(parts) + ")"


# ---- binding arguments ---------------------------------------------------

class _Binder:
    """A Python signature as the C key sees it: the canonical argument
    list is the positional parameters (defaults filled in), then *args as
    a tuple, keyword-only parameters, and **kwargs as a dict."""

    def __init__(self, fn, drop_first):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if drop_first:
            if not params or params[0].kind not in (
                    params[0].POSITIONAL_ONLY,
                    params[0].POSITIONAL_OR_KEYWORD):
                raise TypeError(f"cannot bind {fn!r} to an instance: it "
                                f"takes no positional parameter")
            params = params[1:]
        self.signature = sig.replace(parameters=params)
        P = inspect.Parameter
        self.positional = [p for p in params
                           if p.kind in (P.POSITIONAL_ONLY,
                                         P.POSITIONAL_OR_KEYWORD)]
        self.varargs = next((p for p in params if p.kind == P.VAR_POSITIONAL),
                            None)
        self.kwonly = [p for p in params if p.kind == P.KEYWORD_ONLY]
        self.varkw = next((p for p in params if p.kind == P.VAR_KEYWORD),
                          None)
        self.names = [p.name for p in self.positional]
        if self.varargs:
            self.names.append("*" + self.varargs.name)
        self.names += [p.name for p in self.kwonly]
        if self.varkw:
            self.names.append("**" + self.varkw.name)
        self.defaults = tuple(p.default for p in self.positional
                              if p.default is not P.empty)
        self.kwdefaults = tuple(p.default for p in self.kwonly)
        self.n_posonly = sum(p.kind == P.POSITIONAL_ONLY
                             for p in self.positional)
        self.names_c = [sys.intern(p.name) for p in self.positional] + \
            [sys.intern(p.name) for p in self.kwonly]

    def canonicalize(self, args, kwargs):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        out = [a[p.name] for p in self.positional]
        if self.varargs:
            out.append(tuple(a.get(self.varargs.name, ())))
        out += [a[p.name] for p in self.kwonly]
        if self.varkw:
            out.append(dict(a.get(self.varkw.name, {})))
        return _expand_composites(out)

    def split(self, canonical):
        """canonical -> (args, kwargs) to call the Python function."""
        n = len(self.positional)
        args = list(canonical[:n])
        i = n
        if self.varargs:
            args += list(canonical[i])
            i += 1
        kwargs = {}
        for p in self.kwonly:
            kwargs[p.name] = canonical[i]
            i += 1
        if self.varkw:
            kwargs.update(canonical[i])
        return _rebuild_composites((args, kwargs))

    def leaf_names(self, canonical):
        names = []
        for p, v in zip(self.positional, canonical):
            _leaf_names(p.name, v, names)
        i = len(self.positional)
        if self.varargs:
            for k, v in enumerate(canonical[i]):
                _leaf_names(f"{self.varargs.name}_{k}", v, names)
            i += 1
        for p in self.kwonly:
            _leaf_names(p.name, canonical[i], names)
            i += 1
        if self.varkw:
            d = canonical[i]
            for k in _sorted_keys(d):
                _leaf_names(str(k), d[k], names)
        return names

    def parameter_types(self, canonical):
        """[(name, kind, type text)] as TF lists a trace's parameters:
        *args spread into name_0, name_1, ... (which makes every
        positional parameter positional-only) and **kwargs into
        keyword-only parameters."""
        out = []
        n = len(self.positional)
        posonly = self.varargs is not None
        for i, (p, v) in enumerate(zip(self.positional, canonical)):
            kind = "POSITIONAL_ONLY" if posonly or \
                i < self.n_posonly else "POSITIONAL_OR_KEYWORD"
            out.append((p.name, kind, _type_text(v)))
        i = n
        if self.varargs:
            for k, v in enumerate(canonical[i]):
                out.append((f"{self.varargs.name}_{k}", "POSITIONAL_ONLY",
                            _type_text(v)))
            i += 1
        for p in self.kwonly:
            out.append((p.name, "KEYWORD_ONLY", _type_text(canonical[i])))
            i += 1
        if self.varkw:
            d = canonical[i]
            for k in _sorted_keys(d):
                out.append((str(k), "KEYWORD_ONLY", _type_text(d[k])))
        return out

    def describe(self, canonical):
        return [(n, _describe(v)) for n, v in zip(self.names, canonical)]


# ---- the Function --------------------------------------------------------

class Function(_C.FunctionBase):
    """What tf.function returns: a callable that traces its Python
    function once per input signature and runs the cached graph."""

    def __init__(self, python_function, name=None, input_signature=None,
                 autograph=True, jit_compile=None, reduce_retracing=False,
                 _instance=None):
        super().__init__()
        if not callable(python_function):
            raise TypeError(f"tf.function expects a callable, got "
                            f"{python_function!r}")
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__",
                                     type(python_function).__name__)
        self._input_signature = _normalize_signature(input_signature)
        self._autograph = autograph
        self._converted = None
        self._jit_compile = jit_compile
        self._reduce_retracing = bool(reduce_retracing)
        self._instance_ref = None
        self._instance_strong = None
        if _instance is not None:
            try:
                self._instance_ref = weakref.ref(_instance)
            except TypeError:
                self._instance_strong = _instance
        self._binder = b = _Binder(python_function, _instance is not None)
        self._configure(tuple(b.names_c), len(b.positional), b.n_posonly,
                        b.defaults, b.kwdefaults, inspect.Parameter.empty,
                        b.varargs is not None, b.varkw is not None)
        self._concretes = {}          # key -> ConcreteFunction (own keys)
        self._aliases = collections.OrderedDict()   # key -> concrete
        self._by_relaxed = {}         # relaxed key -> [ConcreteFunction]
        self._traces = []             # in trace order
        self._ident_watch = {}        # id(obj) -> (weakref or obj, keys)
        self._tracing_count = 0
        self._traced_ok = False
        # input_signature's trace (a RankGenericConcreteFunction when it
        # has unknown-rank specs, Note [Unknown rank])
        self._signature_concrete = None
        self._generics = []           # RankGenericConcreteFunctions
        self._history = collections.deque(maxlen=_RETRACE_WINDOW)
        self._warnings = 0
        self._slow_hits = 0
        self._last_description = None
        self._explicit_trace = False
        # As in TF, a Function traces in one thread at a time: threads
        # that miss the cache together trace once, then hit the cache.
        self._lock = threading.RLock()
        try:
            functools.update_wrapper(self, python_function)
        except (AttributeError, TypeError):
            pass

    # ---- TF's public members ----
    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        # Composite specs are kept as their components (Note [Composite
        # arguments]); the user sees the specs they gave.
        sig = self._input_signature
        return None if sig is None else _rebuild_composites(sig)

    def experimental_get_tracing_count(self):
        return self._tracing_count

    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (tensors or
        tf.TensorSpecs), tracing if there is none yet."""
        # As in TF, only calls count towards the retracing warning.
        with self._lock:
            self._explicit_trace = True
            try:
                return self._get_concrete_function(args, kwargs)
            finally:
                self._explicit_trace = False

    def _get_concrete_function(self, args, kwargs):
        if self._input_signature is not None and not args and not kwargs:
            canonical = self._binder.canonicalize(
                list(self._input_signature), {})
            return self._signature_trace(canonical)
        canonical = self._binder.canonicalize(args, kwargs)
        if self._input_signature is not None:
            canonical, _ = self._apply_signature(canonical, specs=True)
            return self._signature_trace(canonical)
        flat = _flatten_leaves(canonical, [])
        if _unknown_rank.has_unknown_rank(canonical):
            return self._find_generic(canonical, flat) or \
                self._new_generic(canonical)
        key, leaves, idents = self._key(canonical)
        concrete = self._concretes.get(key) or self._aliases.get(key)
        if concrete is None:
            concrete = self._find_compatible(canonical, flat) or \
                self._find_generic(canonical, flat)
        if concrete is None:
            specs = [_leaf_spec(x) for x in flat]
            concrete = self._trace(canonical, specs)
            self._remember(key, concrete, idents, own=True,
                           cache=all(x is not None for x in leaves))
        return concrete

    def pretty_printed_concrete_signatures(self, verbose=True):
        # TF lists an input_signature's trace even before the first call.
        if not self._traces and self._input_signature is not None:
            self.get_concrete_function()
        return "\n\n".join(c.pretty_printed_signature(verbose)
                           for c in self._traces)

    def experimental_get_compiler_ir(self, *args, **kwargs):
        raise NotImplementedError("tfmini has no XLA")

    def __repr__(self):
        return f"<tf.function {self._name} at {id(self):#x}>"

    # Notebooks (tfmini/notebook_repr.py): signature and traces.
    def _repr_html_(self):
        from . import notebook_repr as nr
        return nr.to_html(f"tf.function {self._name}",
                          nr.function_rows(self))

    def _repr_pretty_(self, p, cycle):
        from . import notebook_repr as nr
        nr.pretty(p, cycle, f"tf.function {self._name}",
                  [] if cycle else nr.function_rows(self))

    # ---- methods: one Function (one cache) per instance ----
    # FunctionBase's __get__ (C) finds the instance's Function in
    # _descriptor_cache; the first access makes it here.
    def _bind(self, instance):
        bound = Function(self._python_function, self._name,
                         self._input_signature, self._autograph,
                         self._jit_compile, self._reduce_retracing,
                         _instance=instance)
        cache = self._descriptor_cache
        key = id(instance)
        try:
            ref = weakref.ref(instance, lambda _, c=cache, k=key:
                              c.pop(k, None))
        except TypeError:
            ref = None      # kept alive by the cache, like TF
        cache[key] = (bound, ref)
        return bound

    # ---- the slow path (Note [The call path]) ----
    def _instance(self):
        if self._instance_strong is not None:
            return self._instance_strong
        if self._instance_ref is None:
            return None
        inst = self._instance_ref()
        if inst is None:
            raise ReferenceError(f"tf.function '{self._name}': the object "
                                 f"this method was bound to is gone")
        return inst

    def _callable(self):
        fn = self._python_function
        if self._autograph and _autograph_converter is not None:
            if self._converted is None:
                self._converted = _autograph_converter(fn)
            fn = self._converted
        return fn

    def _call_python(self, args, kwargs, fn=None):
        fn = fn or self._python_function
        inst = self._instance()
        if inst is not None:
            return fn(inst, *args, **kwargs)
        return fn(*args, **kwargs)

    def _call_slow(self, *args, **kwargs):
        from . import config
        if config.functions_run_eagerly():
            return self._call_python(args, kwargs)
        canonical = self._binder.canonicalize(args, kwargs)
        if self._input_signature is not None:
            canonical, converted = self._apply_signature(canonical)
        else:
            converted = False
        if _C.tracing():
            # Called from another function's trace: traced inline.
            a, k = self._binder.split(canonical)
            return self._call_python(a, k, self._callable())
        key, leaves, idents = self._key(canonical)
        concrete = self._concretes.get(key) or self._aliases.get(key)
        if concrete is None:
            with self._lock:
                concrete = self._concrete_for(canonical, converted, key,
                                              leaves, idents)
        else:
            self._slow_hits += 1
        return concrete._run(leaves)

    def _concrete_for(self, canonical, converted, key, leaves, idents):
        """The trace for a cache miss (under the lock): another thread's
        trace that arrived meanwhile, a compatible one, or a new one."""
        concrete = self._concretes.get(key) or self._aliases.get(key)
        if concrete is not None:
            self._slow_hits += 1
            return concrete
        traces = self._tracing_count
        if self._input_signature is not None:
            concrete = self._signature_trace(canonical, call=True)
        else:
            concrete = self._find_compatible(canonical, leaves)
            if concrete is None:
                generic = self._find_generic(canonical, leaves)
                if generic is not None:
                    concrete = generic.for_ranks(generic.ranks_of(leaves))
        if concrete is not None:
            if self._tracing_count == traces:
                self._slow_hits += 1
            self._alias(key, concrete, idents, cache=not converted)
        else:
            specs = self._trace_specs(canonical, leaves)
            concrete = self._trace(canonical, specs)
            own = all(tuple(s._dims) == t._shape_tuple
                      for s, t in zip(specs, leaves))
            if own:
                self._remember(key, concrete, idents, own=True, cache=True)
            else:
                self._alias(key, concrete, idents, cache=True)
        return concrete

    def _signature_trace(self, canonical, call=False):
        """The trace for input_signature; with unknown-rank specs its
        RankGenericConcreteFunction, or for a call (call=True) the trace
        for the rank pattern of the call's tensors."""
        n = len(self._input_signature)
        sig_canonical = list(self._input_signature) + list(canonical[n:])
        concrete = self._signature_concrete
        generic = _unknown_rank.has_unknown_rank(sig_canonical)
        if concrete is None:
            if generic:
                concrete = self._new_generic(
                    sig_canonical,
                    _flatten_leaves(canonical, []) if call else None)
            else:
                specs = [_leaf_spec(x)
                         for x in _flatten_leaves(sig_canonical, [])]
                concrete = self._trace(sig_canonical, specs)
            self._signature_concrete = concrete
        if call and generic:
            return concrete.for_ranks(
                concrete.ranks_of(_flatten_leaves(canonical, [])))
        return concrete

    # ---- unknown-rank signatures (Note [Unknown rank]) ----
    def _new_generic(self, canonical, leaves=None):
        """A new RankGenericConcreteFunction for canonical (specs at its
        leaves, some of unknown rank), traced at the ranks of a call's
        leaves or, with none given, at the first probe rank that
        traces."""
        if not self._explicit_trace:
            self._note_trace("")
        generic = _unknown_rank.RankGenericConcreteFunction(self, canonical)
        if leaves is None:
            generic.probe()
        else:
            generic.for_ranks(generic.ranks_of(leaves))
        self._tracing_count += 1        # TF traces it once
        self._traces.append(generic)
        self._generics.append(generic)
        if len(self._traces) > _MAX_TRACES:
            self._evict(generic)
        return generic

    def _find_generic(self, canonical, leaves):
        for generic in reversed(self._generics):
            if generic.accepts(canonical, leaves):
                return generic
        return None

    def _rank_trace(self, generic, ranks):
        """generic's trace for one rank pattern: a trace like any other,
        but neither counted, warned about nor listed (TF has one trace)."""
        canonical, specs = _unknown_rank.with_ranks(
            generic._strong_args(), generic._unknown, ranks)
        with self._lock:
            concrete = generic._by_rank.get(ranks)
            if concrete is not None:          # another thread traced it
                return concrete
            count, explicit = self._tracing_count, self._explicit_trace
            self._explicit_trace = True
            try:
                concrete = self._trace(canonical, specs)
            finally:
                self._tracing_count = count
                self._explicit_trace = explicit
            self._drop_trace(concrete)
            generic._by_rank[ranks] = concrete
        return concrete

    def _trace_specs(self, canonical, leaves):
        """Placeholder specs for a new trace: the leaves' own, or with
        reduce_retracing, generalized against the traces of the same
        structure (dims that differ become None)."""
        specs = [_leaf_spec(t) for t in leaves]
        if not self._reduce_retracing:
            return specs
        rkey = self._key(canonical, True)[0]
        for other in reversed(self._by_relaxed.get(rkey, [])):
            general = [s.most_specific_common_supertype([o])
                       for s, o in zip(specs, other._leaf_specs)]
            if all(g is not None for g in general):
                return general
        return specs

    def _find_compatible(self, canonical, leaves):
        """The most specific trace whose inputs accept these leaves."""
        rkey = self._key(canonical, True)[0]
        best, best_known = None, -1
        for c in self._by_relaxed.get(rkey, ()):
            ok = True
            for spec, leaf in zip(c._leaf_specs, leaves):
                want = spec._dims
                have = _leaf_spec(leaf)._dims
                if len(want) != len(have) or any(
                        w is not None and w != h for w, h in zip(want, have)):
                    ok = False
                    break
            if ok:
                known = sum(d is not None for s in c._leaf_specs
                            for d in s._dims)
                if known > best_known:
                    best, best_known = c, known
        return best

    def _apply_signature(self, canonical, specs=False):
        """Check (and convert) the arguments against input_signature.
        Returns (canonical, whether anything was converted)."""
        from .ops.constant_op import convert_to_tensor
        sig = self._input_signature
        n = len(sig)
        names = self._binder.names
        if len(self._binder.positional) < n:
            raise FunctionSignatureError(
                f"tf.function '{self._name}' has an input_signature of {n} "
                f"entries but takes {len(self._binder.positional)} "
                f"positional arguments")
        converted = [False]

        def fail(path, want, got):
            raise FunctionSignatureError(
                f"Binding inputs to tf.function '{self._name}' failed: "
                f"argument {path} must match {want}, got {got}. (The "
                f"input_signature is {list(_rebuild_composites(sig))}.)")

        def match(x, spec, path):
            if isinstance(spec, TensorSpec):
                if specs and isinstance(x, TensorSpec):
                    if not x.is_subtype_of(spec):
                        fail(path, spec, x)
                    return x if spec._dims is None else spec
                if not isinstance(x, Tensor):
                    if isinstance(x, (TensorSpec,)) or not (
                            isinstance(x, (bool, int, float, list, tuple,
                                           np.ndarray, np.generic)) or
                            hasattr(x, "_as_tensor")):
                        fail(path, spec, repr(x))
                    numpy_dtype = getattr(x, "dtype", None) if isinstance(
                        x, (np.ndarray, np.generic)) else None
                    try:
                        x = convert_to_tensor(x, dtype_hint=spec.dtype)
                    except (TypeError, ValueError) as e:
                        fail(path, spec, f"{x!r} ({e})")
                    # The C key converts NumPy values itself: only other
                    # conversions make the call's key differ from ours.
                    if numpy_dtype != x.dtype.as_numpy_dtype:
                        converted[0] = True
                if not spec.is_compatible_with(x):
                    fail(path, spec, f"{x.dtype.name} tensor of shape "
                         f"{x.shape}")
                return x
            t = type(spec)
            if isinstance(spec, _Components) and type(x) is not t:
                fail(path, spec.rebuild(), repr(x))
            if t in (list, tuple) or _is_namedtuple(spec):
                if not isinstance(x, (list, tuple)) or len(x) != len(spec):
                    fail(path, spec, repr(x))
                out = [match(a, s, f"{path}[{i}]")
                       for i, (a, s) in enumerate(zip(x, spec))]
                return type(x)(out) if type(x) in (list, tuple) else \
                    type(x)(*out)
            if t is dict:
                if not isinstance(x, dict) or set(x) != set(spec):
                    fail(path, spec, repr(x))
                return {k: match(x[k], spec[k], f"{path}[{k!r}]")
                        for k in spec}
            if isinstance(spec, int) and x != spec:   # a static dim of a
                fail(path, spec, repr(x))               # composite's shape
            # An extension type's Python fields (TF 2.21 ignores them
            # and runs the trace made with the signature's).
            if getattr(type(spec), "_tfm_static_key", False) and x != spec:
                fail(path, spec, repr(x))
            return x

        out = list(canonical)
        for i in range(n):
            out[i] = match(canonical[i], sig[i], repr(names[i]))
        params = self._binder.positional
        for i in range(n, len(params)):
            if params[i].default is inspect.Parameter.empty or \
                    out[i] is not params[i].default:
                raise FunctionSignatureError(
                    f"Binding inputs to tf.function '{self._name}' failed: "
                    f"argument {params[i].name!r} is not in the "
                    f"input_signature {list(_rebuild_composites(sig))}")
        k = len(params)
        if self._binder.varargs is not None:
            if out[k]:
                raise FunctionSignatureError(
                    f"Binding inputs to tf.function '{self._name}' failed: "
                    f"{len(out[k])} extra positional arguments outside the "
                    f"input_signature {list(_rebuild_composites(sig))}")
        return out, converted[0]

    # ---- the trace ----
    def _trace(self, canonical, specs):
        """Trace the Python function with symbolic inputs of these specs
        (one per leaf of canonical) into a new ConcreteFunction."""
        description = self._binder.describe(canonical)
        if not self._explicit_trace:
            self._note_trace(self._change_text(description))
        while True:
            traced = self._trace_graph(canonical, specs)
            if traced is not None:
                break
        graph, placeholders, structure, flat, kind = traced
        it = iter(specs)
        canonical_specs = [_forget_objects(_map_leaves(lambda _: next(it), v))
                           for v in canonical]
        structured = _pack_outputs(structure, flat)
        concrete = ConcreteFunction(self, graph, placeholders, flat, kind,
                                    structure, canonical_specs, structured)
        if self._trace_py_tokens:
            # The graph's py_function nodes need their functions as
            # long as it can run (a leak per trace before).
            weakref.finalize(concrete, _script_ops().release,
                             self._trace_py_tokens)
            self._trace_py_tokens = []
        concrete._relaxed_key = self._key(canonical, True)[0]
        concrete._on_replica = self._trace_on_replica
        if self._trace_custom_gradient:
            it = iter(specs)
            args = [_weak_objects(_map_leaves(lambda _: next(it), v))
                    for v in canonical]
            concrete._run = _CustomGradientRun(self, concrete, args)
            concrete._set_taped_in_python()
        self._by_relaxed.setdefault(concrete._relaxed_key, []).append(
            concrete)
        self._traces.append(concrete)
        self._last_description = description
        if len(self._traces) > _MAX_TRACES:
            self._evict(concrete)
        for listener in _trace_listeners:
            listener(concrete)
        return concrete

    def _trace_graph(self, canonical, specs):
        """One run of the Python function into a new graph. None when it
        was the first trace and created variables: as in TF, the function
        is then traced again, and creating variables on that trace is a
        ValueError. That tells a function that makes its variables once
        (`if self.v is None: self.v = tf.Variable(...)`) from one that
        makes a new variable on every call, which a graph cannot do."""
        names = self._binder.leaf_names(canonical)
        graph = _C.Graph(self._name)
        placeholders = [graph.placeholder(s.dtype._enum, s._dims, n)
                        for s, n in zip(specs, names)]
        it = iter(placeholders)
        symbolic = [_map_leaves(lambda leaf: _weak_like(next(it), leaf), v)
                    for v in canonical]
        args, kwargs = self._binder.split(symbolic)
        fn = self._callable()
        frames = _frames()
        frame = _TraceFrame(self, graph, not self._traced_ok)
        frames.append(frame)
        graph.push()
        try:
            with _suspend_tapes():
                result = self._call_python(args, kwargs, fn)
                structure, flat, kind = _prepare_outputs(result, self._name)
        except BaseException as e:
            _script_ops().release(frame.py_tokens)   # the graph is gone
            if hasattr(e, "add_note"):
                e.add_note(f"(raised while tracing tf.function "
                           f"'{self._name}')")
            raise
        finally:
            graph.pop()
            frames.pop()
        self._tracing_count += 1
        self._traced_ok = True
        if frame.created:
            _script_ops().release(frame.py_tokens)
            return None
        self._trace_on_replica = frame.on_replica
        self._trace_custom_gradient = frame.custom_gradient
        self._trace_py_tokens = frame.py_tokens
        return graph, placeholders, structure, flat, kind

    def _change_text(self, description):
        """What differs from the previous trace, for the warning."""
        old = self._last_description
        if old is None:
            return ""
        changes = []
        for (name, a), (_, b) in zip(old, description):
            _diff(repr(name), a, b, changes)
        if not changes:
            return ""
        return " The last retrace was caused by: " + "; ".join(changes) + "."

    def _note_trace(self, change):
        """The retracing detector: warn when 5 of the last (up to) 10
        calls traced, naming what changed since the previous trace."""
        hits = self._take_calls() + self._slow_hits
        self._slow_hits = 0
        self._history.extend([False] * min(hits, _RETRACE_WINDOW))
        self._history.append(True)
        traced = sum(self._history)
        if traced < _RETRACE_THRESHOLD or \
                self._warnings >= _MAX_RETRACE_WARNINGS:
            return
        self._warnings += 1
        _logger.warning(
            "%d out of the last %d calls to %r triggered tf.function "
            "retracing. Tracing is expensive and the excessive number of "
            "tracings could be due to (1) creating @tf.function repeatedly "
            "in a loop, (2) passing tensors with different shapes, (3) "
            "passing Python objects instead of tensors. For (1), please "
            "define your @tf.function outside of the loop. For (2), "
            "@tf.function has reduce_retracing=True option that can avoid "
            "unnecessary retracing. For (3), please refer to "
            "https://www.tensorflow.org/guide/function#controlling_retracing"
            " and https://www.tensorflow.org/api_docs/python/tf/function for"
            " more details.%s", traced, len(self._history),
            self._python_function, change)

    def _saveable_trace(self, concrete):
        """concrete, or for a trace that asks for its replica when it runs
        (a Generator drawn under strategy.run), a new trace of the same
        signature made here, outside the replicas, as a saved model runs
        it. The new trace stays out of the cache: calls on replicas keep
        theirs."""
        if not getattr(concrete, "_on_replica", False):
            return concrete
        canonical = concrete._canonical_specs
        specs = _flatten_leaves(canonical, [])
        with self._lock:
            explicit, self._explicit_trace = self._explicit_trace, True
            try:
                fresh = self._trace(canonical, specs)
            finally:
                self._explicit_trace = explicit
            self._traces.remove(fresh)
            self._by_relaxed[fresh._relaxed_key].remove(fresh)
        return fresh

    # ---- the cache ----
    def _remember(self, key, concrete, idents, own, cache):
        self._concretes[key] = concrete
        concrete._keys.add(key)
        self._watch(key, idents)
        if cache:
            self._cache_put(key, concrete)

    def _alias(self, key, concrete, idents, cache):
        if len(self._aliases) >= _MAX_ALIASES:
            old, c = self._aliases.popitem(last=False)
            self._cache_remove(old)
            c._keys.discard(old)
        self._aliases[key] = concrete
        concrete._keys.add(key)
        self._watch(key, idents)
        if cache:
            self._cache_put(key, concrete)

    def _watch(self, key, idents):
        """Keys that hold objects by identity die with the objects."""
        for obj in idents:
            entry = self._ident_watch.get(id(obj))
            if entry is None:
                me = weakref.ref(self)

                def dead(_, me=me, oid=id(obj)):
                    f = me()
                    if f is not None:
                        f._forget_ident(oid)
                try:
                    holder = weakref.ref(obj, dead)
                except TypeError:
                    holder = obj       # not weakref-able: keep it alive
                entry = self._ident_watch[id(obj)] = (holder, set())
            entry[1].add(key)

    def _forget_ident(self, oid):
        entry = self._ident_watch.pop(oid, None)
        if entry is None:
            return
        for key in entry[1]:
            self._cache_remove(key)
            c = self._concretes.pop(key, None) or self._aliases.pop(key, None)
            if c is not None:
                c._keys.discard(key)
                if not c._keys and c is not self._signature_concrete:
                    self._drop_trace(c)

    def _evict(self, keep):
        """Drop the least recently called traces (not keep) past
        _MAX_TRACES: their keys leave the caches and the function lets
        go of them (a caller holding one can still run it)."""
        while len(self._traces) > _MAX_TRACES:
            victim = min((c for c in self._traces if c is not keep),
                         key=lambda c: c._last_call)
            gone = [victim]
            if victim in self._generics:
                self._generics.remove(victim)
                gone += victim.traces()
            for c in gone:
                for key in list(c._keys):
                    self._cache_remove(key)
                    self._concretes.pop(key, None)
                    self._aliases.pop(key, None)
                c._keys.clear()
            if self._signature_concrete is victim:
                self._signature_concrete = None
            self._drop_trace(victim)

    def _drop_trace(self, c):
        if c in self._traces:
            self._traces.remove(c)
        lst = self._by_relaxed.get(c._relaxed_key)
        if lst and c in lst:
            lst.remove(c)


# Note [Custom gradients under a tape around the call]: a tape around a
# call of a traced function records the traced graph's ops as they are
# replayed (csrc/graph/function.h), and the graph holds no trace of a
# @tf.custom_gradient: the tape would take the plain gradient of its
# forward ops. So a trace that ran a custom gradient is run, under a
# tape, without recording, and recorded as one custom op, whose gradient
# is a second trace made on first need: the Python function again, with
# a tape inside it (where custom gradients are recorded as in eager
# code), giving the gradients of the tensor arguments and of the
# variables the function reads. That trace recomputes the forward pass,
# and Python side effects in the function run once more as it traces.
# The C call path sends such a trace's calls under a tape here
# (_set_taped_in_python); without a tape it runs them itself.

class _CustomGradientRun:
    """A ConcreteFunction's _run for a trace with custom gradients."""

    def __init__(self, function, concrete, args):
        self._function = weakref.ref(function)
        self._concrete = weakref.ref(concrete)
        # The trace's canonical arguments: specs for its tensors, the
        # objects it was called with (weakly), for the gradient trace.
        self._args = args
        # (the gradient trace, the variables it differentiates, and the
        # arguments it differentiates: the floating ones)
        self._grad = None

    def __call__(self, leaves):
        concrete = self._concrete()
        run = _C.ConcreteBase._run
        if not _C.tapes_active():
            return run(concrete, leaves)
        leaves = list(leaves)
        _C.pause_tapes()
        try:
            result = run(concrete, leaves)
        finally:
            _C.resume_tapes()
        from . import nest as _nest
        flat = _nest.flatten(result)
        at = [i for i, x in enumerate(flat) if isinstance(x, Tensor) and
              _differentiable(x.dtype)]
        if not at:
            return result
        grad, variables, wrt = self._gradient_trace(
            [flat[i] for i in at])
        inputs = leaves + [v._read() for v in variables]
        if not _C.should_record(inputs):
            return result
        outs = [_C.fresh_tensor(flat[i]) for i in at]
        for i, o in zip(at, outs):
            flat[i] = o

        def backward(dys):
            from .ops.array_ops import zeros_like
            dys = [zeros_like(o) if d is None else d
                   for d, o in zip(dys, outs)]
            got = iter(grad(leaves, dys))
            in_grads = [None] * len(leaves)
            for i in wrt:
                in_grads[i] = next(got)
            return in_grads + list(got)

        _C.record_custom(inputs, outs, backward)
        return _nest._pack(result, flat)

    def _gradient_trace(self, outs):
        if self._grad is not None:
            return self._grad
        function, concrete = self._function(), self._concrete()
        if function is None:
            raise RuntimeError(
                f"tf.function {concrete.name!r}: the function this trace "
                f"came from is gone; its gradient cannot be traced")
        specs = concrete._leaf_specs
        wrt = [i for i, s in enumerate(specs) if _differentiable(s.dtype)]
        box = []

        def gradient(leaves, dys):
            from . import nest as _nest
            from .backprop import GradientTape
            leaves, dys = list(leaves), list(dys)
            it = iter(leaves)
            canonical = [_strong_objects(_map_leaves(lambda _: next(it), v))
                         for v in self._args]
            args, kwargs = function._binder.split(canonical)
            with GradientTape() as tape:
                for i in wrt:
                    tape.watch(leaves[i])
                result = function._call_python(args, kwargs,
                                               function._callable())
            # Packed as the trace packs its outputs (Python numbers
            # become tensors), so that ys pair with the call's outputs.
            structure, flat, _ = _prepare_outputs(result, concrete.name)
            ys = [x for x in _nest.flatten(_pack_outputs(structure, flat))
                  if isinstance(x, Tensor) and _differentiable(x.dtype)]
            variables = list(tape.watched_variables())
            box.append(variables)
            return tape.gradient(
                ys, [leaves[i] for i in wrt] + variables,
                output_gradients=dys,
                unconnected_gradients="zero")

        sig = [list(specs),
               [TensorSpec([None] * o.shape.rank, o.dtype) for o in outs]]
        traced = Function(gradient, name=f"{concrete.name}_gradient",
                          input_signature=sig, autograph=False)
        traced.get_concrete_function()
        self._grad = (traced, box[-1], wrt)
        return self._grad


def _differentiable(dtype):
    return dtype.is_floating or dtype.is_complex


class _WeakArg:
    """An object argument, held weakly where it can be."""
    __slots__ = ("_ref", "_obj")

    def __init__(self, obj):
        try:
            self._ref, self._obj = weakref.ref(obj), None
        except TypeError:
            self._ref, self._obj = None, obj

    def get(self):
        obj = self._obj if self._ref is None else self._ref()
        if obj is None:
            raise ReferenceError("an object argument of this trace is "
                                 "gone; its gradient cannot be traced")
        return obj


def _weak_objects(x):
    """x (leaves already specs) with its objects as _WeakArgs."""
    if x is None or isinstance(x, (bool, int, float, str, TensorSpec)):
        return x
    t = type(x)
    if t is list or t is tuple:
        return t(_weak_objects(v) for v in x)
    if t is dict:
        return {k: _weak_objects(v) for k, v in x.items()}
    if _is_namedtuple(x):
        return t(*[_weak_objects(v) for v in x])
    return _WeakArg(x)


def _strong_objects(x):
    if isinstance(x, _WeakArg):
        return x.get()
    t = type(x)
    if t is list or t is tuple:
        return t(_strong_objects(v) for v in x)
    if t is dict:
        return {k: _strong_objects(v) for k, v in x.items()}
    if _is_namedtuple(x):
        return t(*[_strong_objects(v) for v in x])
    return x


def _normalize_signature(sig):
    if sig is None:
        return None
    if isinstance(sig, TensorSpec) or not isinstance(sig, (list, tuple)):
        raise TypeError(f"input_signature must be a list or tuple of "
                        f"tf.TensorSpec, got {sig!r}")

    def check(s):
        if isinstance(s, TensorSpec):
            return s
        if isinstance(s, TypeSpec):            # Note [Composite arguments]
            return _expand_composites(s)
        if isinstance(s, _Components):         # normalized already (_bind)
            return s
        if type(s) in (list, tuple):
            return type(s)(check(x) for x in s)
        if _is_namedtuple(s):      # also a distributed dataset's PerReplica
            return type(s)(*[check(x) for x in s])
        if type(s) is dict:
            return {k: check(v) for k, v in s.items()}
        raise TypeError(f"input_signature must contain tf.TensorSpec "
                        f"objects (or lists/tuples/dicts of them), got "
                        f"{s!r}")
    return tuple(check(s) for s in sig)


def function(func=None, input_signature=None, autograph=True,
             jit_compile=None, reduce_retracing=False,
             experimental_implements=None, experimental_autograph_options=None,
             experimental_attributes=None, experimental_relax_shapes=None,
             experimental_compile=None, experimental_follow_type_hints=None):
    """tf.function: compile a Python function into a cached graph.

    Usable as @tf.function, @tf.function(...) and tf.function(f, ...)."""
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes
    if jit_compile is None and experimental_compile is not None:
        jit_compile = experimental_compile

    def decorate(f):
        return Function(f, input_signature=input_signature,
                        autograph=autograph, jit_compile=jit_compile,
                        reduce_retracing=reduce_retracing)
    if func is None:
        return decorate
    return decorate(func)


# ---- graph control flow --------------------------------------------------
# What ops/control_flow_ops.py's graph hooks need (see its Note [Graph
# control flow hooks]; and Note [Sub-graphs] in csrc/runtime/graph.h):
# branches and loop bodies traced into sub-graphs of the graph being
# traced, as If / While / Assert nodes the executor runs. Arguments and
# results are flat lists of tensors. Tapes recording around the trace do
# not see the sub-graphs' ops (a traced call under a tape is replayed op
# by op, the taken branch included, see csrc/graph/exec.h).

def _trace_sub(name, fn, specs):
    """fn(*placeholders of specs) traced into a new sub-graph of the graph
    being traced -> (sub-graph, list of output tensors)."""
    from .ops.constant_op import convert_to_tensor
    sub = _C.subgraph(name)
    args = []
    for i, spec in enumerate(specs):
        if spec._dims is None:
            raise ValueError(f"{name}: tfmini's graphs need the rank of "
                             f"loop variable {i} (a shape invariant with "
                             f"None dims, not an unknown rank)")
        args.append(sub.placeholder(spec.dtype._enum, spec._dims,
                                    f"loop_var_{i}" if specs else name))
    sub.push()
    try:
        with _suspend_tapes():
            outs = [convert_to_tensor(r) for r in fn(*args)]
    finally:
        sub.pop()
    return sub, outs


def _graph_cond(pred, true_fn, false_fn):
    """An If node: true_fn() and false_fn() (each a list of tensors, same
    count and dtypes) traced as sub-graphs; only the taken one runs.
    Returns the outputs, whose shapes are the most specific both fit."""
    tg, touts = _trace_sub("cond_true", true_fn, ())
    fg, fouts = _trace_sub("cond_false", false_fn, ())
    return list(_C.graph_if(pred, tg, touts, fg, fouts))


def _graph_while(cond_fn, body_fn, loop_vars, shape_invariants,
                 maximum_iterations):
    """A While node over loop_vars (a list of tensors) whose shapes may
    vary as shape_invariants allow (None dims)."""
    from .ops.constant_op import convert_to_tensor
    loop_vars = [convert_to_tensor(v) for v in loop_vars]
    specs = [TensorSpec(inv, v.dtype)
             for v, inv in zip(loop_vars, shape_invariants)]
    cg, couts = _trace_sub("while_cond", lambda *a: [cond_fn(*a)], specs)
    bg, bouts = _trace_sub("while_body", body_fn, specs)
    if maximum_iterations is not None:
        maximum_iterations = convert_to_tensor(maximum_iterations)
    return list(_C.graph_while(loop_vars, cg, couts[0], bg, bouts,
                               maximum_iterations))


def _graph_assert(condition, data, summarize):
    """An Assert node: InvalidArgumentError at run time when condition is
    false, naming data's strings and tensor values (summarize elements at
    each end of every dim, tf.print's format). None under TF's
    debug_stripper option (tf.config.optimizer)."""
    from .ops.constant_op import convert_to_tensor
    from .config import optimizer
    if optimizer._strips_debug_ops():
        return
    what = condition.name if isinstance(condition, Tensor) and \
        condition._symbolic else condition
    pieces = [f"Expected '{what}' to be true. Summarized data: "]
    tensors = []
    for i, x in enumerate(data):
        sep = "\n" if i else ""
        if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
            pieces[-1] += sep
            tensors.append(convert_to_tensor(x))
            pieces.append("")
        else:
            pieces[-1] += sep + str(x)
    _C.graph_assert(condition, pieces, tensors,
                    3 if summarize is None else int(summarize))


_C._set_function_hooks(_pack_outputs,
                       os.path.dirname(os.path.abspath(__file__)) + os.sep,
                       TensorSpec)

def _script_ops():
    from .ops import script_ops
    return script_ops


# `tfmini.function` is this decorator once tfmini/__init__.py star-imports
# this module, so `from . import function; function._tracing()` (as
# context.py does) finds the decorator, not the module: give it the names.
function._tracing = _tracing
function._symbolic_name = _symbolic_name

# Imported last: it subclasses ConcreteFunction.
from . import function_unknown_rank as _unknown_rank  # noqa: E402
