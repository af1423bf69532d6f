"""tf.data sources over files and Python: TFRecordDataset, TextLineDataset,
from_generator, and cache(filename).

A TFRecord or a line of text is a scalar string tensor, as TF's, in
eager iteration only: such a dataset iterated inside a tf.function
raises NotImplementedError, since its elements would be baked into the
graph as constants."""
import json
import zlib
import os

import numpy as np

from .. import errors as _errors
from ..composite_tensor import TypeSpec as _TypeSpec
from . import dataset as _ds


def _filenames(filenames):
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    if isinstance(filenames, _ds.Dataset):
        filenames = list(filenames)
    out = []
    for f in filenames:
        if hasattr(f, "numpy"):
            f = f.numpy()
        if isinstance(f, bytes):
            f = f.decode("utf-8")
        out.append(os.fspath(f))
    if not out:
        raise ValueError("no filenames given")
    return out


def _refuse_in_graph(what):
    from .. import _C
    if _C.tracing():
        raise NotImplementedError(
            f"{what} iterated inside a tf.function: tfmini reads files in "
            f"eager iteration only; iterate it outside the function")


def _string(data):
    from .. import dtypes
    from ..ops.constant_op import constant
    return constant(data, dtype=dtypes.string)


class _StringDataset(_ds.Dataset):
    _what = "a string dataset"

    @property
    def element_spec(self):
        from .. import dtypes
        from ..tensor_spec import TensorSpec
        return TensorSpec((), dtypes.string)

    def __iter__(self):
        _refuse_in_graph(self._what)
        return super().__iter__()


def _existing(files):
    """Each file in turn, checked as it is reached: a missing one is TF's
    NotFoundError."""
    for f in files:
        if not os.path.exists(f):
            raise _errors.NotFoundError(None, None,
                                        f"{f}; No such file or directory")
        yield f


class TFRecordDataset(_StringDataset):
    """tf.data.TFRecordDataset(filenames, compression_type=None, ...):
    the records of each file in turn, as scalar string tensors."""
    _tf_default = "TFRecordDatasetV2"
    _what = "tf.data.TFRecordDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        from ..io.tfrecord import _compression, read_records
        files = _filenames(filenames)
        comp = _compression(compression_type)

        def gen():
            for f in _existing(files):
                for record in read_records(f, comp):
                    yield _string(record)
        super().__init__(gen, None)


class TextLineDataset(_StringDataset):
    """tf.data.TextLineDataset(filenames, compression_type=None, ...): the
    lines of each file, without '\n' or any '\r' (as TF), as scalar
    string tensors."""
    _tf_default = "TextLineDatasetV2"
    _what = "tf.data.TextLineDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        from ..io.tfrecord import _compression, open_stream
        files = _filenames(filenames)
        comp = _compression(compression_type)

        def gen():
            for f in _existing(files):
                stream = open_stream(f, comp)
                try:
                    for line in stream:
                        # TF's BufferedInputStream::ReadLine drops every
                        # '\r', and a last line only if it ends up empty.
                        ended = line.endswith(b"\n")
                        line = line[:-1] if ended else line
                        line = line.replace(b"\r", b"")
                        if ended or line:
                            yield _string(line)
                except (OSError, EOFError, zlib.error) as e:
                    raise _errors.DataLossError(
                        None, None, f"{f}: not a valid {comp} file "
                        f"({e})") from None
                finally:
                    stream.close()
        super().__init__(gen, None)


# ---- from_generator ---------------------------------------------------
def _signature(output_types, output_shapes, output_signature):
    from ..tensor_spec import TensorSpec
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError("from_generator: give output_signature or "
                            "output_types/output_shapes, not both")
        return output_signature
    if output_types is None:
        raise TypeError("from_generator: the `output_signature` argument "
                        "must be set")
    if output_shapes is None:
        return _ds._nest._map(lambda t: TensorSpec(None, t), output_types)
    flat_t = _ds._nest._flatten(output_types)
    shapes = _ds._flatten_shapes(output_shapes, output_types) \
        if isinstance(output_types, (tuple, dict)) else \
        _ds._flatten_shapes(output_shapes, None)
    return _ds._nest._pack(output_types, [
        TensorSpec(s, t) for t, s in zip(flat_t, shapes)])


