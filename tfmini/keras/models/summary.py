"""model.summary(): the table of layers, output shapes and parameter
counts that Keras 3 (tf.keras in TF 2.21) prints.

Keras 3 draws it with box characters, in a table whose width follows the
terminal: at most 88 columns (108 for models that are not a plain chain,
which get a "Connected to" column; 12 more with show_trainable), and at
most the terminal's width less 4 (76 when the output is not a terminal).
Column shares come from `positions`; each cell gets one space of padding
on either side, and the columns are then shrunk evenly, left to right,
until the table with its borders fits `line_length`. Text wraps at
spaces; a word longer than its cell is cut with "…". Lines longer than
the console (the terminal's width, else 80) are cropped.
"""
import math
import os
import re
import shutil
import sys

_SEQUENTIAL_WIDTH = 88
_GRAPH_WIDTH = 108
_TRAINABLE_EXTRA = 12


# ---- numbers ---------------------------------------------------------
def _count(weights):
    return sum(math.prod(int(d) for d in w.shape) for w in weights)


def _nbytes(weights):
    seen, total = set(), 0
    for w in weights:
        if id(w) in seen:
            continue
        seen.add(id(w))
        size = getattr(w.dtype, "size", 4)
        total += math.prod(int(d) for d in w.shape) * size
    return total


def _size_text(nbytes):
    value = float(nbytes)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value / 1024 < 1:
            return f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} PB"


# ---- cells -----------------------------------------------------------
def _shape_text(shape):
    if shape is None:
        return "?"
    if isinstance(shape, dict):
        if len(shape) == 1:
            return _shape_text(next(iter(shape.values())))
        return "{" + ", ".join(f"{k}: {_shape_text(v)}"
                               for k, v in shape.items()) + "}"
    if isinstance(shape, list):
        if len(shape) == 1:
            return _shape_text(shape[0])
        return "[" + ", ".join(_shape_text(s) for s in shape) + "]"
    # Keras 3 joins the dims without a trailing comma: (None) for rank 1.
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _layer_shape(layer):
    from ..layers.input_layer import InputLayer
    if isinstance(layer, InputLayer):
        return _shape_text(layer._keras_batch_input_shape)
    return _shape_text(layer._keras_summary_shape)


def _params_text(layer):
    if not layer.built:
        return "0 (unbuilt)"
    return f"{_count(layer.weights):,}"


def _wrap(text, width):
    """The lines of text in a cell of `width` characters: words fill
    lines greedily; a word wider than the cell ends in '…'."""
    lines, line, used = [], "", 0
    for word in re.findall(r"\s*\S+\s*", text) or [""]:
        need = len(word.rstrip())
        if width - used >= need:
            line += word
            used += len(word)
        else:
            if line:
                lines.append(line)
            line, used = word, len(word)
    lines.append(line)
    out = []
    for line in lines:
        line = line.rstrip()
        if len(line) > width:
            line = line[:max(width - 1, 0)] + "…"
        out.append(line)
    return out


def _justify(text, width, how):
    if how == "right":
        return text.rjust(width)
    if how == "center":
        left = (width - len(text)) // 2
        return (" " * left + text).ljust(width)
    return text.ljust(width)


# ---- layout ----------------------------------------------------------
def _columns(line_length, positions):
    """Cell widths (padding included) of a table line_length wide."""
    widths, done = [], 0
    for pos in positions:
        w = int(pos * line_length) - done
        if w < 4:
            raise ValueError("Insufficient console width to print summary.")
        widths.append(w)
        done += w
    room = line_length - (len(widths) + 1)      # less the borders
    widths = [min(w + 2, room) for w in widths]
    over = sum(widths) - room
    if over > 0:
        # Take the excess evenly, left to right (round half to even).
        left, n = over, len(widths)
        for i, w in enumerate(widths):
            cut = min(w, round(left / (n - i)))
            widths[i] = w - cut
            left -= cut
    elif over < 0:
        # Give the spare room out in proportion to the widths.
        spare, total = -over, sum(widths)
        for i, w in enumerate(widths):
            extra = math.ceil(w * spare / total) if total > 0 else spare
            widths[i] = w + extra
            total -= w
            spare -= extra
    return widths


def _rule(widths, left, fill, mid, right):
    return left + mid.join(fill * w for w in widths) + right


def _table(headers, aligns, rows, widths):
    def block(cells, bottom):
        wrapped = [_wrap(c, w - 2) for c, w in zip(cells, widths)]
        height = max(len(c) for c in wrapped)
        if bottom:
            wrapped = [[""] * (height - len(c)) + c for c in wrapped]
        else:
            wrapped = [c + [""] * (height - len(c)) for c in wrapped]
        return [[" " + _justify(c[i], w - 2, a) + " "
                 for c, w, a in zip(wrapped, widths, aligns)]
                for i in range(height)]

    out = [_rule(widths, "┏", "━", "┳", "┓")]
    out += ["┃" + "┃".join(line) + "┃" for line in block(headers, True)]
    out.append(_rule(widths, "┡", "━", "╇", "┩"))
    for i, row in enumerate(rows):
        if i:
            out.append(_rule(widths, "├", "─", "┼", "┤"))
        out += ["│" + "│".join(line) + "│" for line in block(row, False)]
    out.append(_rule(widths, "└", "─", "┴", "┘"))
    return out


