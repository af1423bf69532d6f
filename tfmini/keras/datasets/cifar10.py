"""keras.datasets.cifar10.load_data from Keras's cache: the python
version's pickled batches (data_batch_1..5, test_batch: dicts of
b"data" (n, 3072) uint8 and b"labels"), in the folder Keras 3 extracts
them to, <KERAS_HOME>/datasets/cifar-10-batches-py-target/
cifar-10-batches-py/ (Keras 2 / tf.keras used datasets/
cifar-10-batches-py/: read too). Unpickled with a restricted unpickler
(_unpickle.py)."""
import os

import numpy as np

from . import _unpickle
from ..utils.file_utils import get_file, keras_home

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
_BATCHES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


def load_batch(fpath, label_key="labels"):
    """(data (n, 3, 32, 32) uint8, labels) of one pickled batch."""
    with open(fpath, "rb") as f:
        d = _unpickle.load(f, encoding="bytes")
    d = {k.decode("utf8") if isinstance(k, bytes) else k: v
         for k, v in d.items()}
    data = np.asarray(d["data"], dtype=np.uint8)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ValueError(f"{fpath}: data has shape {data.shape}, expected "
                         f"(n, 3072)")
    return data.reshape(data.shape[0], 3, 32, 32), d[label_key]


def _folder():
    old = os.path.join(keras_home(), "datasets", "cifar-10-batches-py")
    if os.path.isfile(os.path.join(old, "test_batch")):
        return old
    return os.path.join(get_file(fname="cifar-10-batches-py-target",
                                 origin=_ORIGIN, extract=True),
                        "cifar-10-batches-py")


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images (n, 32, 32,
    3) channels last and uint8 labels (n, 1)."""
    path = _folder()
    missing = [b for b in _BATCHES
               if not os.path.isfile(os.path.join(path, b))]
    if missing:
        raise FileNotFoundError(f"cifar10: {path} lacks {missing}; it must "
                                f"hold the extracted "
                                f"cifar-10-python.tar.gz batches")
    parts = [load_batch(os.path.join(path, b)) for b in _BATCHES]
    x_train = np.concatenate([p[0] for p in parts[:5]])
    y_train = np.concatenate([np.asarray(p[1], np.uint8)
                              for p in parts[:5]])
    x_test, y_test = parts[5][0], np.asarray(parts[5][1], np.uint8)
    return ((x_train.transpose(0, 2, 3, 1), y_train.reshape(-1, 1)),
            (x_test.transpose(0, 2, 3, 1), y_test.reshape(-1, 1)))