def _shape_fits(shape, spec_shape):
    if getattr(spec_shape, "rank", 0) is None:
        return True                  # unknown rank: any shape fits
    dims = spec_shape.as_list() if hasattr(spec_shape, "as_list") \
        else spec_shape
    if dims is None:
        return True
    return len(dims) == len(shape) and all(
        d is None or d == s for d, s in zip(dims, shape))


def from_generator(generator, output_types=None, output_shapes=None,
                   args=None, output_signature=None, name=None):
    if not callable(generator):
        raise TypeError("from_generator: `generator` must be a callable "
                        "(a generator function), not a generator object")
    sig = _signature(output_types, output_shapes, output_signature)
    specs = _ds._nest._flatten(sig)
    call_args = tuple(_ds._as_numpy(a) for a in (args or ()))

    def convert(element):
        try:
            leaves = _flatten_as(sig, element)
        except (TypeError, ValueError) as e:
            raise _errors.InvalidArgumentError(
                None, None, f"TypeError: `generator` yielded an element "
                f"that did not match the expected structure {sig!r}: "
                f"{e}") from None
        out = []
        for spec, x in zip(specs, leaves):
            if isinstance(spec, _TypeSpec):     # a composite's spec
                if not spec.is_compatible_with(x):
                    got = x._type_spec if hasattr(x, "_type_spec") else \
                        type(x).__name__
                    raise _errors.InvalidArgumentError(
                        None, None, f"TypeError: `generator` yielded an "
                        f"element of {got!r} where an element of {spec!r} "
                        f"was expected.")
                out.append(x)
                continue
            npdt = spec.dtype.as_numpy_dtype
            try:
                a = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
                if a.dtype != npdt:
                    if not np.can_cast(a.dtype, npdt, "same_kind") and \
                            not (a.dtype.kind in "iub" and
                                 np.dtype(npdt).kind in "iuf"):
                        raise TypeError(a.dtype)
                    a = a.astype(npdt)
            except (TypeError, ValueError):
                raise _errors.InvalidArgumentError(
                    None, None, f"TypeError: `generator` yielded an element "
                    f"that could not be converted to the expected type. The "
                    f"expected type was {spec.dtype.name}, but the yielded "
                    f"element was {x!r}.") from None
            shape = spec.shape
            if not _shape_fits(a.shape, shape):
                raise _errors.InvalidArgumentError(
                    None, None, f"`generator` yielded an element of shape "
                    f"{a.shape} where an element of shape "
                    f"{tuple(shape.as_list()) if hasattr(shape, 'as_list') else shape}"
                    f" was expected.")
            out.append(_ds._to_tensor(a))
        return _ds._nest._pack(sig, out)

    def gen():
        from .. import _C
        if _C.tracing():
            _warn_unrolled(generator)
        for e in generator(*call_args):
            yield convert(e)
    return _ds.Dataset(gen, None, sig)


_unrolled_warned = set()


def _warn_unrolled(generator):
    """A generator's dataset iterated while a tf.function traces, where
    the graph does not read it on each run (a `for` loop over plain
    tensors does: Note [Dataset loops in a graph]): elements that are
    not plain tensors, or an iterator made in the function, unroll at
    trace time, so the trace keeps the elements yielded now. TF's graph
    runs the generator on every call: say so rather than return the
    first call's data silently."""
    from . import traced_next
    key = getattr(generator, "__qualname__", repr(generator))
    if key in _unrolled_warned or traced_next.probing():
        return
    _unrolled_warned.add(key)
    import logging
    logging.getLogger("tfmini").warning(
        "Dataset.from_generator(%s) is read while a tf.function is "
        "traced, and tfmini cannot read it in the graph (elements that "
        "are not plain numeric tensors, or an iterator made inside the "
        "function): the trace holds the elements the generator yields "
        "now, and later calls of the traced function do not run the "
        "generator again (TF's do). Iterate the dataset outside the "
        "function and pass each element in, or call next() in it on an "
        "iterator made outside.", key)


