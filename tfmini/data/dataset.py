"""tf.data.Dataset: a small, eager re-implementation.

Structures are tuples, namedtuples and dicts; lists are data (as in
tf.data, where a list becomes one tensor).

Elements are nested structures (tuples, lists, dicts) of tensors. Sources
keep their data as NumPy arrays and slice them lazily, so a batch is one
NumPy slice and one tensor conversion per component. Functions given to
map() run eagerly on tensors (TF traces them; the values are the same,
but Python side effects run per element here)."""
import itertools

import numpy as np

from .. import nest as _nest
from .. import trackable as _trackable
from ..composite_tensor import CompositeTensor as _CompositeTensor
from . import map_trace as _map_trace
from .transforms import (DatasetOpsMixin, composite_slice_spec,
                         stack_rows)

AUTOTUNE = -1


class _Iterator(_trackable.Trackable):
    """iter(dataset). An iterator made eagerly and then pulled with
    next() inside a tf.function takes the next element on each call, by
    a node that pulls it from Python (Note [Iterators pulled in a graph]
    in traced_next.py). A Python loop over it while tracing would never
    end, so that is an error; `for x in ds` inside the function is a
    graph loop over the dataset instead (Note [Dataset loops in a graph]
    in traced_next.py)."""

    __slots__ = ("_it", "_traced", "_dataset", "_count")

    def __init__(self, it, dataset=None):
        from .. import _C
        self._it = it
        self._traced = _C.tracing()
        self._dataset = dataset
        self._count = 0

    # Checkpoints (TF's _serialize_to_tensors protocol, see
    # tfmini/train/checkpoint.py): the position is the number of elements
    # read; restoring starts the dataset again and skips that many, which
    # gives TF's next element for the deterministic pipelines tfmini
    # builds (shuffles draw from seeds; see tf.data's own caveat about
    # unseeded ones).
    def _trackable_children(self):
        return []

    def _serialize_to_tensors(self):
        if self._dataset is None:
            raise NotImplementedError(
                "this tf.data iterator cannot be checkpointed: it was not "
                "made by iter(dataset)")
        return {"ITERATOR_STATE": np.array([self._count], np.int64)}

    def _restore_from_tensors(self, tensors):
        count = int(np.asarray(tensors["ITERATOR_STATE"]).reshape(-1)[0])
        it = self._dataset._make_iter()
        for _ in itertools.islice(it, count):
            pass
        self._it = it
        self._count = count

    def get_next_as_optional(self):
        """The next element as an Optional, empty at the end."""
        from .optional import Optional
        if self._outside_while_tracing():
            from . import traced_next
            spec = traced_next.pull_spec(self)
            if spec is not None:
                return traced_next.traced_optional(self._pull, spec)
        try:
            return Optional.from_value(self.__next__())
        except StopIteration:
            spec = self._dataset.element_spec if self._dataset is not None \
                else None
            return Optional.empty(spec)

    def _outside_while_tracing(self):
        from .. import _C
        return not self._traced and _C.tracing()

    def __iter__(self):
        if self._outside_while_tracing():
            raise NotImplementedError(
                "a Python loop over a tf.data iterator made outside a "
                "tf.function, while tracing it, would never end in "
                "tfmini (its graphs have no iterator loop): call next() "
                "on it, or iterate the dataset inside the function (for x "
                "in dataset)")
        return self

    def __next__(self):
        if self._outside_while_tracing():
            from . import traced_next
            spec = traced_next.pull_spec(self)
            if spec is None:
                raise NotImplementedError(
                    "next() on a tf.data iterator made outside a "
                    "tf.function, while tracing it: tfmini pulls elements "
                    "of plain numeric or bool tensors in a graph, and "
                    "this dataset's are not. Iterate the dataset inside "
                    "the function (for x in dataset), or call next() "
                    "outside and pass the element in.")
            return traced_next.traced_next(self._pull, spec)
        return self._pull()

    def _pull(self):
        value = next(self._it)
        self._count += 1
        return value

    def get_next(self):
        return self.__next__()

    next = get_next     # TF's OwnedIterator.next()


class experimental:  # noqa: N801  (TF's namespace name)
    AUTOTUNE = AUTOTUNE

    @staticmethod
    def dense_to_ragged_batch(batch_size, drop_remainder=False,
                              row_splits_dtype=None):
        """The older spelling of Dataset.ragged_batch, for .apply()."""
        def apply(ds):
            return ds.ragged_batch(batch_size, drop_remainder,
                                   row_splits_dtype)
        return apply


