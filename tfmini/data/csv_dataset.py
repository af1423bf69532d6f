"""tf.data.experimental.CsvDataset: the records of CSV files, one tuple
of scalar tensors per line, typed by record_defaults (a dtype: the field
is required; a value: its dtype, and the value where the field is empty
or na_value). Errors are TF's InvalidArgumentError texts, raised when the
bad record is reached, as TF's iterator does."""
import csv
import zlib

import numpy as np

from .. import dtypes as _dtypes
from .. import errors as _errors
from . import dataset as _ds
from .readers import _existing, _filenames

_KINDS = {"int32": "int32", "int64": "int64", "float32": "float",
          "float64": "double", "string": "string"}


def _column(d):
    """(dtype, default or None) of one record_defaults entry."""
    if isinstance(d, _dtypes.DType):
        return d, None
    if hasattr(d, "numpy"):
        arr = d.numpy().reshape(-1)
        dt = d.dtype
        return dt, (arr[0] if arr.size else None)
    if isinstance(d, (bytes, str)):
        return _dtypes.string, d.encode() if isinstance(d, str) else d
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise TypeError(f"CsvDataset: record_defaults entries are dtypes "
                        f"or scalars of int32, int64, float32, float64 or "
                        f"string; got {d!r}")
    return (_dtypes.int32, d) if isinstance(d, int) else \
        (_dtypes.float32, d)


def _value(text, dt, col):
    if dt == _dtypes.string:
        return np.array(text, dtype=object)
    try:
        v = np.array(int(text) if dt.is_integer else float(text),
                     dt.as_numpy_dtype)
        if dt.is_integer and int(v) != int(text):
            raise ValueError
        return v
    except (ValueError, OverflowError):
        raise _errors.InvalidArgumentError(
            None, None, f"Field {col} in record is not a valid "
            f"{_KINDS[dt.name]}: {text.decode(errors='replace')}") from None


class CsvDataset(_ds.Dataset):
    _tf_default = "CsvDatasetV2"

    def __init__(self, filenames, record_defaults, compression_type=None,
                 buffer_size=None, header=False, field_delim=",",
                 use_quote_delim=True, na_value="", select_cols=None,
                 exclude_cols=None, name=None):
        from ..io.tfrecord import _compression, open_stream
        from ..tensor_spec import TensorSpec
        files = _filenames(filenames)
        comp = _compression(compression_type)
        cols = [_column(d) for d in record_defaults]
        for dt, _ in cols:
            if dt.name not in _KINDS:
                raise TypeError(f"CsvDataset: a column of {dt.name}; TF "
                                f"reads int32, int64, float32, float64 "
                                f"and string")
        if select_cols is not None and exclude_cols is not None:
            raise ValueError("Either select_cols or exclude_cols should be "
                             "specified, but not both.")
        select = None if select_cols is None else \
            [int(c) for c in select_cols]
        if select is not None:
            if len(select) != len(cols):
                raise _errors.InvalidArgumentError(
                    None, None, "select_cols should match output size")
            if any(b <= a for a, b in zip(select, select[1:])) or \
                    any(c < 0 for c in select):
                raise _errors.InvalidArgumentError(
                    None, None, "select_cols should be strictly increasing "
                    "indices")
        exclude = set() if exclude_cols is None else \
            {int(c) for c in exclude_cols}
        na = na_value.encode() if isinstance(na_value, str) else na_value
        delim = field_delim.decode() if isinstance(field_delim, bytes) \
            else field_delim
        n = len(cols)

        def fields_of(line):
            text = line.decode("utf-8", "surrogateescape")
            row = next(csv.reader(
                [text], delimiter=delim,
                quoting=csv.QUOTE_MINIMAL if use_quote_delim
                else csv.QUOTE_NONE), [""])
            return [f.encode("utf-8", "surrogateescape") for f in row]

        def record(fields):
            if select is not None:
                if len(fields) <= select[-1]:
                    raise _errors.InvalidArgumentError(
                        None, None, f"Expect {select[-1] + 1} fields but "
                        f"have {len(fields)} in record")
                fields = [fields[c] for c in select]
            elif exclude:
                fields = [f for i, f in enumerate(fields)
                          if i not in exclude]
            # Fields are read in order: a bad one is named before a
            # wrong count, as TF's parser does.
            out = []
            for i, (f, (dt, default)) in enumerate(zip(fields, cols)):
                if f == b"" or f == na:
                    if default is None:
                        raise _errors.InvalidArgumentError(
                            None, None, f"Field {i} is required but "
                            f"missing in record!")
                    out.append(_ds._to_tensor(
                        np.array(default, dtype=object
                                 if dt == _dtypes.string
                                 else dt.as_numpy_dtype)))
                else:
                    out.append(_ds._to_tensor(_value(f, dt, i)))
            if len(fields) != n:
                raise _errors.InvalidArgumentError(
                    None, None, f"Expect {n} fields but have "
                    f"{'more' if len(fields) > n else len(fields)} in "
                    f"record")
            return tuple(out)

        def gen():
            for f in _existing(files):
                stream = open_stream(f, comp)
                try:
                    first = True
                    for line in stream:
                        line = line.rstrip(b"\n").rstrip(b"\r")
                        if first and header:
                            first = False
                            continue
                        first = False
                        if line:
                            yield record(fields_of(line))
                except (OSError, EOFError, zlib.error) as e:
                    raise _errors.DataLossError(
                        None, None, f"{f}: not a valid {comp} file "
                        f"({e})") from None
                finally:
                    stream.close()
        super().__init__(gen, None, tuple(TensorSpec((), dt)
                                          for dt, _ in cols))
