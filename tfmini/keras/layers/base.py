"""keras.layers.Layer: the unit models are built from.

A layer owns weights (made by add_weight in build), computes call(), and
tracks what is assigned to its attributes: sub-layers, tf.Variables and
lists/tuples/dicts of them (walked when asked, so list appends after
assignment count). From those come trainable_weights,
non_trainable_weights, losses and the layer tree.

Calling a layer:
- converts NumPy/Python inputs to tensors and casts floating inputs to
  the layer's compute dtype (Keras' autocast);
- builds the weights on the first call from the input's shape, inside
  tf.init_scope: when that call happens while a tf.function is traced,
  the variables are still created and initialized eagerly, outside the
  graph, and the graph captures them;
- resolves `training`: the explicit argument, else the value of the
  enclosing layer call, else the default of call()'s `training`
  parameter; passes it to call() when call() takes it;
- on symbolic Keras inputs (keras.Input) builds a functional graph
  instead of computing (see input_layer.py).
"""
import contextlib
import inspect
import threading

import numpy as np

import tfmini as tf
from tfmini import trackable as _tracking
from tfmini._tensor import PLAIN_TENSOR_TYPES as _PLAIN_TENSORS

from .. import backend, constraints, initializers, regularizers
from ..mixed_precision import policy as _policy
from ..variables import KerasVariable


class _CallContext(threading.local):
    def __init__(self):
        self.training = None
        self.depth = 0
        # Names of the layers being called, outermost first: the path a
        # weight created now gets (Keras 3's 'model/dense/kernel').
        self.path = []
        # Set while a layer is run on a stand-in batch for an unknown
        # batch size: the shapes it records get None there.
        self.batch_unknown = False
        # The compute dtype weights read as inside the layer being
        # called (mixed precision), None outside any such layer.
        self.autocast = None
        # id(cast tensor) -> (it, its variable) for the weights cast now.
        self.cast_of = {}


_ctx = _CallContext()
_call_specs = {}
# Set once any layer adds a loss during call: only then does a top-level
# call pay for clearing the previous call's losses in the whole tree.
_call_losses_used = [False]

_LAYER_KWARGS = frozenset(("input_shape", "batch_input_shape", "batch_size",
                           "input_dim", "dynamic", "autocast",
                           "activity_regularizer", "weights"))


def _autograph_convert():
    """AutoGraph's convert(f) while a tf.function with autograph=True is
    being traced, else None."""
    if tf.executing_eagerly():
        return None
    import importlib
    try:
        api = importlib.import_module("tfmini.autograph.api")
        function = importlib.import_module("tfmini.function")
    except ImportError:
        return None
    frames = getattr(function, "_frames", None)
    if frames is not None:
        active = frames()
        if active and not getattr(active[-1].function, "_autograph", True):
            return None
    return getattr(api, "convert", None)


def _call_spec(cls):
    """(passes training, default of training) for cls.call."""
    spec = _call_specs.get(cls)
    if spec is None:
        params = inspect.signature(cls.call).parameters
        varkw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        t = params.get("training")
        default = None
        if t is not None and t.default is not inspect.Parameter.empty:
            default = t.default
        spec = _call_specs[cls] = (t is not None or varkw, default)
    return spec


_mask_specs = {}
_masking = []


def _masking_module():
    # masking.py imports this module: it is bound on first use.
    if not _masking:
        from . import masking
        _masking.append(masking)
    return _masking[0]


def _mask_spec(cls):
    """(call() takes `mask`, the class computes its own output mask)."""
    spec = _mask_specs.get(cls)
    if spec is None:
        params = inspect.signature(cls.call).parameters
        spec = _mask_specs[cls] = (
            "mask" in params, cls.compute_mask is not Layer.compute_mask)
    return spec


def _is_metric(x):
    return getattr(type(x), "_keras_is_metric", False)


def _trackable(value):
    return isinstance(value, (Layer, list, tuple, dict)) or \
        backend.is_variable(value) or _is_metric(value)