def _to_tensor(x):
    from ..ops.constant_op import constant
    if isinstance(x, _CompositeTensor):
        return x
    return constant(x)


def _dim0(a):
    """The size of a's first dim (None for a scalar)."""
    if isinstance(a, _CompositeTensor):
        return a._batch_size()
    return a.shape[0] if len(a.shape) else None


def _map_structure(fn, structure):
    return _nest._map(fn, structure, _nest._DATA_LEAF)


def _flatten(structure):
    return _nest._flatten(structure, _nest._DATA_LEAF)


def _as_numpy(x):
    if isinstance(x, (np.ndarray, _CompositeTensor)):
        return x
    if hasattr(x, "numpy"):
        return x.numpy()
    a = np.asarray(x)
    if a.dtype.kind in "SU" and not isinstance(x, np.ndarray):
        # NumPy's bytes dtype drops trailing NULs; TF keeps every byte.
        return np.array(x, dtype=object)
    if a.dtype == np.float64 and not isinstance(x, np.ndarray):
        a = a.astype(np.float32)      # Python floats -> float32, as TF
    if a.dtype == np.int64 and not isinstance(x, np.ndarray):
        a = a.astype(np.int32)
    return a


class Dataset(DatasetOpsMixin):
    """An iterable of elements; transformations return new datasets."""

    def __init__(self, make_iter, length=None, spec=None):
        from .. import _C
        self._make_iter = make_iter
        # Its elements may be graph tensors (see traced_next.loop_spec).
        self._made_tracing = _C.tracing()
        self._length = length
        self._spec = spec

    # ---- sources ----------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors):
        arrays = _map_structure(_as_numpy, tensors)
        flat = _flatten(arrays)
        if not flat:
            raise ValueError("from_tensor_slices needs at least one tensor")
        n = _dim0(flat[0])
        for a in flat:
            if n is None or _dim0(a) != n:
                raise ValueError(
                    "Dimensions of the components of from_tensor_slices must "
                    f"all have the same size in dim 0; got shapes "
                    f"{[tuple(b.shape) for b in flat]}")
        return _Slices(arrays, n)

    @staticmethod
    def from_tensors(tensors):
        element = _map_structure(_to_tensor, tensors)
        return Dataset(lambda: iter([element]), 1)

    @staticmethod
    def range(*args, output_type=None):
        r = range(*args)
        from .. import dtypes
        dt = dtypes.as_dtype(output_type) if output_type else dtypes.int64
        from ..tensor_spec import TensorSpec
        return Dataset(lambda: (_to_tensor(np.array(i, dt.as_numpy_dtype))
                                for i in r), len(r), TensorSpec((), dt))

    # ---- iteration --------------------------------------------------
    def __iter__(self):
        return _Iterator(self._make_iter(), self)

    def as_numpy_iterator(self):
        return (_map_structure(lambda t: t.numpy(), e) for e in self)

    def __len__(self):
        if self._length is None or self._length < 0:
            raise TypeError("The dataset length is unknown or infinite.")
        return self._length

    def cardinality(self):
        return _to_tensor(np.int64(-2 if self._length is None
                                   else self._length))

    _tf_default = "_VariantDataset"

    def __repr__(self):
        from . import tf_names
        return tf_names.dataset_repr(self)

    # ---- notebooks (tfmini/notebook_repr.py) -------------------------
    def _repr_html_(self):
        from .. import notebook_repr as nr
        return nr.to_html(type(self).__name__, nr.dataset_rows(self))

    def _repr_pretty_(self, p, cycle):
        from .. import notebook_repr as nr
        nr.pretty(p, cycle, f"<{type(self).__name__}>",
                  [] if cycle else nr.dataset_rows(self))

    # ---- transformations --------------------------------------------
    def batch(self, batch_size, drop_remainder=False, **_):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        out = Dataset(_batches(self, batch_size, drop_remainder, _stack),
                      _batched_len(self._length, batch_size, drop_remainder))
        out._batched_from = (self, batch_size if drop_remainder else None)
        return out

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        src = self
        state = {"epoch": 0}
        # As TF: with a global seed (tf.random.set_seed) the order is the
        # same in every run and every process (the workers of a
        # multi-worker strategy must agree on the global batches).
        from ..ops.random_ops import _get_seed
        seeds = None if seed is not None else _get_seed(None)
        base = seed if seed is not None else \
            np.random.SeedSequence().entropy if seeds is None else \
            seeds[0] * 2**31 + seeds[1]

        # Made while tracing with a seed: TF makes this dataset anew on
        # each call of the function, so each call reads its first order
        # (Note [Dataset loops in a graph] in traced_next.py).
        from .. import _C
        fixed = not reshuffle_each_iteration or (
            _C.tracing() and (seed is not None or seeds is not None))

        def gen():
            epoch = 0 if fixed else state["epoch"]
            state["epoch"] += 1
            rng = np.random.default_rng([int(base) % (2**63), epoch])
            buf = []
            for e in src:
                if len(buf) < buffer_size:
                    buf.append(e)
                    continue
                i = rng.integers(len(buf))
                yield buf[i]
                buf[i] = e
            rng.shuffle(buf)
            yield from buf
        out = Dataset(gen, self._length)
        out._reshuffles = not fixed     # traced_next.warn_unrolled
        return out

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        src = self

        def call(e):
            out = map_func(*e) if isinstance(e, tuple) else map_func(e)
            # Elements are tensors: say so here, not when they are used.
            if out is None:
                raise TypeError("Dataset.map: the function returned None; "
                                "it must return tensors (or tuples or "
                                "dicts of them)")
            return _map_structure(_to_tensor, out)
        out = Dataset(lambda: (call(e) for e in src), self._length)
        out._mapped_from = (self, map_func)
        # See Note [Map traced at map()].
        out._traced_at_map, out._spec, out._untraced_spec = \
            _map_trace.trace(self, map_func)
        return out

    def filter(self, predicate):
        src = self

        def keep(e):
            r = predicate(*e) if isinstance(e, tuple) else predicate(e)
            return bool(r)
        return Dataset(lambda: (e for e in src if keep(e)), None)

    def repeat(self, count=None):
        src = self
        if count is None or count < 0:
            def forever():
                # As TF: a pass that gives nothing ends the repetition
                # (an empty dataset repeated is empty, not a hang).
                while True:
                    empty = True
                    for x in src:
                        empty = False
                        yield x
                    if empty:
                        return
            return Dataset(forever, -1)
        length = None if self._length is None else self._length * count
        return Dataset(lambda: itertools.chain.from_iterable(
            iter(src) for _ in range(count)), length)

    def take(self, count):
        src = self
        length = count if self._length in (None, -1) or count < 0 \
            else min(count, self._length)
        if count < 0:
            return self
        return Dataset(lambda: itertools.islice(iter(src), count), length)

    def skip(self, count):
        src = self
        length = None if self._length is None else max(self._length - count,
                                                        0)
        return Dataset(lambda: itertools.islice(iter(src), count, None),
                       length)

    def cache(self, filename=""):
        """In memory (filename ''), or in a file that later iterations and
        later programs read instead of the source, as TF. Only a complete
        pass is kept: a pass stopped early caches nothing."""
        from .readers import file_cache
        if filename:
            return file_cache(self, str(filename))
        src = self
        store = []

        def gen():
            if store:
                yield from store[0]
                return
            seen = []
            for e in src:
                seen.append(e)
                yield e
            store.append(seen)
        return Dataset(gen, self._length, self._spec)

    def enumerate(self, start=0):
        src = self
        return Dataset(lambda: ((_to_tensor(np.int64(i)), e)
                                for i, e in enumerate(src, start)),
                       self._length)

    @staticmethod
    def zip(*datasets, name=None):
        """Dataset.zip(a, b) or zip((a, b)) or zip({"x": a, "y": b}): the
        elements in the same structure, as TF."""
        if len(datasets) == 1 and not isinstance(datasets[0], Dataset):
            datasets = datasets[0]
        if isinstance(datasets, list):
            datasets = tuple(datasets)
        flat = _nest._flatten(datasets)
        if not flat or not all(isinstance(d, Dataset) for d in flat):
            raise TypeError("Dataset.zip takes datasets (or a tuple or dict "
                            "of them)")
        lens = [d._length for d in flat]
        length = None if None in lens else min(lens)
        structure = datasets

        def gen():
            for elems in zip(*flat):
                yield _nest._pack(structure, list(elems))
        out = Dataset(gen, length)
        out._zipped_from = structure
        return out


