"""Batches for fit/evaluate/predict from NumPy arrays, tensors, nested
lists/dicts of them, or a tf.data.Dataset.

Arrays are kept as NumPy and sliced per batch (an index permutation per
epoch when shuffling), each batch becoming tensors once; float64 data
becomes float32 (Keras' floatx), as Keras' adapters do. A dataset is
iterated as is: each element is x, (x,), (x, y) or (x, y, sample_weight).
"""
import math

import numpy as np

import tfmini as tf

from ... import nest as _nest
from .. import backend


def _is_dataset(x):
    from ...data import Dataset
    return isinstance(x, Dataset)


def _map(fn, x):
    return _nest._map(fn, x, _is_data_list)


def _flatten(x):
    return _nest._flatten(x, _is_data_list)


def _is_data_list(x):
    """A list of numbers is data (one array), not a structure."""
    return isinstance(x, (list, tuple)) and len(x) > 0 and not any(
        isinstance(e, (np.ndarray, tf.Tensor, dict)) or
        backend.is_variable(e) for e in x) and \
        isinstance(np.asarray(x, dtype=object).flat[0],
                   (int, float, bool, np.number))


def _check_array_like(x, y, sample_weight):
    """Keras 3 takes arrays, tensors and structures of them, not Python
    numbers: fit([1, 2, 3], ...) is its ValueError, which names x."""
    for leaf in _nest.flatten((x, y, sample_weight)):
        if leaf is None or isinstance(leaf, (np.ndarray, tf.Tensor)) or \
                backend.is_variable(leaf) or _is_sparse(leaf) or \
                hasattr(leaf, "__array__"):
            continue
        raise ValueError(f"Unrecognized data type: x={x} (of type "
                         f"{type(x)})")


def _is_sparse(x):
    from ...sparse import SparseTensor
    return isinstance(x, SparseTensor)


def _rows(a):
    return int(a.dense_shape[0]) if _is_sparse(a) else len(a)


def _take_rows(a, lo, hi, idx):
    """Rows lo:hi (or the rows idx, when shuffled) as a tensor; a
    SparseTensor stays sparse, as Keras feeds it to the model."""
    if not _is_sparse(a):
        return tf.constant(a[lo:hi] if idx is None else a[idx])
    if idx is None:
        shape = [int(d) for d in a.dense_shape.numpy()]
        return tf.sparse.slice(a, [lo] + [0] * (len(shape) - 1),
                               [hi - lo] + shape[1:])
    return tf.sparse.from_dense(tf.gather(tf.sparse.to_dense(a), idx))


def _to_numpy(x):
    if x is None:
        return None
    if _is_sparse(x):
        return x
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        a = x.numpy()
    else:
        a = np.asarray(x)
    if a.dtype == np.float64:
        a = a.astype(backend.floatx())
    if a.ndim == 0:
        raise ValueError(f"Expected arrays with a batch dimension, got a "
                         f"scalar: {x!r}")
    return a


