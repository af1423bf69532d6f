"""keras.saving: whole models in Keras 3's '.keras' format
(keras_file.py), weights files in Keras 3's '.weights.h5' layout
(h5_weights.py) or tfmini's own (weights_format.py), and the registry
of custom objects."""
import os

import numpy as np

from . import weights_format
from .keras_file import load_model, save_model  # noqa: F401
from .object_registration import (  # noqa: F401
    CustomObjectScope, custom_object_scope, get_custom_objects,
    get_registered_name, get_registered_object,
    register_keras_serializable)
from .serialization import (  # noqa: F401
    deserialize_keras_object, serialize_keras_object)
from .weights_format import WeightsFileError  # noqa: F401

_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


def _is_h5_name(filepath):
    return os.fspath(filepath).endswith((".h5", ".hdf5"))


def save_weights(model, filepath, overwrite=True):
    """Write the weights to filepath: Keras 3's layout for '.weights.h5'
    (or any '.h5'), else tfmini's format with the weights in order."""
    if _is_h5_name(filepath):
        return _save_weights_h5(model, filepath, overwrite)
    records = [(_key(w), w.numpy()) for w in model.weights]
    weights_format.write(filepath, records, overwrite=overwrite)


def _key(w):
    """A weight's name in the file: its Keras path ('model/dense/kernel');
    a plain tf.Variable's name without ':0'."""
    key = getattr(w, "path", None) or w.name
    return key[:-2] if key.endswith(":0") else key


def _stored_lookup(stored, p):
    """The stored value for weight p by name: its path, or, for files
    written before weights had paths ('dense/kernel:0'), the layer and
    weight names at the end of it."""
    key = _key(p)
    if key in stored:
        return key
    short = "/".join(key.split("/")[-2:])
    return short if short in stored else None


def load_weights(model, filepath, skip_mismatch=False, by_name=False):
    """Assign the weights stored in filepath to model.weights, matched
    in order (or by name with by_name=True). Shapes must agree, unless
    skip_mismatch, which skips those weights."""
    with open(os.fspath(filepath), "rb") as f:
        is_h5 = f.read(8) == _HDF5_MAGIC
    if is_h5:
        if by_name:
            raise ValueError("load_weights: by_name=True applies to "
                             "tfmini's weights format; a '.weights.h5' "
                             "file is matched by layer paths already")
        from ._h5 import h5py
        from . import h5_weights
        with h5py().File(os.fspath(filepath), "r") as f:
            h5_weights.read(model, f, os.fspath(filepath),
                            skip_mismatch=skip_mismatch)
        return
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
            stored.setdefault(name[:-2] if name.endswith(":0") else name,
                              value)
        pairs = []
        for p in params:
            key = _stored_lookup(stored, p)
            if key is not None:
                pairs.append((p, key, stored[key]))
            elif not skip_mismatch:
                raise ValueError(f"Weight {_key(p)!r} of {model.name!r} is "
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
                f"Shape mismatch loading {filepath!r}: weight {_key(p)!r} "
                f"has shape {tuple(p.shape)}, the file's {name!r} has "
                f"{value.shape}")
        checked.append((p, value))
    for p, value in checked:
        p.assign(np.asarray(value, dtype=p.dtype.as_numpy_dtype),
                 read_value=False)


def _save_weights_h5(model, filepath, overwrite):
    import io
    from ._h5 import h5py
    from . import h5_weights
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path!r} exists and overwrite=False")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"Cannot save weights to {path!r}: the "
                                f"folder {folder!r} does not exist")
    buf = io.BytesIO()
    with h5py().File(buf, "w") as f:
        h5_weights.write(model, f)
    from ... import _C
    _C.write_file_atomic(path, buf.getvalue(), "save_weights")