def _flatten_as(sig, element):
    """element's leaves along sig's structure (lists in an element are
    values, as tf.data)."""
    from ..tensor_spec import TensorSpec
    if isinstance(sig, (TensorSpec, _TypeSpec)):
        return [element]
    if isinstance(sig, dict):
        if not isinstance(element, dict) or set(element) != set(sig):
            raise ValueError(f"expected keys {sorted(sig)}")
        return [x for k in sorted(sig) for x in _flatten_as(sig[k],
                                                            element[k])]
    if isinstance(sig, tuple):
        if not isinstance(element, (tuple, list)) or \
                len(element) != len(sig):
            raise ValueError(f"expected a tuple of {len(sig)}")
        return [x for s, e in zip(sig, element) for x in _flatten_as(s, e)]
    raise TypeError(f"unsupported output_signature leaf {sig!r}")


# ---- cache(filename) --------------------------------------------------
def _outline(x):
    if isinstance(x, dict):
        return {"d": {k: _outline(v) for k, v in x.items()}}
    if isinstance(x, tuple):
        return {"t": [_outline(v) for v in x]}
    return None


def _rebuild(outline, leaves):
    if outline is None:
        return next(leaves)
    if "d" in outline:
        return {k: _rebuild(v, leaves) for k, v in outline["d"].items()}
    return tuple(_rebuild(v, leaves) for v in outline["t"])


def _leaves(x):
    if isinstance(x, dict):
        return [y for v in x.values() for y in _leaves(v)]
    if isinstance(x, tuple):
        return [y for v in x for y in _leaves(v)]
    return [x]


def _is_scalar_string(x):
    from .. import dtypes
    return getattr(x, "dtype", None) == dtypes.string and \
        getattr(x, "shape", None) == ()


def file_cache(src, filename):
    """cache(filename): the first complete pass is written to
    filename + '.tfmini-cache.npz' (NumPy's format, no pickle); once that
    file exists every pass reads it instead of the source. Namedtuples
    come back as tuples. TF's own cache files are not read or written."""
    path = filename + ".tfmini-cache.npz"

    def read():
        with np.load(path, allow_pickle=False) as z:
            outline = json.loads(str(z["outline"]))
            n, k = (int(v) for v in z["counts"])
            is_bytes = z["is_bytes"]
            strings = z["strings"] if "strings" in z.files else \
                np.zeros_like(is_bytes)
            for i in range(n):
                leaves = []
                for j in range(k):
                    a = z[f"e{i}_{j}"]
                    leaves.append(_string(a.tobytes()) if strings[j] else
                                  a.tobytes() if is_bytes[j]
                                  else _ds._to_tensor(a))
                yield _rebuild(outline, iter(leaves))

    def gen():
        if os.path.exists(path):
            yield from read()
            return
        arrays, outline, n, k, is_bytes, strings = {}, None, 0, 0, [], []
        for e in src:
            leaves = _leaves(e)
            if outline is None:
                outline, k = _outline(e), len(leaves)
                strings = [_is_scalar_string(x) for x in leaves]
                is_bytes = [isinstance(x, bytes) or s
                            for x, s in zip(leaves, strings)]
            for j, x in enumerate(leaves):
                if strings[j]:
                    x = x.numpy()
                # bytes as uint8: NumPy's 'S' arrays drop trailing NULs.
                arrays[f"e{n}_{j}"] = (np.frombuffer(x, np.uint8)
                                       if is_bytes[j] else _ds._as_numpy(x))
            n += 1
            yield e
        arrays["outline"] = np.array(json.dumps(outline))
        arrays["counts"] = np.array([n, k])
        arrays["is_bytes"] = np.array(is_bytes, bool).reshape(-1)
        arrays["strings"] = np.array(strings, bool).reshape(-1)
        tmp = path + ".tmp.npz"
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    return _ds.Dataset(gen, src._length, src._spec)