def unpack_x_y_sample_weight(data):
    """(x, y, sample_weight) from a batch: x, (x,), (x, y), (x, y, sw)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple) or hasattr(data, "_fields"):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, "
                     f"`(x, y)`, or `(x, y, sample_weight)`, found: {data}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    if y is None:
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def _class_weights(y, class_weight):
    y = np.asarray(y)
    if y.ndim > 1 and y.shape[-1] > 1:
        ids = np.argmax(y, axis=-1)
    else:
        ids = y.reshape(len(y), -1)[:, 0].astype(np.int64)
    table = np.ones(int(max(max(class_weight) + 1, ids.max() + 1)),
                    np.float32)
    for k, w in class_weight.items():
        table[int(k)] = w
    return table[ids]


def train_validation_split(arrays, validation_split):
    """Split arrays (structures allowed) at the fraction, last part for
    validation, before any shuffling (as Keras does)."""
    flat = [a for a in _flatten(arrays) if a is not None]
    n = len(flat[0])
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(
            f"Training data contains {n} samples, which is not sufficient "
            f"to split it into a validation and training set as specified "
            f"by `validation_split={validation_split}`. Either provide more "
            f"data, or a different value for the `validation_split` "
            f"argument.")

    def part(lo, hi):
        return _map(lambda a: None if a is None else a[lo:hi], arrays)
    return part(0, split_at), part(split_at, n)


class DataHandler:
    """Iterates batches for a number of epochs."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None,
                 steps_per_epoch=None, shuffle=False, class_weight=None,
                 for_predict=False):
        self._for_predict = for_predict
        self._steps_per_epoch = steps_per_epoch
        self._iterator = None
        if _is_dataset(x):
            if y is not None:
                raise ValueError("`y` argument is not supported when using "
                                 "dataset as input.")
            if sample_weight is not None:
                raise ValueError("`sample_weight` argument is not supported "
                                 "when using dataset as input.")
            self._dataset = x
            self._class_weight = class_weight
            n = None
            try:
                n = len(x)
            except TypeError:
                pass
            self.steps = steps_per_epoch if steps_per_epoch else n
            return
        self._dataset = None
        if x is None:
            raise ValueError("Expected input data `x`, got None")
        _check_array_like(x, y, sample_weight)
        self._x = _map(_to_numpy, x)
        self._y = None if y is None else _map(_to_numpy, y)
        sw = None if sample_weight is None else _to_numpy(sample_weight)
        if class_weight is not None and self._y is not None:
            if sw is not None:
                raise ValueError("`class_weight` and `sample_weight` cannot "
                                 "both be given")
            sw = _class_weights(self._y, class_weight)
        self._sw = sw
        sizes = {"x": [_rows(a) for a in _flatten(self._x)]}
        if self._y is not None:
            sizes["y"] = [_rows(a) for a in _flatten(self._y)]
        if self._sw is not None:
            sizes["sample_weight"] = [len(self._sw)]
        all_sizes = {s for v in sizes.values() for s in v}
        if len(all_sizes) != 1:
            detail = "\n".join(
                f"'{k}' sizes: {', '.join(map(str, v))}"
                for k, v in sizes.items())
            raise ValueError(f"Data cardinality is ambiguous. Make sure "
                             f"all arrays contain the same number of "
                             f"samples.\n{detail}")
        self._n = all_sizes.pop()
        if batch_size is None:
            batch_size = 32
        if int(batch_size) <= 0:
            raise ValueError(f"batch_size must be positive, got "
                             f"{batch_size}")
        self._batch_size = int(batch_size)
        self._shuffle = shuffle
        self.steps = -(-self._n // self._batch_size)
        if steps_per_epoch:
            self.steps = min(self.steps, int(steps_per_epoch))

    @property
    def num_samples(self):
        return None if self._dataset is not None else self._n

    def epoch(self):
        """An iterator over one epoch's batches (tuples of tensors)."""
        if self._dataset is not None:
            return self._dataset_epoch()
        return self._array_epoch()

    def _array_epoch(self):
        n, bs = self._n, self._batch_size
        order = np.random.permutation(n) if self._shuffle else None
        for step in range(self.steps):
            lo, hi = step * bs, min(n, (step + 1) * bs)
            idx = None if order is None else order[lo:hi]

            def take(a):
                return _take_rows(a, lo, hi, idx)
            x = _map(take, self._x)
            if self._for_predict or self._y is None:
                yield (x,)
                continue
            y = _map(take, self._y)
            if self._sw is None:
                yield (x, y)
            else:
                yield (x, y, take(self._sw))

    def _dataset_epoch(self):
        if self._steps_per_epoch:
            # A fixed number of steps per epoch continues one iterator
            # across epochs (the dataset usually repeats).
            if self._iterator is None:
                self._iterator = iter(self._dataset)
            it = self._iterator
            for _ in range(self._steps_per_epoch):
                try:
                    element = next(it)
                except StopIteration:
                    self._iterator = None
                    return
                yield self._element(element)
            return
        for element in self._dataset:
            yield self._element(element)

    def _element(self, element):
        x, y, sw = unpack_x_y_sample_weight(element)
        if self._for_predict:
            return (x,)
        if self._class_weight is not None and y is not None and sw is None:
            sw = tf.constant(_class_weights(np.asarray(y),
                                            self._class_weight))
        return pack_x_y_sample_weight(x, y, sw)