def _flatten_shapes(shapes, like):
    """padded_shapes flattened along the element's structure (a shape is
    a list, tuple or TensorShape, so the element drives the walk)."""
    if isinstance(like, dict):
        return [x for k in sorted(like)
                for x in _flatten_shapes(shapes[k], like[k])]
    if isinstance(like, tuple):
        if len(shapes) != len(like):
            raise ValueError(f"padded_shapes {shapes!r} does not match the "
                             f"element's structure")
        return [x for s, e in zip(shapes, like)
                for x in _flatten_shapes(s, e)]
    if shapes is None:
        return [None]
    dims = getattr(shapes, "as_list", None)
    dims = dims() if dims else list(np.atleast_1d(shapes)) \
        if not isinstance(shapes, (list, tuple)) else list(shapes)
    return [[None if d is None or int(d) < 0 else int(d) for d in dims]]


def _batches(src, batch_size, drop_remainder, stack):
    """The generator function of batch, ragged_batch and padded_batch:
    stack(list of elements) for each batch_size elements of src."""
    def gen():
        buf = []
        for e in src:
            buf.append(e)
            if len(buf) == batch_size:
                yield stack(buf)
                buf = []
        if buf and not drop_remainder:
            yield stack(buf)
    return gen


def _batched_len(n, size, drop):
    if n is None or n < 0:
        return n
    return n // size if drop else -(-n // size)