def _console_width():
    """The width output is cropped to: $COLUMNS, else the terminal's,
    else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for stream in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
        try:
            return os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            continue
    return 80


# ---- the model -------------------------------------------------------
def _is_chain(model):
    """Whether a functional model is a plain chain of single-input
    layers (then Keras leaves out the 'Connected to' column)."""
    nodes = getattr(model, "_keras_nodes", None)
    if nodes is None:
        return True
    from ...nest import flatten as _flatten
    inputs = _flatten(model._keras_inputs)
    if len(inputs) != 1 or len(_flatten(model._keras_outputs)) != 1:
        return False
    previous, seen = inputs, set()
    for node in nodes:
        if id(node.layer) in seen:
            return False
        seen.add(id(node.layer))
        ins = node.input_tensors()
        if len(ins) != 1 or not any(ins[0] is p for p in previous):
            return False
        previous = _flatten(node.outputs)
    return True


def _connections(layer, model):
    """'producer[node][tensor]' for each input of the layer's calls
    inside this model."""
    ours = {id(n) for n in model._keras_nodes}
    parts = []
    for node in layer._keras_inbound:
        if id(node) not in ours:
            continue
        for kt in node.input_tensors():
            src = kt._keras_node
            index = next((i for i, n in enumerate(src.layer._keras_inbound)
                          if n is src), 0)
            parts.append(f"{src.layer.name}[{index}][{kt._keras_index}]")
    return ", ".join(parts) or "-"


def _layer_rows(model, layers, chain, expand_nested, show_trainable,
                level=0):
    rows = []
    for layer in layers:
        prefix = "   " * level + "└ " if level else ""
        row = [f"{prefix}{layer.name} ({type(layer).__name__})",
               _layer_shape(layer), _params_text(layer)]
        if not chain:
            row.append(_connections(layer, model) if level == 0 else "-")
        if show_trainable:
            if layer.weights:
                row.append("Y" if layer.trainable else "N")
            else:
                row.append("-")
        rows.append(row)
        inner = getattr(layer, "layers", None)
        if expand_nested and inner:
            rows += _layer_rows(layer, inner, chain, expand_nested,
                                show_trainable, level + 1)
    return rows


def _layer_slice(layers, layer_range):
    if layer_range is None:
        return layers
    if len(layer_range) != 2:
        raise ValueError(f"layer_range must be a list or tuple of length 2. "
                         f"Received: layer_range = {layer_range} of length "
                         f"{len(layer_range)}")
    names = [layer.name for layer in layers]
    bounds = []
    for i, pattern in enumerate(layer_range):
        hits = [j for j, n in enumerate(names) if re.match(pattern, n)]
        if not hits:
            raise ValueError(f"Passed layer_names do not match the layer "
                             f"names in the model. Received: {layer_range}")
        bounds.append(hits[0] if i == 0 else hits[-1] + 1)
    return layers[bounds[0]:bounds[1]]


def summary_text(model, line_length=None, positions=None,
                 expand_nested=False, show_trainable=False,
                 layer_range=None):
    """The summary as one string, every line ending in a newline."""
    chain = _is_chain(model)
    headers = ["Layer (type)", "Output Shape", "Param #"]
    aligns = ["left", "left", "right"]
    if chain:
        default = _SEQUENTIAL_WIDTH
        positions = positions or [0.45, 0.80, 1.0]
    else:
        default = _GRAPH_WIDTH
        positions = positions or [0.3, 0.56, 0.74, 1.0]
        headers.append("Connected to")
        aligns.append("left")
    if show_trainable:
        default += _TRAINABLE_EXTRA
        positions = [p * 0.90 for p in positions] + [1.0]
        headers.append("Trainable")
        aligns.append("center")
    default = min(default, shutil.get_terminal_size().columns - 4)
    line_length = line_length or default
    widths = _columns(line_length, positions)

    layers = _layer_slice(list(model.layers), layer_range)
    rows = _layer_rows(model, layers, chain, expand_nested, show_trainable)
    lines = [f'Model: "{model.name}"']
    lines += _table(headers, aligns, rows, widths)

    trainable = model.trainable_weights
    frozen = model.non_trainable_weights
    optimizer = getattr(model, "optimizer", None)
    opt_vars = []
    if getattr(model, "_keras_compiled", False) and optimizer is not None \
            and getattr(optimizer, "built", False):
        opt_vars = list(optimizer.variables)
    total = _count(trainable) + _count(frozen) + _count(opt_vars)
    total_bytes = _nbytes(trainable) + _nbytes(frozen) + _nbytes(opt_vars)
    lines.append(f" Total params: {total:,} ({_size_text(total_bytes)})")
    lines.append(f" Trainable params: {_count(trainable):,} "
                 f"({_size_text(_nbytes(trainable))})")
    lines.append(f" Non-trainable params: {_count(frozen):,} "
                 f"({_size_text(_nbytes(frozen))})")
    if opt_vars:
        lines.append(f" Optimizer params: {_count(opt_vars):,} "
                     f"({_size_text(_nbytes(opt_vars))})")
    crop = _console_width()
    return "".join(line[:crop] + "\n" for line in lines)


def print_summary(model, line_length=None, positions=None, print_fn=None,
                  expand_nested=False, show_trainable=False,
                  layer_range=None):
    text = summary_text(model, line_length=line_length, positions=positions,
                        expand_nested=expand_nested,
                        show_trainable=show_trainable,
                        layer_range=layer_range)
    if print_fn is None:
        sys.stdout.write(text)
    else:
        # As Keras 3: print_fn gets the whole table in one call.
        print_fn(text)
