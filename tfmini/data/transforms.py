"""More tf.data transformations (a mixin of Dataset): apply, interleave,
prefetch (a real background thread), padded_batch, unbatch, window,
take_while, element_spec."""
import os
import queue
import threading
import weakref

import numpy as np


def _ds():
    from . import dataset
    return dataset


def _new(make_iter, length=None):
    return _ds().Dataset(make_iter, length)


_probe = threading.local()


def probing_specs():
    """Whether a map function is being traced only for the element_spec
    (_traced_map_spec), never to run: an op with no graph form (such as
    parse_single_example) may then give tensors of its static spec."""
    return getattr(_probe, "on", False)


def _traced_map_spec(src, map_func):
    """A mapped dataset's element_spec as TF has it: map_func traced once
    on the source's spec (so a None dimension stays None, and nothing is
    read). None where that cannot be done (the function needs eager
    values, Python control flow on tensors, ...): the caller then reads
    the first element."""
    import importlib
    _function = importlib.import_module("tfmini.function")
    try:
        in_spec = src.element_spec
        if isinstance(in_spec, tuple) and not hasattr(in_spec, "_fields"):
            args = in_spec
        else:
            args = (in_spec,)
        if not all(hasattr(a, "dtype") or isinstance(a, dict)
                   for a in args):
            return None
        traced = _function.function(lambda *a: map_func(*a),
                                    autograph=False)
        _probe.on = True
        try:
            outs = traced.get_concrete_function(*args).structured_outputs
        finally:
            _probe.on = False
        if outs is None:
            return None
        return _ds()._map_structure(_spec_of, outs)
    except Exception:  # noqa: BLE001 - any failure: read an element instead
        return None


def batched_spec(spec, size):
    """The spec of batches of `size` (None: not fixed) of spec's."""
    return _ds()._map_structure(
        lambda sp: sp._batch(size) if hasattr(sp, "_batch") else
        type(sp)((size,) + tuple(sp.shape), sp.dtype), spec)


def padded_spec(spec, size, padded_shapes):
    """The spec of padded_batch's batches: each component's padded
    shape, a None (or -1) dimension None; None where a component is not
    a plain tensor."""
    from ..tensor_spec import TensorSpec
    ds = _ds()
    leaves = ds._flatten(spec)
    shapes = ds._flatten_shapes(padded_shapes, spec)
    if any(type(sp) is not TensorSpec for sp in leaves):
        return None
    return ds._nest._pack(spec, [
        TensorSpec([size] + (list(sp.shape) if want is None else want),
                   sp.dtype) for sp, want in zip(leaves, shapes)],
        ds._nest._DATA_LEAF)


def _spec_of(x):
    from ..tensor_spec import TensorSpec
    if isinstance(x, _ds().Dataset):
        return DatasetSpec(x.element_spec)
    if isinstance(x, (bytes, str)):
        return _BytesSpec()
    if hasattr(x, "_type_spec"):         # a composite tensor
        return x._type_spec
    if getattr(x.shape, "rank", 0) is None:
        # A map traced on an unknown-rank spec (from_generator's
        # TensorSpec(None)) gives specs of unknown rank.
        return TensorSpec(None, x.dtype)
    return TensorSpec(tuple(x.shape), x.dtype)


class _BytesSpec:
    """The spec of a Python-bytes element (TF: TensorSpec((), tf.string);
    tfmini has no string dtype yet)."""
    shape = ()
    dtype = bytes

    def __repr__(self):
        return "TensorSpec(shape=(), dtype=bytes)"

    def __eq__(self, other):
        return isinstance(other, _BytesSpec)


class DatasetSpec:
    """tf.data.DatasetSpec: the spec of a dataset-valued element."""

    def __init__(self, element_spec, dataset_shape=()):
        self.element_spec = element_spec
        self.shape = dataset_shape

    def __repr__(self):
        return f"DatasetSpec({self.element_spec!r}, TensorShape([]))"


class _PrefetchIter:
    """Runs the source iterator on a daemon thread, up to `size` elements
    ahead. The thread stops when this iterator is dropped or exhausted;
    an exception in the source is raised here, in order."""

    _END = object()

    def __init__(self, src_iter, size):
        self._q = queue.Queue(maxsize=size)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(
            target=_PrefetchIter._run, args=(src_iter, self._q, self._stop),
            daemon=True, name="tf.data prefetch")
        self._thread.start()
        self._finalizer = weakref.finalize(self, self._stop.set)

    @staticmethod
    def _run(it, q, stop):
        def put(item):
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    continue
            return False
        try:
            for e in it:
                if not put((True, e)):
                    return
        except BaseException as exc:  # handed to the consumer
            put((False, exc))
            return
        put((True, _PrefetchIter._END))

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        ok, e = self._q.get()
        if not ok:
            self._done = True
            self._stop.set()
            raise e
        if e is _PrefetchIter._END:
            self._done = True
            raise StopIteration
        return e


