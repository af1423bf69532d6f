"""tf.map_fn: fn applied to each item of elems along axis 0, results
stacked. The loop is unrolled (eagerly, or into the traced graph when
the length is static); ragged elems map row by row and, as in TF, give
ragged results unless fn_output_signature says otherwise."""
from .. import dtypes as _dtypes
from .. import nest as _nest
from ..ops import array_ops as _A
from ..ops import constant_op as _C
from ..tensor_spec import TensorSpec
from .._tensor import Tensor
from .ragged_array_ops import _concat0
from .ragged_spec import RaggedTensorSpec
from .ragged_tensor import RaggedTensor

__all__ = ["map_fn", "vectorized_map"]


def _is_value(x):
    return isinstance(x, (Tensor, RaggedTensor))


def _length(x):
    n = x.shape[0]
    if isinstance(x, RaggedTensor) and x.row_splits._symbolic:
        n = None
    if n is None:
        raise NotImplementedError(
            "tf.map_fn: tfmini unrolls the loop and needs the length of "
            "axis 0; it is unknown while tracing (give the input_signature "
            "a static first dimension)")
    return n


def _stack_ragged(items):
    if all(isinstance(r, Tensor) for r in items):
        if any(r.shape.rank == 0 for r in items):
            return _A.stack(items)
        lengths = _A.stack([_A.shape(r, out_type=_dtypes.int64)[0]
                            for r in items]) if items else \
            _C.constant([], _dtypes.int64)
        return RaggedTensor.from_row_lengths(_A.concat(items, 0), lengths,
                                             validate=False)
    items = [r if isinstance(r, RaggedTensor) else
             RaggedTensor.from_tensor(r) for r in items]
    lengths = _A.stack([r.nrows(_dtypes.int64) for r in items])
    return RaggedTensor.from_row_lengths(_concat0(items), lengths,
                                         validate=False)


def _is_ragged_sig(s):
    return isinstance(s, RaggedTensorSpec)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None,
           fn_output_signature=None):
    sig = fn_output_signature if fn_output_signature is not None else dtype
    if any(hasattr(x, "_tfm_fields") for x in _nest.flatten(elems)):
        from ..extension_type_batch import map_fn as _extension_map_fn
        return _extension_map_fn(fn, elems)
    flat = [x if _is_value(x) else _C.convert_to_tensor(x)
            for x in _nest.flatten(elems)]
    if not flat:
        raise ValueError("tf.map_fn: elems must hold at least one tensor")
    n = _length(flat[0])
    for x in flat[1:]:
        if _length(x) != n:
            raise ValueError(f"tf.map_fn: elems must all have the same "
                             f"size on axis 0; got shapes "
                             f"{[str(y.shape) for y in flat]}")
    results = [fn(_nest.pack_sequence_as(elems, [x[i] for x in flat]))
               for i in range(n)]
    if n == 0:
        spec = sig if isinstance(sig, TensorSpec) else TensorSpec(
            [], _dtypes.as_dtype(sig or flat[0].dtype))
        return _A.zeros([0] + spec.shape.as_list(), spec.dtype)
    ragged_in = sig is None and any(isinstance(x, RaggedTensor)
                                    for x in flat)
    sig_flat = _nest.flatten(sig) if sig is not None else None
    out_flat = [_nest.flatten(r) for r in results]
    stacked = []
    for j in range(len(out_flat[0])):
        items = [_C.convert_to_tensor(o[j]) if not _is_value(o[j])
                 else o[j] for o in out_flat]
        s = sig_flat[j] if sig_flat and j < len(sig_flat) else None
        if _is_ragged_sig(s) or ragged_in or any(
                isinstance(x, RaggedTensor) for x in items):
            stacked.append(_stack_ragged(items))
        else:
            stacked.append(_A.stack(items))
    return _nest.pack_sequence_as(results[0], stacked)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """tf.vectorized_map: the results of map_fn. TF rewrites fn into
    batched ops (pfor) and falls back to a loop; tfmini always runs the
    unrolled loop of map_fn, which gives the same values."""
    return map_fn(fn, elems)
