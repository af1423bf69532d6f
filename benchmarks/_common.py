"""Helpers of the benchmarks: which implementations are here, and how to
hand them the same inputs. (Kept apart from conftest.py so that the
benchmark files can import it by name.)"""
import importlib

import numpy as np
import pytest

import tfmini


def _importable(name):
    try:
        importlib.import_module(name)
        return True
    except Exception:           # not installed, or broken: not compared
        return False


IMPLS = ["tfmini", "numpy", "tensorflow", "jax", "torch"]
AVAILABLE = {"tfmini": True, "numpy": True,
             "tensorflow": _importable("tensorflow"),
             "jax": _importable("jax"),
             "torch": _importable("torch")}


def skip_unless(*names):
    """pytest.param marks for an implementation id (e.g. "jax-jit"):
    skipped unless its framework (the id's first part) imports here."""
    def one(name):
        base = name.split("-")[0]
        have = AVAILABLE.get(base, True)
        return pytest.param(name, marks=pytest.mark.skipif(
            not have, reason=f"{base} is not installed"))
    return [one(n) for n in names]


def impl_params():
    return [pytest.param(name, id=name, marks=pytest.mark.skipif(
        not AVAILABLE[name], reason=f"{name} is not installed"))
        for name in IMPLS]


def needs_tfmini(*names):
    """Skip when tfmini lacks one of these public functions (an op that
    has not landed yet)."""
    missing = [n for n in names if not hasattr(tfmini, n)]
    return pytest.mark.skipif(bool(missing), reason=f"tfmini has no "
                              f"{', '.join(missing)} yet")


def to_impl(impl, x):
    """x (a NumPy array) as impl's tensor type."""
    if impl == "tfmini":
        return tfmini.constant(x)
    if impl == "numpy":
        return x
    if impl == "tensorflow":
        import tensorflow as tf
        return tf.constant(x)
    if impl == "jax":
        import jax.numpy as jnp
        return jnp.asarray(x)
    import torch
    return torch.from_numpy(np.ascontiguousarray(x))


def module(impl):
    if impl == "tfmini":
        return tfmini
    if impl == "numpy":
        return np
    if impl == "jax":
        return importlib.import_module("jax.numpy")
    return importlib.import_module(impl)


def synced(impl, fn):
    """fn, made to wait for its result where impl dispatches
    asynchronously (JAX returns before the work is done)."""
    if impl.split("-")[0] == "jax":
        return lambda *a: fn(*a).block_until_ready()
    return fn


def keras_models(keras):
    """The MLP and CNN every Keras benchmark trains, built with `keras`
    (tfmini's or TensorFlow's): {"mlp": builder, "cnn": builder}."""
    L = keras.layers

    def mlp():
        return keras.Sequential([keras.Input((784,)),
                                 L.Dense(128, activation="relu"),
                                 L.Dense(10)])

    def cnn():
        return keras.Sequential([
            keras.Input((8, 8, 1)),
            L.Conv2D(16, 3, padding="same", activation="relu"),
            L.MaxPooling2D(),
            L.Conv2D(32, 3, padding="same", activation="relu"),
            L.MaxPooling2D(),
            L.Flatten(),
            L.Dense(64, activation="relu"),
            L.Dense(10)])
    return {"mlp": mlp, "cnn": cnn}
