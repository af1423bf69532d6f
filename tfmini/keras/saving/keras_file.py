"""The `.keras` file of model.save / keras.models.load_model: Keras 3's
zip archive (keras/src/saving/saving_lib.py, Keras 3.15) holding

    metadata.json     {"keras_version", "date_saved"}
    config.json       the model, serialized (serialization.py)
    model.weights.h5  its variables (h5_weights.py)

Loading rebuilds the model from config.json (classes are looked up by
name, never unpickled: no code in the file runs) and assigns the
weights. Keras 3's legacy `.h5` whole-model format and SavedModel
folders are refused with a message naming the alternatives."""
import datetime
import io
import json
import os
import zipfile

from . import h5_weights
from .serialization import deserialize_keras_object, serialize_keras_object

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = "model.weights.h5"
# The Keras version whose layout this mirrors, written as keras_version
# so Keras reads the file as its own.
KERAS_VERSION = "3.15.1"
_MAX_JSON = 64 << 20


from ._h5 import h5py as _h5py


def _check_suffix(filepath, what):
    path = os.fspath(filepath)
    if path.endswith(".keras"):
        return path
    if path.endswith(".h5") or path.endswith(".hdf5"):
        raise ValueError(
            f"{what}: {path!r} asks for the legacy HDF5 whole-model format, "
            f"which tfmini does not write or read (Keras 3 keeps it only "
            f"for old files). Use a '.keras' file, or "
            f"model.save_weights('w.weights.h5') for the weights alone.")
    raise ValueError(
        f"{what}: the file name must end in '.keras' (got {path!r}). For a "
        f"SavedModel that C and serving code can load, use "
        f"tf.saved_model.save(model, folder).")


def save_model(model, filepath, overwrite=True, zipped=True, **kwargs):
    """Write model to filepath ('.keras')."""
    path = _check_suffix(filepath, "model.save")
    if not zipped:
        raise ValueError("model.save: only zipped '.keras' files are "
                         "supported (zipped=False is not)")
    if kwargs.get("save_format") not in (None, "keras"):
        raise ValueError(f"model.save: unsupported save_format "
                         f"{kwargs['save_format']!r}; use '.keras'")
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path!r} exists and overwrite=False")
    config = serialize_keras_object(model)
    compile_config = _compile_config(model)
    if compile_config is not None:
        config["compile_config"] = compile_config
    metadata = {"keras_version": KERAS_VERSION,
                "date_saved": datetime.datetime.now().strftime(
                    "%Y-%m-%d@%H:%M:%S")}
    h5py = _h5py()
    weights = io.BytesIO()
    with h5py.File(weights, "w") as f:
        h5_weights.write(model, f)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(METADATA, json.dumps(metadata))
        zf.writestr(CONFIG, json.dumps(config))
        zf.writestr(WEIGHTS, weights.getvalue())
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"model.save: the folder {folder!r} does "
                                f"not exist")
    from ... import _C
    _C.write_file_atomic(path, buf.getvalue(), "model.save")


def _compile_config(model):
    if not getattr(model, "_keras_compiled", False):
        return None
    loss = getattr(model, "loss", None)
    opt = getattr(model, "optimizer", None)

    def plain(x):
        if x is None or isinstance(x, str):
            return x
        try:
            return serialize_keras_object(x)
        except TypeError:
            return None
    return {"optimizer": plain(opt), "loss": plain(loss),
            "loss_weights": None, "metrics": None,
            "weighted_metrics": None, "run_eagerly": False,
            "steps_per_execution": 1, "jit_compile": False}


def _read_member(zf, name, path, limit):
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise ValueError(f"load_model: {path!r} is not a Keras file: it "
                         f"has no {name}") from None
    if info.file_size > limit:
        raise ValueError(f"load_model: {name} in {path!r} is "
                         f"{info.file_size} bytes, over the {limit}-byte "
                         f"limit")
    return zf.read(name)


def load_model(filepath, custom_objects=None, compile=True,
               safe_mode=True):
    """The model saved at filepath ('.keras', by tfmini or Keras 3)."""
    path = _check_suffix(filepath, "load_model")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_model: no file at {path!r}")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"load_model: {path!r} is not a '.keras' zip "
                         f"archive")
    h5py = _h5py()
    with zipfile.ZipFile(path) as zf:
        try:
            config = json.loads(_read_member(zf, CONFIG, path, _MAX_JSON))
        except json.JSONDecodeError as e:
            raise ValueError(f"load_model: config.json in {path!r} is not "
                             f"valid JSON: {e}") from None
        weights = _read_member(zf, WEIGHTS, path, 1 << 40)
    model = deserialize_keras_object(config, custom_objects)
    try:
        f = h5py.File(io.BytesIO(weights), "r")
    except OSError as e:
        raise ValueError(f"load_model: {WEIGHTS} in {path!r} is not a "
                         f"readable HDF5 file ({e})") from None
    with f:
        if not model.weights and _has_datasets(f):
            raise ValueError(f"load_model: the model in {path!r} was "
                             f"rebuilt without weights (it has no "
                             f"build_config); cannot load its weights")
        if model.weights:
            if compile:
                _compile(model, config.get("compile_config"),
                         custom_objects)
                _build_optimizer(model)
            h5_weights.read(model, f, path)
    return model


def _has_datasets(f):
    found = []
    f.visititems(lambda n, o: found.append(n) if hasattr(o, "shape")
                 else None)
    return bool(found)


def _compile(model, compile_config, custom_objects):
    if not compile_config:
        return
    opt = compile_config.get("optimizer")
    loss = compile_config.get("loss")
    try:
        if isinstance(opt, dict):
            opt = deserialize_keras_object(opt, custom_objects)
        if isinstance(loss, dict):
            loss = deserialize_keras_object(loss, custom_objects)
        model.compile(optimizer=opt or "rmsprop", loss=loss)
    except (TypeError, ValueError) as e:
        import warnings
        warnings.warn(f"load_model: the model was loaded but not compiled "
                      f"({e}); call model.compile() yourself")


def _build_optimizer(model):
    """Create the optimizer's slots so its saved state can load."""
    opt = getattr(model, "optimizer", None)
    if opt is None or not hasattr(opt, "build"):
        return
    try:
        opt.build(model.trainable_variables)
    except Exception:      # some optimizers build lazily only
        pass
