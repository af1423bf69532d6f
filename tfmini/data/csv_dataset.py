"""tf.data.experimental.CsvDataset: the records of CSV files, one tuple
of scalar tensors per line, typed by record_defaults (a dtype: the field
is required; a value: its dtype, and the value where the field is empty
or na_value). Errors are TF's InvalidArgumentError texts, raised when the
bad record is reached, as TF's iterator does."""
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


def _bad(msg):
    return _errors.InvalidArgumentError(None, None, msg)


# Records are lines here: a quoted field that does not close on its line
# (TF would read on into the next lines) is an error.
_UNCLOSED = "Reached end of file without closing quoted field in record"


def split_record(line, delim, quoted):
    """One line's fields by TF's CSV rules: a field starting with a quote
    runs to the closing quote ("" is a quote inside); a quote anywhere
    else is an error, as TF's parser has it."""
    fields, i, n = [], 0, len(line)
    while True:
        if quoted and line[i:i + 1] == b'"':
            i += 1
            buf = bytearray()
            while True:
                if i >= n:
                    raise _bad(_UNCLOSED)
                c = line[i:i + 1]
                if c == b'"':
                    if line[i + 1:i + 2] == b'"':
                        buf += b'"'
                        i += 2
                        continue
                    i += 1
                    if i < n and line[i:i + 1] != delim:
                        raise _bad(_UNCLOSED)      # TF 2.21's text here
                    break
                buf += c
                i += 1
            fields.append(bytes(buf))
        else:
            j = line.find(delim, i)
            j = n if j < 0 else j
            field = line[i:j]
            if quoted and b'"' in field:
                raise _bad("Unquoted fields cannot have quotes inside")
            fields.append(field)
            i = j
        if i >= n:
            return fields
        i += 1                        # past the delimiter


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
        delim = field_delim.encode() if isinstance(field_delim, str) \
            else bytes(field_delim)
        if len(delim) != 1:
            raise ValueError(f"CsvDataset: field_delim must be one "
                             f"character, got {field_delim!r}")
        n = len(cols)

        def fields_of(line):
            return split_record(line, delim, use_quote_delim)

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


def _infer(values):
    """TF's column type from sample values (empty ones ignored): int32,
    int64, float32, else string."""
    vals = [v for v in values if v != b""]
    try:
        ints = [int(v) for v in vals]
        return _dtypes.int32 if all(-2**31 <= i < 2**31 for i in ints) \
            else _dtypes.int64
    except ValueError:
        pass
    try:
        [float(v) for v in vals]
        return _dtypes.float32
    except ValueError:
        return _dtypes.string


def _sample_rows(files, comp, header, n, split):
    from ..io.tfrecord import open_stream
    rows = []
    for f in _existing(files):
        stream = open_stream(f, comp)
        try:
            for i, line in enumerate(stream):
                line = line.rstrip(b"\n").rstrip(b"\r")
                if (i == 0 and header) or not line:
                    continue
                rows.append(split(line))
                if len(rows) >= n:
                    return rows
        finally:
            stream.close()
    return rows


def make_csv_dataset(file_pattern, batch_size, column_names=None,
                     column_defaults=None, label_name=None,
                     select_columns=None, field_delim=",",
                     use_quote_delim=True, na_value="", header=True,
                     num_epochs=None, shuffle=True, shuffle_buffer_size=10000,
                     shuffle_seed=None, prefetch_buffer_size=None,
                     num_parallel_reads=None, sloppy=False,
                     num_rows_for_inference=100, compression_type=None,
                     ignore_errors=False, encoding="utf-8"):
    """Batches of CSV records as (OrderedDict of feature columns, label
    column) (or the dict alone without label_name), as TF: column names
    from the header, types inferred from the first rows, files and rows
    shuffled, repeated num_epochs times (None: forever)."""
    import collections
    from ..io.tfrecord import _compression, open_stream
    from .sampling import list_files
    files = [f.numpy().decode() for f in
             list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)]
    comp = _compression(compression_type)
    delim = field_delim.encode() if isinstance(field_delim, str) \
        else bytes(field_delim)

    def split(line):
        return split_record(line, delim, use_quote_delim)

    if column_names is None:
        if not header:
            raise ValueError("Expected `column_names` or `header` "
                             "arguments. Neither is provided.")
        stream = open_stream(files[0], comp)
        try:
            column_names = [c.decode(encoding)
                            for c in split(stream.readline().rstrip(
                                b"\r\n"))]
        finally:
            stream.close()
    column_names = list(column_names)
    if select_columns is not None:
        idx = sorted({column_names.index(c) if isinstance(c, str)
                      else int(c) for c in select_columns}
                     if all(not isinstance(c, str) or c in column_names
                            for c in select_columns) else [])
        if not idx:
            raise ValueError(f"`select_columns` must be column names or "
                             f"indices in {column_names}; got "
                             f"{list(select_columns)}")
    else:
        idx = list(range(len(column_names)))
    names = [column_names[i] for i in idx]
    if label_name is not None and label_name not in names:
        raise ValueError(f"`label_name` provided must be one of the "
                         f"columns: {names}. Received: {label_name}.")
    if column_defaults is None:
        rows = _sample_rows(files, comp, header, num_rows_for_inference,
                            split)
        kinds = [_infer([r[i] for r in rows if i < len(r)]) for i in idx]
        column_defaults = [{"int32": 0, "int64": _zero64(),
                            "float32": 0.0}.get(k.name, "") for k in kinds]
    elif len(column_defaults) != len(idx):
        raise ValueError(f"The number of `column_defaults` "
                         f"({len(column_defaults)}) does not match the "
                         f"number of columns ({len(idx)}).")
    ds = CsvDataset(files, column_defaults, compression_type=compression_type,
                    header=header, field_delim=field_delim,
                    use_quote_delim=use_quote_delim, na_value=na_value,
                    select_cols=idx if select_columns is not None else None)
    # The spec TF gets by tracing, known here without reading a row.
    dim = batch_size if num_epochs is None else None
    from ..tensor_spec import TensorSpec
    spec = collections.OrderedDict(
        (n, TensorSpec((dim,), sp.dtype)) for n, sp in zip(names, ds._spec))
    if label_name is not None:
        label_spec = spec.pop(label_name)
        spec = (spec, label_spec)
    ds = ds.map(lambda *row: collections.OrderedDict(zip(names, row)))
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=num_epochs is None)
    if label_name is not None:
        def split_label(features):
            features = collections.OrderedDict(features)
            return features, features.pop(label_name)
        ds = ds.map(split_label)
    ds._spec = spec
    return ds.prefetch(prefetch_buffer_size)


def _zero64():
    from ..ops.constant_op import constant
    return constant(0, _dtypes.int64)