def _is_string(x):
    return isinstance(x, (bytes, str)) or \
        getattr(getattr(x, "dtype", None), "name", None) == "string"


def _stack_strings(column):
    """Records, lines or string tensors as one string tensor. Object
    arrays throughout: NumPy's bytes dtype would drop trailing NULs."""
    rows = [np.asarray(x if isinstance(x, (bytes, str)) else
                       _as_numpy(x), dtype=object) for x in column]
    out = np.empty((len(rows),) + rows[0].shape, dtype=object)
    for i, r in enumerate(rows):
        out[i, ...] = r
    return _to_tensor(out)


def _stack(elements):
    columns = list(zip(*[_flatten(e) for e in elements]))
    return _nest._pack(elements[0], [
        stack_rows(c) if isinstance(c[0], _CompositeTensor) else
        _stack_strings(c) if _is_string(c[0]) else
        _stack_arrays([_as_numpy(x) for x in c], j)
        for j, c in enumerate(columns)], _nest._DATA_LEAF)


def _stack_arrays(arrays, j):
    """One batch of component j; elements of different shapes (an
    unknown-shape spec lets them through) are TF's error, not NumPy's."""
    for i, a in enumerate(arrays):
        if np.shape(a) != np.shape(arrays[0]):
            from .. import errors
            raise errors.InvalidArgumentError(
                None, None, f"Cannot batch tensors with different shapes "
                f"in component {j}. First element had shape "
                f"{list(np.shape(arrays[0]))} and element {i} had shape "
                f"{list(np.shape(a))}.")
    return _to_tensor(np.stack(arrays))


def _slice_spec(arrays):
    """The element spec of from_tensor_slices: each array less its first
    dim, known even when there is no element (TF's); None for arrays
    with no tfmini dtype (bytes), whose spec comes from an element."""
    from .. import dtypes
    from ..tensor_spec import TensorSpec
    try:
        return _map_structure(
            lambda a: composite_slice_spec(a) if isinstance(
                a, _CompositeTensor) else
            TensorSpec(tuple(a.shape[1:]), dtypes.as_dtype(a.dtype)),
            arrays)
    except (TypeError, ValueError):
        return None


class _Slices(Dataset):
    """from_tensor_slices, with batch() as one NumPy slice per batch."""

    def __init__(self, arrays, n, order=None):
        self._arrays = arrays
        self._n = n
        super().__init__(self._elements, n)
        self._spec = _slice_spec(arrays)

    def _elements(self):
        for i in range(self._n):
            yield _map_structure(lambda a: _to_tensor(
                a._batch_item(i) if isinstance(a, _CompositeTensor)
                else a[i]), self._arrays)

    def batch(self, batch_size, drop_remainder=False, **_):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        arrays, n = self._arrays, self._n
        stop = n - n % batch_size if drop_remainder else n

        def gen():
            for i in range(0, stop, batch_size):
                yield _map_structure(
                    lambda a: _to_tensor(
                        a._batch_slice(i, i + batch_size)
                        if isinstance(a, _CompositeTensor)
                        else a[i:i + batch_size]), arrays)
        out = Dataset(gen, _batched_len(n, batch_size, drop_remainder))
        out._batched_from = (self, batch_size if drop_remainder else None)
        return out
