"""keras.models.clone_model: the same architecture with new layers (new,
freshly initialized weights), each made by clone_function from the
original (by default from its config)."""
from ... import nest as _nest
from ..layers.input_layer import Input, KerasTensor
from .functional import Functional
from .sequential import Sequential


def _clone_layer(layer):
    return layer.__class__.from_config(layer.get_config())


def clone_model(model, input_tensors=None, clone_function=None,
                call_function=None, recursive=False, **kwargs):
    if kwargs:
        raise ValueError(f"Unexpected keyword arguments: {sorted(kwargs)}")
    if call_function is not None or recursive:
        raise NotImplementedError("clone_model: tfmini takes no "
                                  "call_function and no recursive=True")
    fn = clone_function or _clone_layer
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, fn)
    if isinstance(model, Functional):
        return _clone_functional(model, input_tensors, fn)
    if clone_function is not None or input_tensors is not None:
        raise ValueError(
            f"Arguments `clone_function` and `input_tensors` are only "
            f"supported for Sequential models or Functional models. "
            f"Received model of type '{model.__class__.__name__}', with "
            f"clone_function={clone_function} and "
            f"input_tensors={input_tensors}")
    return model.__class__.from_config(model.get_config())


def _new_input(kt):
    # A new keras.Input with the old one's shape, dtype and name.
    node = kt._keras_node
    return Input(batch_shape=kt.shape, dtype=kt.dtype,
                 name=node.layer.name if node is not None else None)


def _clone_sequential(model, input_tensors, fn):
    layers = [fn(layer) for layer in model.layers]
    if input_tensors is not None:
        flat = _nest.flatten(input_tensors)
        if len(flat) != 1 or not isinstance(flat[0], KerasTensor):
            raise ValueError("clone_model: a Sequential model takes one "
                             "keras.Input as input_tensors")
        layers = [flat[0]] + layers
    elif model._keras_seq_input is not None:
        layers = [_new_input(model._keras_seq_input)] + layers
    return Sequential(layers, name=model.name)


def _clone_functional(model, input_tensors, fn):
    old_inputs = model._keras_inputs
    if input_tensors is None:
        new_inputs = _nest.map_structure(_new_input, old_inputs)
    else:
        new_inputs = input_tensors
        if len(_nest.flatten(new_inputs)) != len(_nest.flatten(old_inputs)):
            raise ValueError(f"clone_model: the model has "
                             f"{len(_nest.flatten(old_inputs))} inputs, "
                             f"input_tensors {len(_nest.flatten(new_inputs))}")
    values = {id(o): n for o, n in zip(_nest.flatten(old_inputs),
                                       _nest.flatten(new_inputs))}
    clones = {}            # a shared layer is cloned once, and shared
    for node in model._keras_nodes:
        layer = clones.get(id(node.layer))
        if layer is None:
            layer = clones[id(node.layer)] = fn(node.layer)
        args = _nest.map_structure(
            lambda a: values[id(a)] if isinstance(a, KerasTensor) else a,
            node.args)
        out = layer(*args, **node.kwargs)
        for old, new in zip(_nest.flatten(node.outputs), _nest.flatten(out)):
            values[id(old)] = new
    outputs = _nest.map_structure(lambda kt: values[id(kt)],
                                  model._keras_outputs)
    return Functional(new_inputs, outputs, name=model.name)
