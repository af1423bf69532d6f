"""Rich reprs for Jupyter (IPython's _repr_html_ / _repr_pretty_) of
datasets, tf.functions and Keras models, instead of `<... at 0x...>`.
Each object gives a title and (label, text) rows; these helpers render
them as HTML (escaped) or plain text."""
import html


def to_html(title, rows):
    """A small table: the title, then one row per (label, text)."""
    out = [f"<div><b>{html.escape(title)}</b>",
           "<table style='text-align:left'>"]
    for label, text in rows:
        out.append(f"<tr><th style='vertical-align:top'>"
                   f"{html.escape(label)}</th><td><pre style='margin:0'>"
                   f"{html.escape(str(text))}</pre></td></tr>")
    out.append("</table></div>")
    return "\n".join(out)


def to_text(title, rows):
    lines = [title]
    for label, text in rows:
        text = str(text)
        if "\n" in text:
            lines.append(f"{label}:")
            lines += ["  " + t for t in text.splitlines()]
        else:
            lines.append(f"{label}: {text}")
    return "\n".join(lines)


def pretty(p, cycle, title, rows):
    """_repr_pretty_ body: IPython's printer p."""
    p.text(title if cycle else to_text(title, rows))


def dataset_rows(ds):
    """Element spec and cardinality of a dataset. tfmini datasets carry no
    static spec, so the spec is read off the first element (None when the
    dataset is empty)."""
    from .tensor_spec import TensorSpec
    from . import nest
    spec = getattr(ds, "element_spec", None)
    if spec is None:
        try:
            first = next(iter(ds))
        except StopIteration:
            first = None
        spec = None if first is None else nest.map_structure(
            lambda t: TensorSpec(tuple(t.shape), t.dtype), first)
    n = int(ds.cardinality().numpy())
    card = {-1: "infinite", -2: "unknown"}.get(n, str(n))
    return [("element_spec", repr(spec)), ("cardinality", card)]


def function_rows(fn):
    sig = fn.input_signature
    rows = [("python function", getattr(fn.python_function, "__qualname__",
                                        repr(fn.python_function))),
            ("input_signature", "None" if sig is None else repr(sig)),
            ("traces", str(fn.experimental_get_tracing_count()))]
    for i, c in enumerate(fn._traces):
        rows.append((f"concrete function {i}",
                     c.pretty_printed_signature(True)))
    return rows


def model_rows(model):
    from .keras.models.summary import summary_text
    try:
        text = summary_text(model, line_length=80)
    except Exception as e:      # an unbuilt model has no shapes yet
        text = f"(no summary yet: {e})"
    return [("summary", text.rstrip("\n"))]
