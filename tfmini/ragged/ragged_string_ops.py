"""tf.strings ops on RaggedTensors (Note [Composite dispatch] in
tfmini/composite_tensor.py), as TF's ragged_string_ops dispatch them.

Elementwise ops run on flat_values and keep the row partitions; the ops
that cut strings (split, bytes_split, unicode_split, unicode_decode) add
their ragged dim under the input's; reduce_join over a ragged axis joins
each row's present items only (a padded dense join would add a separator
per padding item)."""
import numpy as np

from .. import dtypes as _dtypes
from .._tensor import Tensor
from ..ops import array_ops as _A
from ..ops import math_ops as _M
from ..ops import reduce_ops as _R
from ..ops import string_ops as _SO
from .ragged_math_ops import align
from .ragged_tensor import RaggedTensor

# Ops whose first argument is the strings (or numbers) and the rest are
# attributes: the result has the input's partitions.
ELEMENTWISE = ["length", "upper", "lower", "strip", "regex_replace",
               "regex_full_match", "to_number", "as_string",
               "to_hash_bucket_fast", "unicode_transcode", "unicode_script"]

# Ops that cut each string into a ragged row.
CUTTING = ["split", "bytes_split", "unicode_split", "unicode_decode"]


def elementwise(orig, name):
    def op(input, *args, **kwargs):  # noqa: A002
        return input.with_flat_values(orig(input.flat_values, *args,
                                           **kwargs))
    return op


def cutting(orig, name):
    if getattr(orig, "__module__", "") != _SO.__name__:
        return orig      # tf.split (not tf.strings.split): its own error

    def op(input, *args, **kwargs):  # noqa: A002
        return input.with_flat_values(orig(input.flat_values, *args,
                                           **kwargs))
    return op


def unicode_decode_with_offsets(orig, name):
    def op(input, *args, **kwargs):  # noqa: A002
        chars, starts = orig(input.flat_values, *args, **kwargs)
        return input.with_flat_values(chars), input.with_flat_values(starts)
    return op


def substr(orig, name):
    def op(input, pos, len, unit="BYTE", name=None):  # noqa: A002
        x, p, n, template = align([input, pos, len], "Substr")
        return template.with_flat_values(orig(x, p, n, unit=unit))
    return op


def join(orig, name):
    def op(inputs, separator="", name=None):
        *flat, template = align(list(inputs), "StringJoin")
        return template.with_flat_values(orig(flat, separator=separator))
    return op


# ---- reduce_join -------------------------------------------------------

def _masked_join(dense, present, axis, sep):
    """reduce_join of dense over axis, counting only the present items:
    each present item after the first present one of its line gets the
    separator in front, and the line is joined with no separator."""
    if sep:
        before = _R.cumsum(_M.cast(present, _dtypes.int32), axis=axis,
                           exclusive=True)
        later = _M.logical_and(present, _M.greater(before, 0))
        dense = _A.where(later, _SO._t(sep) + dense, dense)
    return _SO.reduce_join(dense, axis=axis, separator="")


def _dense_and_mask(x):
    # All True, traceable with an unknown count (OnesLike has no string
    # kernel; Fill wants static dims).
    v = x.flat_values
    present = x.with_flat_values(_M.equal(v, v))
    return x.to_tensor(b""), present.to_tensor(False)


def _join_axis(x, axis, sep):
    if isinstance(x, Tensor):
        return _SO.reduce_join(x, axis=axis, separator=sep)
    if axis >= 2:
        return x.with_values(_join_axis(x.values, axis - 1, sep))
    if x.ragged_rank == 1:
        return _masked_join(*_dense_and_mask(x), axis, sep)
    if axis == 1 and x.ragged_rank == 2:
        # Row b of the result: its rows joined item by item, as long as
        # its longest row.
        dense = _masked_join(*_dense_and_mask(x), 1, sep)
        inner = x.with_values(x.values.row_lengths())
        lengths = _join_lengths(inner)
        return RaggedTensor.from_tensor(dense, lengths=lengths)
    raise NotImplementedError(
        f"reduce_join over axis {axis} of a RaggedTensor of shape "
        f"{x.shape} (ragged_rank {x.ragged_rank}): tfmini joins the outer "
        f"two axes of ragged_rank 1, axis 1 of ragged_rank 2, and any "
        f"axis under the ragged ones")


def _join_lengths(lengths):
    """Each row's longest inner row (0 for an empty row)."""
    from .ragged_math_ops import reduce
    longest = reduce("max", _R.reduce_max)(lengths, axis=1)
    return _M.maximum(longest, _A.zeros_like(longest))


def _axes(axis, rank):
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(
        np.asarray(axis.numpy() if isinstance(axis, Tensor) else axis)
        .reshape(-1))
    out = set()
    for a in axes:
        a = int(a)
        if not -rank <= a < rank:
            raise ValueError(f"reduce_join: axis {a} out of range for a "
                             f"RaggedTensor of rank {rank}")
        out.add(a + rank if a < 0 else a)
    return sorted(out, reverse=True)


def reduce_join(orig, name):
    def op(inputs, axis=None, keepdims=False, separator="", name=None):
        rt = inputs
        rank = rt.shape.rank
        if axis is None:
            out = orig(rt.flat_values, separator=separator)
            axes = range(rank)
        else:
            axes = _axes(axis, rank)
            out = rt
            for a in axes:
                out = _join_axis(out, a, separator)
        if keepdims:
            if isinstance(out, RaggedTensor):
                raise NotImplementedError("reduce_join(keepdims=True) "
                                          "with a ragged result")
            for a in sorted(axes):
                out = _A.expand_dims(out, a)
        return out
    return op


def register(register_fn):
    R = RaggedTensor
    register_fn(ELEMENTWISE, R, elementwise)
    register_fn(CUTTING, R, cutting)
    for name, make in [("substr", substr), ("join", join),
                       ("reduce_join", reduce_join),
                       ("unicode_decode_with_offsets",
                        unicode_decode_with_offsets)]:
        register_fn([name], R, make)
