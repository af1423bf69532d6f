"""Functional models: keras.Model(inputs, outputs) over the layer calls
recorded on keras.Input tensors (see layers/input_layer.py)."""
from ... import nest as _nest
from ..layers.input_layer import InputLayer, KerasTensor
from .model import Model


def _topological_nodes(inputs, outputs):
    """The nodes between inputs and outputs, each after the nodes that
    produce its inputs."""
    given = {id(kt) for kt in _nest.flatten(inputs)}
    order, done, active = [], set(), set()

    def visit(kt):
        if id(kt) in given:
            return
        node = kt._keras_node
        if node is None or isinstance(node.layer, InputLayer):
            where = node.layer.name if node is not None else "?"
            raise ValueError(
                f"Graph disconnected: cannot obtain value for tensor {kt} "
                f"at layer {where!r}. It is not one of the model's inputs.")
        if id(node) in done:
            return
        if id(node) in active:
            raise ValueError("The functional graph has a cycle")
        active.add(id(node))
        for t in node.input_tensors():
            visit(t)
        active.discard(id(node))
        done.add(id(node))
        order.append(node)
    for kt in _nest.flatten(outputs):
        if not isinstance(kt, KerasTensor):
            raise TypeError(f"Model outputs must be outputs of layers "
                            f"called on keras.Input, got {kt!r}")
        visit(kt)
    return order


class Functional(Model):
    """A model defined by calling layers on keras.Input tensors."""

    def __init__(self, inputs, outputs, name=None, trainable=True,
                 **kwargs):
        super().__init__(name=name, trainable=trainable, **kwargs)
        for kt in _nest.flatten(inputs):
            if not isinstance(kt, KerasTensor) or \
                    not isinstance(getattr(kt._keras_node, "layer", None),
                                   InputLayer):
                raise ValueError(f"Model inputs must come from keras.Input,"
                                 f" got {kt!r}")
        self._keras_inputs = inputs
        self._keras_outputs = outputs
        self._keras_nodes = _topological_nodes(inputs, outputs)
        layers = [kt._keras_node.layer for kt in _nest.flatten(inputs)]
        for node in self._keras_nodes:
            if not any(node.layer is l for l in layers):
                layers.append(node.layer)
        self._functional_layers = layers
        first = _nest.flatten(inputs)[0]
        self._keras_batch_input_shape = tuple(first.shape)
        self.built = True

    @property
    def inputs(self):
        return _nest.flatten(self._keras_inputs)

    @property
    def outputs(self):
        return _nest.flatten(self._keras_outputs)

    @property
    def input(self):
        return self._keras_inputs

    @property
    def output(self):
        return self._keras_outputs

    @property
    def output_shape(self):
        shapes = _nest.map_structure(lambda kt: tuple(kt.shape), self._keras_outputs)
        return shapes

    def call(self, inputs, training=None, mask=None):
        values = {}
        flat_kt = _nest.flatten(self._keras_inputs)
        flat_x = _nest.flatten(inputs) if isinstance(inputs, (list, tuple, dict)) \
            else [inputs]
        if len(flat_x) != len(flat_kt):
            raise ValueError(f"Model {self.name!r} expects {len(flat_kt)} "
                             f"input(s), got {len(flat_x)}")
        for kt, x in zip(flat_kt, flat_x):
            values[id(kt)] = x
        for node in self._keras_nodes:
            args = _nest.map_structure(lambda a: values[id(a)]
                        if isinstance(a, KerasTensor) else a, node.args)
            kwargs = dict(node.kwargs)
            kwargs.setdefault("training", training)
            out = node.layer(*args, **kwargs)
            for kt, o in zip(_nest.flatten(node.outputs), _nest.flatten(out)):
                values[id(kt)] = o
        outputs = self._keras_outputs
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            # Keras 3 hands a lone output back bare, even if given as [x].
            outputs = outputs[0]
        return _nest.map_structure(lambda kt: values[id(kt)], outputs)
