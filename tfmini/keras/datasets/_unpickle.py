"""A restricted unpickler for the dataset files Keras ships as pickles
(CIFAR batches, IMDB's ragged sequences): it rebuilds dicts, lists,
bytes and NumPy arrays and refuses every other global, so a hostile
file cannot run code (Keras 3 reads them the same way)."""
import pickle

_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("builtins", "list"),
    # Protocol-2 pickles written by Python 3 spell bytes this way.
    ("_codecs", "encode"),
}


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refusing to load {module}.{name} from a dataset file (only "
            f"NumPy arrays and plain containers are allowed)")


def load(f, **kwargs):
    return RestrictedUnpickler(f, **kwargs).load()