def _walk(value, layers, variables, metrics, seen, depth=0):
    if depth > 50:
        return
    if isinstance(value, Layer):
        if id(value) not in seen:
            seen.add(id(value))
            layers.append(value)
    elif backend.is_variable(value):
        if id(value) not in seen:
            seen.add(id(value))
            variables.append(value)
    elif _is_metric(value):
        if metrics is not None and id(value) not in seen:
            seen.add(id(value))
            metrics.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _walk(v, layers, variables, metrics, seen, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            _walk(v, layers, variables, metrics, seen, depth + 1)


def _dedup(seq):
    seen, out = set(), []
    for x in seq:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def _convert_leaf(x, dtype, autocast):
    if isinstance(x, tf.Tensor) or backend.is_variable(x):
        if autocast and x.dtype != dtype and x.dtype.is_floating:
            return tf.cast(x, dtype)
        return x
    if isinstance(x, (np.ndarray, np.generic, float, int, bool)):
        a = np.asarray(x)
        if a.dtype.kind == "f" and autocast:
            a = a.astype(dtype.as_numpy_dtype, copy=False)
        elif a.dtype == np.int64 and not isinstance(x, np.ndarray):
            a = a.astype(np.int32)
        return tf.constant(a)
    return x


def _is_number_list(x):
    """A (nested) Python list of numbers: one tensor, not a structure."""
    if isinstance(x, (list, tuple)):
        return all(_is_number_list(e) for e in x) and len(x) > 0
    return isinstance(x, (int, float, bool, np.number))


def _convert_inputs(x, dtype, autocast):
    if isinstance(x, list) and _is_number_list(x):
        a = np.asarray(x)
        if a.dtype == np.int64:
            a = a.astype(np.int32)      # Python ints -> int32, as TF
        return _convert_leaf(a, dtype, autocast)
    if isinstance(x, dict):
        return {k: _convert_inputs(v, dtype, autocast) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_convert_inputs(v, dtype, autocast) for v in x)
    return _convert_leaf(x, dtype, autocast)


def _shape_of(x):
    """The TensorShape (or nested structure of them) of an input."""
    if isinstance(x, dict):
        return {k: _shape_of(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_shape_of(v) for v in x]
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    return tf.TensorShape(shape)


def _output_shape(x, keep_batch=False):
    """The shape of outputs x as a tuple (lists and dicts of them for
    several), the batch dim None unless keep_batch."""
    if isinstance(x, (list, tuple)):
        return [_output_shape(v, keep_batch) for v in x]
    if isinstance(x, dict):
        return {k: _output_shape(v, keep_batch) for k, v in x.items()}
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    dims = tuple(shape)
    if keep_batch or not dims:
        return dims
    return (None,) + tuple(dims[1:])


@contextlib.contextmanager
def _path_scope(name):
    """Weights created inside get `name/` in their path."""
    _ctx.path.append(name)
    try:
        yield
    finally:
        _ctx.path.pop()


@contextlib.contextmanager
def _unknown_batch(unknown=True):
    """Shapes recorded inside have None as their batch size."""
    outer = _ctx.batch_unknown
    _ctx.batch_unknown = outer or unknown
    try:
        yield
    finally:
        _ctx.batch_unknown = outer


def _contains_keras_tensor(x):
    if isinstance(x, tf.Tensor):
        return False
    from .input_layer import KerasTensor
    return any(isinstance(e, KerasTensor) for e in tf.nest.flatten(x))


class Layer(_tracking.Trackable):
    """Base class of all layers (tf.keras.layers.Layer)."""

    # ---- the trackable protocol (tfmini/trackable.py) ----------------
    _defers_restore = True

    def _trackable_children(self):
        """The attributes this layer tracks (sub-layers, variables,
        containers of them), then add_weight weights that no attribute
        holds, by their short name."""
        out = []
        for key in sorted(self._keras_tracked):
            out.extend(_tracking.children_of_value(
                self._keras_tracked[key], (_tracking.escape(key),)))
        held = {id(c) for _, c in out}
        for w in self._keras_weights:
            if id(w) not in held:
                out.append(((_tracking.escape(_tracking.short_name(w)),),
                            w))
        return out

    def _module_leaves(self):
        return self.weights

    def __init__(self, trainable=True, name=None, dtype=None,
                 dynamic=False, **kwargs):
        unknown = set(kwargs) - _LAYER_KWARGS
        if unknown:
            raise TypeError(f"Keyword argument not understood: "
                            f"{sorted(unknown)[0]!r}")
        d = self.__dict__
        d["_keras_tracked"] = {}
        d["_keras_weights"] = []
        d["_keras_regularizers"] = []
        d["_keras_call_losses"] = []
        d["_keras_callable_losses"] = []
        d["_keras_output_shape"] = None
        d["_keras_summary_shape"] = None
        d["_keras_inbound"] = []
        self._keras_trainable = bool(trainable)
        self._name = name if name is not None else \
            backend.unique_object_name(
                backend.to_snake_case(type(self).__name__))
        # dtype is a policy (a name such as 'mixed_float16', a
        # DTypePolicy, its config, or None for the global policy):
        # _keras_dtype is what the layer computes in, the weights are
        # made in _keras_variable_dtype.
        self._keras_set_policy(_policy.get(dtype))
        self._keras_autocast = kwargs.get("autocast", True)
        self.built = False
        self.supports_masking = False
        self.activity_regularizer = regularizers.get(
            kwargs.get("activity_regularizer"))
        batch_shape = kwargs.get("batch_input_shape")
        if batch_shape is None and kwargs.get("input_shape") is not None:
            batch_shape = (kwargs.get("batch_size"),) + \
                tuple(kwargs["input_shape"])
        if batch_shape is None and kwargs.get("input_dim") is not None:
            batch_shape = (kwargs.get("batch_size"), kwargs["input_dim"])
        self._keras_batch_input_shape = (tuple(batch_shape)
                                         if batch_shape is not None
                                         else None)
        self._keras_initial_weights = kwargs.get("weights")

    # ---- attribute tracking ------------------------------------------
    def __setattr__(self, name, value):
        tracked = self.__dict__.get("_keras_tracked")
        if tracked is None:
            if isinstance(value, Layer) or backend.is_variable(value):
                cls = type(self).__name__
                raise RuntimeError(
                    f"It looks like you are subclassing `{cls}` and you "
                    f"forgot to call `super().__init__()`. Always start "
                    f"with this line.")
        elif not name.startswith("_keras_"):
            if _trackable(value):
                tracked[name] = value
            else:
                tracked.pop(name, None)
        object.__setattr__(self, name, value)
        if _tracking.PENDING in self.__dict__:
            self._restore_deferred(name, value)

    def __delattr__(self, name):
        tracked = self.__dict__.get("_keras_tracked")
        if tracked is not None:
            tracked.pop(name, None)
        object.__delattr__(self, name)

    def _tracked_children(self, metrics=None):
        layers, variables = [], []
        seen = {id(self)}
        for value in self._keras_tracked.values():
            _walk(value, layers, variables, metrics, seen)
        return layers, variables

    def _flatten_layers(self, include_self=True, recursive=True):
        """This layer (optionally) and its sub-layers, each once, in
        tracking order (depth first)."""
        seen = set()

        def visit(layer, is_root):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            if include_self or not is_root:
                yield layer
            if is_root or recursive:
                for child in layer._tracked_children()[0]:
                    yield from visit(child, False)
        return list(visit(self, True))

    # ---- names, dtypes, flags ----------------------------------------
    @property
    def name(self):
        return self._name

    def _keras_set_policy(self, policy):
        d = self.__dict__
        d["_keras_policy"] = policy
        d["_keras_dtype"] = tf.as_dtype(policy.compute_dtype)
        d["_keras_variable_dtype"] = tf.as_dtype(policy.variable_dtype)

    @property
    def dtype(self):
        """The dtype of the layer's weights, as a string ('float32')."""
        return self._keras_variable_dtype.name

    @property
    def variable_dtype(self):
        return self._keras_variable_dtype.name

    @property
    def compute_dtype(self):
        return self._keras_dtype.name

    @property
    def dtype_policy(self):
        return self._keras_policy

    @dtype_policy.setter
    def dtype_policy(self, value):
        self._keras_set_policy(_policy.get(value))

    @property
    def trainable(self):
        return self._keras_trainable

    @trainable.setter
    def trainable(self, value):
        # Like Keras: freezing a layer freezes everything under it.
        for layer in self._flatten_layers():
            layer._keras_trainable = bool(value)

    @property
    def input_shape(self):
        if self._keras_batch_input_shape is not None:
            return self._keras_batch_input_shape
        raise AttributeError(f"The layer {self.name!r} has never been "
                             f"called with a known input shape")

    @property
    def output_shape(self):
        if self._keras_output_shape is None:
            raise AttributeError(f"The layer {self.name!r} has never been "
                                 f"called and thus has no defined output "
                                 f"shape.")
        return self._keras_output_shape

    def _keras_node_attribute(self, attr, what):
        # Keras reads these from the layer's first call on symbolic
        # (keras.Input-based) tensors; one tensor comes back bare.
        if not self._keras_inbound:
            raise AttributeError(f"The layer {self.name} has never been "
                                 f"called and thus has no defined {what}.")
        from ...nest import flatten as _flatten
        node = self._keras_inbound[0]
        if attr == "input":
            values = node.input_tensors()
            if not values:    # an InputLayer: its input is its output
                values = _flatten(node.outputs)
        else:
            values = _flatten(node.outputs)
        return values[0] if len(values) == 1 else values

    def add_metric(self, *args, **kwargs):
        # Keras 3 removed it; it raises with this advice.
        raise NotImplementedError(
            "Layer `add_metric()` method is deprecated. Add your metric in "
            "`Model.compile(metrics=[...])`, or create metric trackers in "
            "init() or build() when subclassing the layer or model, then "
            "call `metric.update_state()` whenever necessary.")

    @property
    def input(self):
        """The symbolic input of the layer's first functional call."""
        return self._keras_node_attribute("input", "input")

    @property
    def output(self):
        """The symbolic output of the layer's first functional call."""
        return self._keras_node_attribute("output", "output")

    # ---- weights -----------------------------------------------------
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None,
                   regularizer=None, trainable=None, constraint=None,
                   use_resource=None, synchronization=None,
                   aggregation=None, **kwargs):
        """Create a weight of this layer: a tf.Variable (a KerasVariable,
        named `name`, path '<layers>/<name>'), initialized eagerly (also
        when the layer is first called inside a traced function)."""
        shape = tuple(() if shape is None else
                      [int(d) if d is not None else None for d in shape])
        if any(d is None for d in shape):
            raise ValueError(f"Weight {name!r} of layer {self.name!r} needs "
                             f"a fully defined shape, got {shape}")
        dtype = tf.as_dtype(getattr(dtype, "name", dtype) or
                            self._keras_variable_dtype)
        if initializer is None:
            initializer = ("glorot_uniform" if dtype.is_floating
                           else "zeros")
        init = initializers.get(initializer)
        sync = synchronization
        if trainable is None:
            trainable = not (sync is not None and
                             getattr(sync, "name", sync) == "ON_READ")
        if not name:
            # Keras 3: unnamed weights are 'variable', 'variable_1', ...
            taken = {w.name for w in self._keras_weights}
            name, n = "variable", 0
            while name in taken:
                n += 1
                name = f"variable_{n}"
        extra = {}
        if sync is not None:
            extra["synchronization"] = sync
        if aggregation is not None:
            extra["aggregation"] = aggregation
        # Keras 3's path: the layers being called, then this one.
        scope = list(_ctx.path)
        if not scope or scope[-1] != self._name:
            scope.append(self._name)
        with backend.init_scope():
            value = init(shape, dtype=dtype)
            var = KerasVariable(value, path="/".join(scope + [name]),
                                trainable=bool(trainable), dtype=dtype,
                                constraint=constraints.get(constraint),
                                **extra)
        self._keras_weights.append(var)
        if _tracking.PENDING in self.__dict__:
            self._restore_deferred(name, var)
        reg = regularizers.get(regularizer)
        if reg is not None:
            self._keras_regularizers.append((reg, var))
        return var

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        layers, variables = self._tracked_children()
        out = [w for w in _dedup(self._keras_weights + variables)
               if w.trainable]
        for layer in layers:
            out.extend(layer.trainable_weights)
        return _dedup(out)

    @property
    def non_trainable_weights(self):
        layers, variables = self._tracked_children()
        own = _dedup(self._keras_weights + variables)
        if self.trainable:
            out = [w for w in own if not w.trainable]
            for layer in layers:
                out.extend(layer.non_trainable_weights)
        else:
            out = ([w for w in own if w.trainable] +
                   [w for w in own if not w.trainable])
            for layer in layers:
                out.extend(layer.weights)
        return _dedup(out)

    @property
    def weights(self):
        return _dedup(self.trainable_weights + self.non_trainable_weights)

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def get_weights(self):
        """The weights' values as a list of NumPy arrays."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(
                f"You called `set_weights(weights)` on layer {self.name!r} "
                f"with a weight list of length {len(weights)}, but the layer "
                f"was expecting {len(params)} weights.")
        for p, w in zip(params, weights):
            w = np.asarray(w)
            if tuple(p.shape) != w.shape:
                raise ValueError(
                    f"Layer {self.name!r} weight shape {tuple(p.shape)} is "
                    f"not compatible with provided weight shape {w.shape}.")
        for p, w in zip(params, weights):
            p.assign(np.asarray(w, dtype=p.dtype.as_numpy_dtype),
                     read_value=False)

    def count_params(self):
        if not self.built:
            raise ValueError(
                f"You tried to call `count_params` on layer {self.name!r}, "
                f"but the layer isn't built. You can build it manually via: "
                f"`layer.build(input_shape)`.")
        total = 0
        for w in self.weights:
            n = 1
            for d in w.shape:
                n *= int(d)
            total += n
        return total

    # ---- losses ------------------------------------------------------
    def add_loss(self, loss):
        """Add a loss term: a tensor computed in call(), or a callable of
        no arguments evaluated whenever `losses` is read."""
        if callable(loss) and not isinstance(loss, tf.Tensor):
            self._keras_callable_losses.append(loss)
            return
        _call_losses_used[0] = True
        self._keras_call_losses.append(loss)

    @property
    def losses(self):
        """Losses added during the last call and weight-regularization
        penalties of this layer and its sub-layers (recomputed from the
        weights' current values)."""
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._keras_call_losses)
            for fn in layer._keras_callable_losses:
                out.append(fn())
            if layer.trainable:
                for reg, var in layer._keras_regularizers:
                    out.append(reg(var))
        return out

    # ---- building and calling ----------------------------------------
    def build(self, input_shape):
        """Create the weights for inputs of this shape. Called once, on
        the first call."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        return inputs

    def compute_mask(self, inputs, mask=None):
        """The mask of the outputs: the input's if the layer supports
        masking, else none."""
        return mask if self.supports_masking else None

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(f"Layer {type(self).__name__} does not "
                                  f"implement compute_output_shape")

    def _keras_maybe_build(self, inputs):
        if self.built:
            return
        shape = _shape_of(inputs)
        if self._keras_batch_input_shape is None and \
                isinstance(shape, tf.TensorShape):
            self._keras_batch_input_shape = \
                (None,) + tuple(shape)[1:] if shape.rank else tuple(shape)
        with backend.init_scope():
            self.build(shape)
            self.built = True
        if self._keras_initial_weights is not None:
            self.set_weights(self._keras_initial_weights)
            self._keras_initial_weights = None

    def __call__(self, *args, **kwargs):
        if args:
            inputs, rest = args[0], args[1:]
        elif "inputs" in kwargs:
            inputs, rest = kwargs.pop("inputs"), ()
        else:
            raise TypeError(f"{type(self).__name__}.__call__() missing its "
                            f"`inputs` argument")
        if type(inputs) in _PLAIN_TENSORS:
            # The common case, kept short: a tensor, cast only when it is
            # a float of another precision (Keras' autocast).
            if self._keras_autocast and \
                    inputs._dtype_enum != self._keras_dtype._enum and \
                    inputs.dtype.is_floating:
                inputs = tf.cast(inputs, self._keras_dtype)
        else:
            if _contains_keras_tensor(inputs):
                from . import input_layer
                return input_layer.functional_call(self, inputs, rest,
                                                   kwargs)
            inputs = _convert_inputs(inputs, self._keras_dtype,
                                     self._keras_autocast)
        if rest and self._keras_autocast and \
                self._keras_dtype is not self._keras_variable_dtype:
            # Mixed precision casts every float tensor argument, as Keras
            # 3 does (MultiHeadAttention's value and key).
            rest = tuple(_convert_leaf(a, self._keras_dtype, True)
                         if isinstance(a, tf.Tensor) else a for a in rest)
        passes_training, default = _call_spec(type(self))
        training = kwargs.pop("training", None)
        if training is None:
            training = _ctx.training
            if training is None:
                training = default
        if isinstance(training, tf.Tensor):
            training = bool(training)
        if passes_training:
            kwargs["training"] = training
        takes_mask, computes_mask = _mask_spec(type(self))
        if (takes_mask or computes_mask or self.supports_masking) and \
                _masking_module().used[0]:
            in_mask = kwargs.get("mask") if "mask" in kwargs else \
                _masking[0].mask_of(inputs)
            if takes_mask and in_mask is not None:
                kwargs["mask"] = in_mask
        else:
            in_mask = None
        _ctx.path.append(self._name)
        try:
            if not self.built:
                self._keras_maybe_build(inputs)
        except BaseException:
            _ctx.path.pop()
            raise
        outer_training, depth = _ctx.training, _ctx.depth
        if depth == 0 and _call_losses_used[0]:
            for layer in self._flatten_layers():
                layer._keras_call_losses = []
        _ctx.training, _ctx.depth = training, depth + 1
        call = self.call
        convert = _autograph_convert()
        if convert is not None:
            # Like Keras: a layer's call() is converted by AutoGraph when
            # traced (tfmini's own layers are left as they are), so
            # Python control flow on tensors in user layers works in
            # fit() and in any tf.function that calls the model.
            call = convert(call)
        outer_cast = _ctx.autocast
        cast = None
        if outer_cast is not None or \
                self._keras_dtype is not self._keras_variable_dtype:
            cast = self._keras_autocast_scope(outer_cast)
        try:
            outputs = call(inputs, *rest, **kwargs)
        finally:
            if cast:
                for d, key, value in reversed(cast):
                    _ctx.cast_of.pop(id(d[key]), None)
                    d[key] = value
            _ctx.training, _ctx.depth = outer_training, depth
            _ctx.autocast = outer_cast
            _ctx.path.pop()
        if computes_mask or (self.supports_masking and in_mask is not None):
            _masking_module().attach(outputs,
                                     self.compute_mask(inputs, in_mask))
        if self.activity_regularizer is not None:
            self.add_loss(self.activity_regularizer(outputs) /
                          tf.cast(tf.shape(outputs)[0], outputs.dtype))
        if self._keras_output_shape is None:
            self._keras_output_shape = _output_shape(outputs)
        if self._keras_summary_shape is None:
            # Keras 3's summary shows the first call's batch size.
            self._keras_summary_shape = _output_shape(
                outputs, keep_batch=not _ctx.batch_unknown)
        return outputs

    def _keras_autocast_scope(self, outer):
        """Mixed precision (Keras' autocast scope): while call() runs,
        the trainable float weights of this layer and of its sub-layers
        read as copies cast to this layer's compute dtype, so
        `inputs @ self.kernel` (or an RNN reading `cell.kernel`)
        computes in float16 while the variables, and their gradients
        through the cast, stay float32. A sub-layer called inside with
        another compute dtype (a float32 softmax) recasts its own. Non-
        trainable weights are left alone: layers update state such as
        BatchNormalization's moving mean in call(). Returns the
        (dict, key, value) to put back."""
        target = self._keras_dtype if self._keras_autocast and \
            self._keras_dtype.is_floating else None
        _ctx.autocast = target
        # Under an enclosing layer of the same dtype, the tree's weights
        # are cast already, except the ones made since (sub-layers built
        # inside its first call): this layer's own are checked.
        layers = (self,) if target == outer else self._flatten_layers()
        saved = []
        for layer in layers:
            d = layer.__dict__
            for key, var in layer._keras_tracked.items():
                if not (backend.is_variable(var) and var.trainable and
                        var.dtype.is_floating):
                    continue
                current = d.get(key)
                if current is not var and \
                        _ctx.cast_of.get(id(current), (None,))[-1] \
                        is not var:
                    continue    # the attribute was reassigned in call()
                if target is None or var.dtype == target:
                    if current is var:
                        continue
                    value = var
                else:
                    if current is not var and current.dtype == target:
                        continue
                    value = tf.cast(var, target)
                    # (the tensor is kept too, so its id stays unique)
                    _ctx.cast_of[id(value)] = (value, var)
                saved.append((d, key, current))
                d[key] = value
        return saved

    # ---- config ------------------------------------------------------
    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": self._keras_policy.name}
        if self._keras_batch_input_shape is not None:
            config["batch_input_shape"] = self._keras_batch_input_shape
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"
