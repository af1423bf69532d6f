"""keras.saving: weights files (see weights_format.py for the layout)."""
import numpy as np

from . import weights_format
from .weights_format import WeightsFileError  # noqa: F401


def save_weights(model, filepath, overwrite=True):
    """Write model.weights (in order, with their names) to filepath."""
    records = [(w.name, w.numpy()) for w in model.weights]
    weights_format.write(filepath, records, overwrite=overwrite)


def load_weights(model, filepath, skip_mismatch=False, by_name=False):
    """Assign the weights stored in filepath to model.weights, matched
    in order (or by name with by_name=True). Shapes must agree, unless
    skip_mismatch, which skips those weights."""
    records = weights_format.read(filepath)
    params = model.weights
    if not params:
        raise ValueError(
            f"Cannot load weights into {model.name!r}: it has not created "
            f"its weights yet. Call the model on a batch of data (or "
            f"build() it) first, then load the weights.")
    if by_name:
        stored = {}
        for name, value in records:
            stored.setdefault(name, value)
        pairs = []
        for p in params:
            if p.name in stored:
                pairs.append((p, p.name, stored[p.name]))
            elif not skip_mismatch:
                raise ValueError(f"Weight {p.name!r} of {model.name!r} is "
                                 f"not in {filepath!r}")
    else:
        if len(records) != len(params):
            raise ValueError(
                f"Weight count mismatch: {filepath!r} holds "
                f"{len(records)} weights, model {model.name!r} has "
                f"{len(params)}. Build the same architecture before "
                f"loading.")
        pairs = [(p, name, value) for p, (name, value)
                 in zip(params, records)]
    checked = []
    for p, name, value in pairs:
        if tuple(p.shape) != value.shape:
            if skip_mismatch:
                continue
            raise ValueError(
                f"Shape mismatch loading {filepath!r}: weight {p.name!r} "
                f"has shape {tuple(p.shape)}, the file's {name!r} has "
                f"{value.shape}")
        checked.append((p, value))
    for p, value in checked:
        p.assign(np.asarray(value, dtype=p.dtype.as_numpy_dtype))
