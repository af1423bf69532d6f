"""model.summary(): the Keras table of layers, output shapes and
parameter counts."""


def _shape_text(shape):
    if shape is None:
        return "?"
    if isinstance(shape, list):
        return ", ".join(_shape_text(s) for s in shape)
    if isinstance(shape, dict):
        return ", ".join(f"{k}: {_shape_text(v)}" for k, v in shape.items())
    dims = ", ".join("None" if d is None else str(d) for d in shape)
    return f"({dims},)" if len(shape) == 1 else f"({dims})"


def _count(weights):
    total = 0
    for w in weights:
        n = 1
        for d in w.shape:
            n *= int(d)
        total += n
    return total


def _bytes(weights):
    total = 0
    for w in weights:
        n = w.dtype.size if hasattr(w.dtype, "size") else 4
        for d in w.shape:
            n *= int(d)
        total += n
    return total


def _size_text(nbytes):
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


def _rows(model, expand_nested, prefix=""):
    """(name (type), output shape, parameter count, layer) per layer."""
    from ..layers.input_layer import InputLayer
    for layer in model.layers:
        shape = layer._keras_output_shape
        if isinstance(layer, InputLayer):
            shape = layer._keras_batch_input_shape
        yield (f"{prefix}{layer.name} ({type(layer).__name__})",
               _shape_text(shape), f"{_count(layer.weights):,}", layer)
        if expand_nested and hasattr(layer, "layers"):
            yield from _rows(layer, expand_nested, prefix + "  ")


def print_summary(model, line_length=None, positions=None, print_fn=None,
                  expand_nested=False, show_trainable=False):
    if not model.built:
        raise ValueError(
            "This model has not yet been built. Build the model first by "
            "calling `build()` or by calling the model on a batch of data.")
    print_fn = print_fn or print
    if positions is None and line_length is None:
        # Keras' 65 columns, widened so that no name or shape is cut.
        rows = list(_rows(model, expand_nested))
        w1 = max([29] + [len(r[0]) + 2 for r in rows])
        w2 = max([26] + [len(r[1]) + 2 for r in rows])
        positions = [w1, w1 + w2, w1 + w2 + 10]
        line_length = positions[-1]
    line_length = line_length or 65
    positions = list(positions or [0.45, 0.85, 1.0])
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    headers = ["Layer (type)", "Output Shape", "Param #"]
    if show_trainable:
        line_length += 11
        positions.append(line_length)
        headers.append("Trainable")

    def row(fields):
        line = ""
        for i, field in enumerate(fields):
            width = positions[i] - (positions[i - 1] if i else 0)
            text = " " + str(field)
            if len(text) > width - 1:
                text = text[:width - 2] + "…"
            line += text.ljust(width)
        print_fn(line)


    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    row(headers)
    print_fn("=" * line_length)
    for name, shape, count, layer in _rows(model, expand_nested):
        fields = [name, shape, count]
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        row(fields)
    print_fn("=" * line_length)
    trainable = model.trainable_weights
    non_trainable = model.non_trainable_weights
    total = _count(trainable) + _count(non_trainable)
    print_fn(f"Total params: {total:,} "
             f"({_size_text(_bytes(trainable) + _bytes(non_trainable))})")
    print_fn(f"Trainable params: {_count(trainable):,} "
             f"({_size_text(_bytes(trainable))})")
    print_fn(f"Non-trainable params: {_count(non_trainable):,} "
             f"({_size_text(_bytes(non_trainable))})")
    print_fn("_" * line_length)
