"""keras.datasets.mnist.load_data: the MNIST files in their IDX format.

There is no network here, so nothing is downloaded: the loader reads
either Keras's `mnist.npz` or the four original IDX files (optionally
gzipped) from `path`, or from the cache directory
($KERAS_HOME or ~/.keras)/datasets/, and says where to put them when
they are missing."""
import gzip
import os
import struct

import numpy as np

_IDX_FILES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}
# IDX type codes -> NumPy dtypes (big-endian on disk).
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4",
              0x0D: ">f4", 0x0E: ">f8"}


def cache_dir():
    base = os.environ.get("KERAS_HOME",
                          os.path.join(os.path.expanduser("~"), ".keras"))
    return os.path.join(base, "datasets")


def read_idx(filename):
    """One IDX file (optionally .gz) -> NumPy array, with its header
    checked against its size so a truncated file is a clear error."""
    opener = gzip.open if filename.endswith(".gz") else open
    with opener(filename, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{filename}: not an IDX file (bad magic number)")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"{filename}: unknown IDX element type {code:#x}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{filename}: truncated IDX header")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = np.dtype(_IDX_TYPES[code])
    expect = int(np.prod(dims)) * dtype.itemsize
    if len(data) - header != expect:
        raise ValueError(f"{filename}: IDX header says {dims} "
                         f"({expect} bytes of data) but the file holds "
                         f"{len(data) - header}")
    arr = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="))


def write_idx(filename, array):
    """Write array in IDX format (used by tests to make small files)."""
    array = np.asarray(array)
    code = {v: k for k, v in _IDX_TYPES.items()}[
        array.dtype.newbyteorder(">").str if array.dtype.itemsize > 1
        else (">u1" if array.dtype.kind == "u" else ">i1")]
    opener = gzip.open if filename.endswith(".gz") else open
    with opener(filename, "wb") as f:
        f.write(bytes([0, 0, code, array.ndim]))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(array.astype(array.dtype.newbyteorder(">")).tobytes())


def _find(folder, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(folder, name)
        if os.path.exists(p):
            return p
    return None


def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)) as uint8 NumPy arrays.

    path: an `mnist.npz` file, a folder holding it or the IDX files, or
    a bare name looked up in the cache directory."""
    candidates = [path]
    if not os.path.isabs(path):
        candidates.append(os.path.join(cache_dir(), path))
    for c in candidates:
        if os.path.isfile(c) and c.endswith(".npz"):
            with np.load(c, allow_pickle=False) as f:
                return ((f["x_train"], f["y_train"]),
                        (f["x_test"], f["y_test"]))
        folder = c if os.path.isdir(c) else os.path.dirname(c) or "."
        found = {k: _find(folder, v) for k, v in _IDX_FILES.items()}
        if all(found.values()):
            arrays = {k: read_idx(p) for k, p in found.items()}
            return ((arrays["x_train"], arrays["y_train"]),
                    (arrays["x_test"], arrays["y_test"]))
    raise FileNotFoundError(
        "MNIST is not on this machine and tfmini does not download it. "
        f"Put `mnist.npz` (Keras's file) or the four IDX files "
        f"({', '.join(_IDX_FILES.values())}, optionally .gz) in "
        f"{cache_dir()} or pass load_data(path=...).")