def _autotune_size():
    return max(2, min(os.cpu_count() or 2, 16))


def _errors():
    from .. import errors
    return errors


def _np(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _pad_to(a, shape, value, what):
    if a.ndim != len(shape):
        raise ValueError(f"padded_batch: {what} has rank {a.ndim}, "
                         f"padded_shapes rank {len(shape)}")
    for d, (have, want) in enumerate(zip(a.shape, shape)):
        if have > want:
            raise ValueError(
                f"padded_batch: {what} has shape {list(a.shape)}, larger "
                f"than the padded shape {list(shape)} in dimension {d}")
    out = np.full(shape, value, a.dtype)
    # Ellipsis: a 0-d object array then gives its element, not itself.
    out[tuple(slice(0, s) for s in a.shape) + (Ellipsis,)] = a
    return out


class DatasetOpsMixin:
    """Transformations added to Dataset (see dataset.py)."""

    def with_options(self, options, name=None):
        """The same elements, with options (tf.data.Options) merged over
        this dataset's (options.py says what tfmini does with them)."""
        from .options import Options
        if not isinstance(options, Options):
            raise TypeError(f"with_options takes a tf.data.Options, got "
                            f"{type(options).__name__}")
        src = self
        d = _new(lambda: iter(src), self._length)
        d._spec_from = src
        d._options = self.options().merge(options)
        return d

    def options(self):
        """The options set by with_options on this dataset or on the
        dataset it was made from (through map, batch and the
        transformations that keep the element spec)."""
        from .options import Options
        ds = self
        while ds is not None:
            opts = getattr(ds, "_options", None)
            if opts is not None:
                return opts
            ds = getattr(ds, "_spec_from", None) or \
                (getattr(ds, "_mapped_from", None) or (None,))[0] or \
                (getattr(ds, "_batched_from", None) or (None,))[0]
        return Options()

    def apply(self, transformation_func):
        out = transformation_func(self)
        if not isinstance(out, _ds().Dataset):
            raise TypeError(f"Dataset.apply: the function must return a "
                            f"Dataset, got {type(out).__name__}")
        return out

    @property
    def element_spec(self):
        """The nested TensorSpecs of the elements. tfmini reads them from
        the first element where the transformation does not give them
        (so a None dimension that TF would report can show as the first
        element's size); batch without drop_remainder gives None first,
        as TF."""
        spec = getattr(self, "_spec", None)
        if spec is not None:
            return spec
        ds = _ds()
        same = getattr(self, "_spec_from", None)
        if same is not None:
            return same.element_spec
        mapped = getattr(self, "_mapped_from", None)
        if mapped is not None and not getattr(self, "_traced_at_map", False):
            spec = _traced_map_spec(*mapped)
            if spec is not None:
                self._spec = spec
                return spec
        batched = getattr(self, "_batched_from", None)
        if batched is not None:
            src, size = batched
            return batched_spec(src.element_spec, size)
        padded = getattr(self, "_padded_from", None)
        if padded is not None:
            spec = padded_spec(padded[0].element_spec, *padded[1:])
            if spec is not None:
                return spec
        for e in ds.Dataset.__iter__(self):
            return ds._map_structure(_spec_of, e)
        raise ValueError("element_spec of an empty dataset whose spec "
                         "tfmini cannot infer without an element")

    def prefetch(self, buffer_size=None, name=None):
        if buffer_size is None or buffer_size == _ds().AUTOTUNE:
            size = _autotune_size()
        else:
            size = int(buffer_size)
            if size < 1:
                raise ValueError(f"prefetch: buffer_size must be positive "
                                 f"or tf.data.AUTOTUNE, got {buffer_size}")
        src = self
        d = _new(lambda: _PrefetchIter(iter(src), size), self._length)
        d._spec = getattr(self, "_spec", None)
        return d

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """TF's order: cycle_length input elements are open at once; each
        gives block_length elements in turn; an exhausted one is replaced,
        in its slot, by the next input element's dataset."""
        if cycle_length is None or cycle_length == _ds().AUTOTUNE:
            cycle_length = os.cpu_count() or 1
        block_length = 1 if block_length is None else int(block_length)
        if cycle_length < 1 or block_length < 1:
            raise ValueError("interleave: cycle_length and block_length "
                             "must be positive")
        src = self

        def open_one(e):
            d = map_func(*e) if isinstance(e, tuple) else map_func(e)
            if not isinstance(d, _ds().Dataset):
                raise TypeError(f"interleave: map_func must return a "
                                f"Dataset, got {type(d).__name__}")
            return iter(d)

        def gen():
            inputs = iter(src)
            slots = []
            for e in inputs:
                slots.append(open_one(e))
                if len(slots) == cycle_length:
                    break
            i = 0
            while slots:
                it = slots[i]
                n = 0
                while n < block_length:
                    try:
                        yield next(it)
                        n += 1
                    except StopIteration:
                        it = None
                        break
                if it is None:
                    nxt = next(inputs, None)
                    if nxt is not None:
                        slots[i] = open_one(nxt)
                        continue       # the new one starts in this turn
                    del slots[i]
                    if not slots:
                        return
                    i %= len(slots)
                    continue
                i = (i + 1) % len(slots)
        return _new(gen, None)

    def flat_map(self, map_func, name=None):
        return self.interleave(map_func, cycle_length=1, block_length=1)

    def ragged_batch(self, batch_size, drop_remainder=False,
                     row_splits_dtype=None, name=None):
        """Batches of elements whose shapes differ: each component
        becomes a tf.RaggedTensor (its dims after the first uniform as
        in TF when every element has the same size there), scalars a
        dense vector."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got "
                             f"{batch_size}")
        ds = _ds()
        return _new(ds._batches(self, batch_size, drop_remainder,
                                _ragged_stack),
                    ds._batched_len(self._length, batch_size,
                                    drop_remainder))

    def padded_batch(self, batch_size, padded_shapes=None,
                     padding_values=None, drop_remainder=False, name=None):
        ds = _ds()
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        src = self

        def stack(elements):
            flats = [ds._flatten(e) for e in elements]
            first = elements[0]
            n = len(flats[0])
            shapes = ([None] * n if padded_shapes is None else
                      ds._flatten_shapes(padded_shapes, first))
            if padding_values is None:
                values = [None] * n
            elif not isinstance(padding_values, (tuple, dict, list)):
                values = [padding_values] * n
            else:
                values = ds._flatten(padding_values)
            out = []
            for j in range(n):
                strings = ds._is_string(flats[0][j])
                # Strings in object arrays (NumPy's bytes dtype drops
                # trailing NULs), padded with b"" as TF pads them.
                col = [np.asarray(f[j] if isinstance(f[j], (bytes, str))
                                  else _np(f[j]), dtype=object)
                       if strings else _np(f[j]) for f in flats]
                rank = col[0].ndim
                for i, c in enumerate(col):
                    if c.ndim != rank:      # TF's words
                        raise _errors().InvalidArgumentError(
                            None, None, f"All elements in a batch must "
                            f"have the same rank as the padded shape for "
                            f"component{j}: expected rank {rank} but got "
                            f"element with rank {c.ndim}")
                want = shapes[j]
                if want is None:
                    want = [None] * rank
                want = [(-1 if w is None else int(w)) for w in want]
                if len(want) != rank:
                    raise ValueError(
                        f"padded_batch: component {j} has rank {rank}, "
                        f"padded_shapes gives rank {len(want)}")
                full = tuple(
                    max(c.shape[d] for c in col) if want[d] < 0 else want[d]
                    for d in range(rank))
                v = values[j]
                if strings:
                    v = b"" if v is None else _np(v).item()
                    v = v.encode() if isinstance(v, str) else v
                else:
                    v = 0 if v is None else _np(v).item()
                out.append(ds._to_tensor(np.stack(
                    [_pad_to(c, full, v, f"component {j}") for c in col])))
            return ds._nest._pack(first, out, ds._nest._DATA_LEAF)

        out = _new(ds._batches(src, batch_size, drop_remainder, stack),
                   ds._batched_len(self._length, batch_size,
                                   drop_remainder))
        if padded_shapes is None:
            out._batched_from = (self, batch_size if drop_remainder
                                 else None)
        else:
            out._padded_from = (self, batch_size if drop_remainder
                                else None, padded_shapes)
        return out

    def unbatch(self, name=None):
        ds = _ds()
        src = self

        def gen():
            for e in src:
                flat = [x if isinstance(x, ds._CompositeTensor) else _np(x)
                        for x in ds._flatten(e)]
                sizes = [ds._dim0(a) for a in flat]
                if any(n is None for n in sizes):
                    raise ValueError("unbatch: every component needs a "
                                     "batch dimension (rank >= 1)")
                n = sizes[0]
                if any(s != n for s in sizes):
                    raise ValueError(
                        f"unbatch: components differ in their batch size: "
                        f"{sizes}")
                for i in range(n):
                    yield ds._nest._pack(
                        e, [ds._to_tensor(a._batch_item(i) if isinstance(
                            a, ds._CompositeTensor) else a[i]) for a in flat],
                        ds._nest._DATA_LEAF)
        return _new(gen, None)

    def window(self, size, shift=None, stride=1, drop_remainder=False,
               name=None):
        """A dataset of windows; each window is the element structure
        with a Dataset in place of each component, as TF."""
        ds = _ds()
        shift = size if shift is None else shift
        if size < 1 or shift < 1 or stride < 1:
            raise ValueError("window: size, shift and stride must be "
                             "positive")
        src = self
        span = (size - 1) * stride + 1

        def one_window(elems):
            flat = [ds._flatten(e) for e in elems]
            comps = [_slices_dataset([f[j] for f in flat])
                     for j in range(len(flat[0]))]
            return ds._nest._pack(elems[0], comps, ds._nest._DATA_LEAF)

        def gen():
            buf = []
            it = iter(src)
            start = 0          # index of buf[0] in the source
            pos = 0            # next window start
            done = False      # the source is exhausted
            while True:
                while not done and len(buf) < pos - start + span:
                    try:
                        buf.append(next(it))
                    except StopIteration:
                        done = True
                elems = buf[pos - start::stride][:size]
                if not elems:
                    return
                if len(elems) < size and drop_remainder:
                    return
                yield one_window(elems)
                pos += shift
                drop = min(pos - start, len(buf))
                del buf[:drop]
                start += drop
        return _new(gen, None)

    def concatenate(self, dataset, name=None):
        import itertools
        a, b = self, dataset
        la, lb = a._length, b._length
        length = None if la is None or lb is None else \
            (-1 if -1 in (la, lb) else la + lb)
        return _new(lambda: itertools.chain(iter(a), iter(b)), length)

    def shard(self, num_shards, index, name=None):
        if num_shards < 1 or not 0 <= index < num_shards:
            raise ValueError(f"shard: need 0 <= index < num_shards, got "
                             f"index {index} of {num_shards}")
        import itertools
        src = self
        n = self._length
        length = n if n is None or n < 0 else \
            (n - index + num_shards - 1) // num_shards
        return _new(lambda: itertools.islice(iter(src), index, None,
                                             num_shards), length)

    def reduce(self, initial_state, reduce_func, name=None):
        """Folds the elements into a state, eagerly (TF: a graph loop)."""
        ds = _ds()
        state = ds._map_structure(ds._to_tensor, initial_state)
        for e in self:
            state = reduce_func(state, e)
        return state

    def take_while(self, predicate, name=None):
        src = self

        def gen():
            for e in src:
                r = predicate(*e) if isinstance(e, tuple) else predicate(e)
                if not bool(r):
                    return
                yield e
        return _new(gen, None)


def _ragged_stack(elements):
    """One batch of ragged_batch: the elements' components stacked."""
    ds = _ds()
    columns = list(zip(*[ds._flatten(e) for e in elements]))
    return ds._nest._pack(elements[0], [stack_rows(c) for c in columns],
                          ds._nest._DATA_LEAF)


def stack_rows(items):
    """items (tensors, ragged tensors, or values convertible to tensors)
    as the rows of one batch: dense when every item is a scalar, else a
    RaggedTensor whose first inner dim is ragged and whose further dims
    stay uniform where all items agree (as TF's ragged_batch)."""
    from .._tensor import Tensor
    from ..ops.constant_op import convert_to_tensor
    from ..ragged import RaggedTensor
    from ..ragged.map_fn import _stack_ragged
    from ..sparse import SparseTensor, sparse_ops
    if items and all(isinstance(x, SparseTensor) for x in items):
        return sparse_ops.stack_rows(items)
    if items and hasattr(type(items[0]), "_stack_rows"):
        return type(items[0])._stack_rows(items)    # extension types
    items = [x if isinstance(x, (Tensor, RaggedTensor)) else
             convert_to_tensor(x) for x in items]
    dense = [x for x in items if isinstance(x, Tensor)]
    if len(dense) == len(items) and dense and dense[0].shape.rank == 0:
        from ..ops.array_ops import stack
        return stack(items)
    if len(dense) == len(items):
        inner = {tuple(x.shape.as_list()[1:]) for x in dense}
        if len(inner) > 1:      # the inner dims differ too: ragged there
            items = [RaggedTensor.from_tensor(x, ragged_rank=x.shape.rank
                                              - 1) if x.shape.rank > 1
                     else x for x in items]
    return _stack_ragged(items)


def composite_slice_spec(a):
    """The element spec of from_tensor_slices over the composite a."""
    from ..ragged import RaggedTensor, RaggedTensorSpec
    from ..sparse import SparseTensor, SparseTensorSpec
    if isinstance(a, RaggedTensor):
        return RaggedTensorSpec(a.shape[1:], a.dtype, a.ragged_rank - 1,
                                a.row_splits.dtype)
    if isinstance(a, SparseTensor):
        return SparseTensorSpec(a.shape[1:], a.dtype)
    raise TypeError(f"from_tensor_slices: tfmini slices RaggedTensors and "
                    f"SparseTensors, not {type(a).__name__}")


def _slices_dataset(tensors):
    d = _new(lambda: iter(tensors), len(tensors))
    return d
