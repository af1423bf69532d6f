"""keras.Input, InputLayer and the symbolic tensors of the functional API.

keras.Input(shape) returns a KerasTensor: a shape and dtype with no
value. Calling a layer on KerasTensors builds the layer and records a
Node (layer, arguments, outputs) instead of computing; the output
KerasTensors' shapes come from running the layer once, eagerly, on a
batch of one zero example. keras.Model(inputs, outputs) then replays the
recorded nodes in order on real tensors (models/functional.py).
"""
import itertools

import numpy as np

import tfmini as tf

from ... import nest as _nest
from .. import backend
from .base import Layer, _output_shape, _unknown_batch


_tensor_ids = itertools.count()


class KerasTensor:
    """A symbolic Keras input or layer output: shape (batch dim first,
    usually None) and dtype, plus the node that produced it."""

    def __init__(self, shape, dtype="float32", node=None, index=0,
                 name=None):
        # Keras 3 shows a KerasTensor's shape as a tuple and its dtype
        # as a string.
        self.shape = tuple(tf.TensorShape(shape).as_list()) \
            if tf.TensorShape(shape).rank is not None else None
        self.dtype = tf.as_dtype(getattr(dtype, "name", dtype)).name
        self._keras_node = node
        self._keras_index = index
        if name is None:
            n = next(_tensor_ids)
            name = f"keras_tensor_{n}" if n else "keras_tensor"
        self.name = name

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)

    def __repr__(self):
        return (f"<KerasTensor shape={self.shape}, dtype={self.dtype}, "
                f"sparse=False, ragged=False, name={self.name}>")

    def __hash__(self):
        return id(self)

    def _example(self, size=1):
        """A zero tensor of this shape: an unknown batch dim 1, other
        unknown dims `size`."""
        dims = [(1 if i == 0 else size) if d is None else int(d)
                for i, d in enumerate(self.shape)]
        if tf.as_dtype(self.dtype) == tf.string:     # no zero string
            return tf.fill(dims, b"")
        return tf.zeros(dims, dtype=self.dtype)

    def __tf_tensor__(self, dtype=None, name=None):
        # A tf op given a symbolic input: Keras 3's error, word for word.
        raise ValueError(
            "A KerasTensor cannot be used as input to a TensorFlow "
            "function. A KerasTensor is a symbolic placeholder for a shape "
            "and dtype, used when constructing Keras Functional models or "
            "Keras Functions. You can only use it as input to a Keras layer "
            "or a Keras operation (from the namespaces `keras.layers` and "
            "`keras.ops`). You are likely doing something like:\n\n```\n"
            "x = Input(...)\n...\ntf_fn(x)  # Invalid.\n```\n\nWhat you "
            "should do instead is wrap `tf_fn` in a layer:\n\n```\n"
            "class MyLayer(Layer):\n    def call(self, x):\n        return "
            "tf_fn(x)\n\nx = MyLayer()(x)\n```\n")

    # Arithmetic on symbolic tensors is not recorded: say so clearly.
    def _no_op(self, *args, **kwargs):
        raise TypeError("tfmini's functional API records layer calls only; "
                        "wrap tensor arithmetic on keras.Input values in a "
                        "layer (e.g. keras.layers.Lambda-like subclass)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_op
    __truediv__ = __matmul__ = __neg__ = _no_op


class Node:
    """One layer call in a functional graph."""

    def __init__(self, layer, args, kwargs, outputs):
        self.layer = layer
        self.args = args            # (inputs, *rest), may hold KerasTensors
        self.kwargs = kwargs
        self.outputs = outputs      # nested structure of KerasTensors

    def input_tensors(self):
        return [x for x in _nest.flatten(self.args) if isinstance(x, KerasTensor)]


def functional_call(layer, inputs, rest, kwargs):
    """layer(KerasTensors): build the layer, work out the output shapes
    on a one-example batch, and return output KerasTensors."""
    args = (inputs,) + tuple(rest)

    def example(x, size=1):
        return x._example(size) if isinstance(x, KerasTensor) else x

    kw = dict(kwargs)
    kw.setdefault("training", False)
    batch_unknown = any(x.shape and x.shape[0] is None
                        for x in _nest.flatten(args) if isinstance(x, KerasTensor))
    # Unknown non-batch dims are 1 in the probe, or 32 where 1 fails (a
    # VALID 3x3 conv or a 2x2 pool over Input(shape=(None, None, 3))).
    sizes = (1, 32) if any(
        x.shape and None in x.shape[1:] for x in _nest.flatten(args)
        if isinstance(x, KerasTensor)) else (1,)
    if len(sizes) > 1 and not layer.built:
        # Built on the probe, such a layer would take the probe's sizes
        # for the unknown dims (a Dense over Input(shape=(None,)) with a
        # 1-row kernel); Keras 3 builds from the shape with its Nones.
        with backend.init_scope():
            layer._keras_maybe_build(inputs)
    first = None
    for size in sizes:
        try:
            with backend.init_scope(), _unknown_batch(batch_unknown):
                out = layer(*_nest.map_structure(
                    lambda x: example(x, size), args), **kw)
            break
        except Exception as e:  # noqa: BLE001 - retried, then re-raised
            first = first or e
            if size == sizes[-1]:
                raise first
        finally:
            # The probe's losses belong to no real call.
            layer._keras_call_losses = []
    unknown = _unknown_dims(layer, args, out, kw, example, size)
    node = Node(layer, args, dict(kwargs), None)
    counter = [0]

    def symbolic(t):
        shape = tuple(t.shape)
        if batch_unknown and shape:
            shape = (None,) + shape[1:]
        if counter[0] in unknown:
            shape = unknown[counter[0]](shape)
        kt = KerasTensor(shape, t.dtype, node, counter[0])
        counter[0] += 1
        return kt
    node.outputs = _nest.map_structure(symbolic, out)
    layer._keras_inbound.append(node)
    layer._keras_output_shape = _output_shape(node.outputs)
    layer._keras_summary_shape = _output_shape(node.outputs, keep_batch=True)
    return node.outputs


def _unknown_dims(layer, args, out, kw, example, size):
    """{output index: fn(probe shape) -> shape with None dims} for the
    outputs whose non-batch dims follow an input's unknown ones (a conv
    over Input(shape=(None, None, 3))), which the one-example probe
    gives as sizes. A single output takes the layer's own
    compute_output_shape where it has one that agrees with the probe;
    otherwise a second probe, with those input dims twice the first
    probe's `size`, shows which output dims follow them."""
    inputs = [x for x in _nest.flatten(args) if isinstance(x, KerasTensor)]
    if not any(x.shape and None in x.shape[1:] for x in inputs):
        return {}
    outs = _nest.flatten(out)
    if len(outs) == 1 and len(inputs) == 1 and \
            type(layer).compute_output_shape is not \
            Layer.compute_output_shape:
        try:
            want = tf.TensorShape(layer.compute_output_shape(
                inputs[0].shape)).as_list()
        except Exception:   # noqa: BLE001 - any failure: probe instead
            want = None
        got = tuple(outs[0].shape)
        if want is not None and len(want) == len(got) and all(
                w is None or w == g for w, g in zip(want[1:], got[1:])):
            return {0: lambda shape: shape[:1] + tuple(want[1:])}

    def example2(x):
        if not isinstance(x, KerasTensor) or not x.shape:
            return example(x)
        dims = [1 if d is None else int(d) for d in x.shape[:1]] + \
            [2 * size if d is None else int(d) for d in x.shape[1:]]
        return tf.zeros(dims, dtype=x.dtype) \
            if tf.as_dtype(x.dtype) != tf.string else tf.fill(dims, b"")
    try:
        with backend.init_scope(), _unknown_batch(True):
            again = _nest.flatten(layer(*_nest.map_structure(example2, args),
                                        **kw))
    except Exception:   # noqa: BLE001 - the first probe's shapes stand
        return {}
    finally:
        layer._keras_call_losses = []
    found = {}
    for i, (a, b) in enumerate(zip(outs, again)):
        sa, sb = tuple(a.shape), tuple(b.shape)
        if len(sa) == len(sb) and sa[1:] != sb[1:]:
            none = [k for k in range(1, len(sa)) if sa[k] != sb[k]]
            found[i] = (lambda none: lambda shape: tuple(
                None if k in none else d for k, d in enumerate(shape)))(none)
    return found


class InputLayer(Layer):
    """The layer behind keras.Input: it holds the input's shape and
    dtype and passes tensors through."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None,
                 input_tensor=None, sparse=None, name=None, ragged=None,
                 batch_input_shape=None, shape=None, batch_shape=None,
                 **kwargs):
        if shape is not None:
            input_shape = shape
        if batch_shape is not None:
            batch_input_shape = batch_shape
        if batch_input_shape is None:
            if input_shape is None:
                raise ValueError("InputLayer needs `shape` (or "
                                 "`batch_shape`)")
            if isinstance(input_shape, int):
                input_shape = (input_shape,)
            batch_input_shape = (batch_size,) + tuple(input_shape)
        super().__init__(name=name, dtype=dtype or backend.floatx(),
                         **kwargs)
        self._keras_batch_input_shape = tuple(
            None if d is None else int(d) for d in batch_input_shape)
        self.built = True
        node = Node(self, (), {}, None)
        self._keras_output = KerasTensor(self._keras_batch_input_shape,
                                         self.dtype, node, 0, name=name)
        node.outputs = self._keras_output
        self._keras_inbound.append(node)
        self._keras_output_shape = self._keras_batch_input_shape

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"batch_input_shape": self._keras_batch_input_shape,
                "dtype": self.dtype, "name": self.name}


def Input(shape=None, batch_size=None, dtype=None, sparse=None,
          ragged=None, batch_shape=None, name=None, tensor=None,
          optional=False):
    """keras.Input: a symbolic input of the given shape (without the
    batch dim) for the functional API and Sequential.

    Keras 3's signature, as TF 2.21 exports it: no `type_spec` (Keras 2's
    argument is a TypeError there too) and no other keywords."""
    if tensor is not None or optional:
        raise NotImplementedError(
            "tfmini's keras.Input takes no `tensor` and no `optional=True`")
    if shape is None and batch_shape is None:
        raise ValueError("Please provide to Input a `shape` or a "
                         "`batch_shape` argument. Note that `shape` does "
                         "not include the batch dimension.")
    if isinstance(shape, (int, np.integer)):
        # Keras 2 took Input(3) as (3,); Keras 3 (TF 2.21) refuses it.
        raise ValueError(f"Cannot convert '{shape}' to a shape.")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, name=name,
                       dtype=dtype, batch_shape=batch_shape)
    return layer._keras_output
