"""OpSpecs for the shape / array family (csrc/ops/ops_shape.def).

Data-movement ops run over every dtype (ALL), bool and float16 included:
their kernels move bytes. Index inputs come from generators that ignore
the case's dtype (they are always int32/int64)."""
import numpy as np

import tfmini as tf
from tfmini.ops import array_ops

from .opspec import FLOATS, NUMERIC, OpSpec, uniform

ALL = ("float32", "float64", "int32", "int64", "bool", "float16", "int8",
       "uint8", "int16", "uint16", "uint32", "uint64")
COPY = ("float32", "float64", "int32", "bool", "float16", "int8")


def indices(hi, dtype="int32"):
    """Random indices in [0, hi) whatever the case's dtype."""
    def make(rng, shape, _):
        return rng.integers(0, hi, size=shape).astype(dtype)
    return make


def distinct_rows(hi, dtype="int32"):
    """Index vectors (the last dim) in [0, hi), no two alike: scatter
    updates are then independent of their order."""
    def make(rng, shape, _):
        k = shape[-1]
        n = int(np.prod(shape[:-1]))
        flat = rng.choice(hi ** k, size=n, replace=False)
        return np.stack(np.unravel_index(flat, (hi,) * k),
                        -1).reshape(shape).astype(dtype)
    return make


def const_indices(values, dtype="int32"):
    def make(rng, shape, _):
        return np.asarray(values, dtype=dtype).reshape(shape)
    return make


def booleans():
    def make(rng, shape, _):
        return rng.uniform(size=shape) > 0.5
    return make


def as_list(xs):
    return [np.asarray(x) for x in xs]


# -- references that NumPy spells differently ------------------------------

def np_pad_constant(x, paddings, value):
    return np.pad(x, paddings, mode="constant",
                  constant_values=np.asarray(value).astype(x.dtype))


def np_slice_grad(dy, shape, key):
    out = np.zeros(shape, dy.dtype)
    out[key] = dy.reshape(out[key].shape)
    return out


def np_gather_batch1(params, idx):
    return np.stack([np.take(params[b], idx[b], axis=0)
                     for b in range(params.shape[0])])


def np_gather_nd(params, idx):
    k = idx.shape[-1]
    flat = idx.reshape(-1, k)
    rows = [params[tuple(r)] for r in flat]
    out = np.array(rows, dtype=params.dtype)
    return out.reshape(idx.shape[:-1] + params.shape[k:])


def np_scatter(tensor, idx, updates, add=False, combine=None):
    """Updates written in index order; combine(old, update) gives the new
    value (add: old + update; neither: update)."""
    if add:
        combine = np.add
    out = tensor.copy()
    k = idx.shape[-1]
    flat = idx.reshape(-1, k)
    upd = updates.reshape((flat.shape[0],) + tensor.shape[k:])
    for r, u in zip(flat, upd):
        out[tuple(r)] = u if combine is None else combine(out[tuple(r)], u)
    return out


def np_one_hot(idx, depth, axis=-1):
    out = (idx[..., None] == np.arange(depth)).astype(np.float32)
    return np.moveaxis(out, -1, axis)


SPECS = [
    OpSpec("reshape_flat", lambda x: tf.reshape(x, [1, -1]),
           lambda x: x.reshape(1, -1),
           [((2, 3),), ((4,),), ((0, 3),), ((),)], ALL, grad=(0,),
           ops=["Reshape"]),
    OpSpec("reshape_reverse_dims",
           lambda x: tf.reshape(x, list(x.shape)[::-1]),
           lambda x: x.reshape(x.shape[::-1]),
           [((2, 3, 4),), ((5, 1),)], FLOATS, grad=(0,), ops=["Reshape"]),
    OpSpec("transpose", tf.transpose, np.transpose,
           [((2, 3),), ((2, 3, 4),), ((1, 5, 1, 3),), ((33, 65),),
            ((0, 4),), ((7,),)], ALL, grad=(0,), ops=["Transpose"]),
    OpSpec("transpose_perm", lambda x: tf.transpose(x, [2, 0, 1]),
           lambda x: np.transpose(x, [2, 0, 1]),
           [((2, 3, 4),), ((3, 40, 50),), ((6, 1, 37),)], COPY, grad=(0,),
           ops=["Transpose"]),
    OpSpec("transpose_keep_last", lambda x: tf.transpose(x, [1, 0, 2]),
           lambda x: np.transpose(x, [1, 0, 2]),
           [((2, 3, 4),), ((16, 9, 5),)], COPY, grad=(0,),
           ops=["Transpose"]),
    OpSpec("expand_dims_0", lambda x: tf.expand_dims(x, 0),
           lambda x: np.expand_dims(x, 0), [((2, 3),), ((),)], ALL,
           grad=(0,), ops=["ExpandDims"]),
    OpSpec("expand_dims_neg", lambda x: tf.expand_dims(x, -1),
           lambda x: np.expand_dims(x, -1), [((2, 3),), ((4,),)], FLOATS,
           grad=(0,), ops=["ExpandDims"]),
    OpSpec("squeeze_all", tf.squeeze, np.squeeze,
           [((1, 3, 1),), ((2, 3),), ((1,),)], ALL, grad=(0,),
           ops=["Squeeze"]),
    OpSpec("squeeze_axis", lambda x: tf.squeeze(x, axis=[-1]),
           lambda x: np.squeeze(x, axis=-1), [((1, 3, 1),), ((4, 1),)],
           FLOATS, grad=(0,), ops=["Squeeze"]),
    OpSpec("identity", tf.identity, lambda x: x.copy(),
           [((2, 3),), ((),), ((0,),)], ALL, grad=(0,), ops=["Identity"]),
    OpSpec("concat_0", lambda x, y: tf.concat([x, y], 0),
           lambda x, y: np.concatenate([x, y], 0),
           [((2, 3), (4, 3)), ((1,), (5,)), ((0, 2), (3, 2))], ALL,
           grad=(0, 1), ops=["ConcatV2"]),
    OpSpec("concat_last", lambda x, y, z: tf.concat([x, y, z], -1),
           lambda x, y, z: np.concatenate([x, y, z], -1),
           [((2, 3), (2, 1), (2, 4)), ((2, 2, 0), (2, 2, 3), (2, 2, 1))],
           COPY, grad=(0, 1, 2), ops=["ConcatV2"]),
    OpSpec("stack_0", lambda x, y: tf.stack([x, y]),
           lambda x, y: np.stack([x, y]), [((2, 3), (2, 3)), ((), ())],
           ALL, grad=(0, 1), ops=["Pack"]),
    OpSpec("stack_last", lambda x, y, z: tf.stack([x, y, z], axis=-1),
           lambda x, y, z: np.stack([x, y, z], -1),
           [((2, 3), (2, 3), (2, 3)), ((4,), (4,), (4,))], COPY,
           grad=(0, 1, 2), ops=["Pack"]),
    OpSpec("unstack_0", tf.unstack, lambda x: as_list(list(x)),
           [((3, 2),), ((2, 3, 4),), ((1,),)], ALL, grad=(0,),
           ops=["Unpack"]),
    OpSpec("unstack_1", lambda x: tf.unstack(x, axis=1),
           lambda x: as_list(np.moveaxis(x, 1, 0)), [((3, 2, 4),)], COPY,
           grad=(0,), ops=["Unpack"]),
    OpSpec("split_num", lambda x: tf.split(x, 2, axis=1),
           lambda x: np.split(x, 2, axis=1), [((3, 4),), ((2, 6, 2),)],
           ALL, grad=(0,), ops=["Split"]),
    OpSpec("split_sizes", lambda x: tf.split(x, [1, -1, 2], axis=0),
           lambda x: np.split(x, [1, x.shape[0] - 2], axis=0),
           [((5, 2),), ((3,),)], COPY, grad=(0,), ops=["SplitV"]),
    OpSpec("tile", lambda x: tf.tile(x, [2, 1, 3][:x.ndim]),
           lambda x: np.tile(x, [2, 1, 3][:x.ndim]),
           [((2, 3),), ((3,),), ((2, 1, 2),), ((0, 2),)], ALL, grad=(0,),
           ops=["Tile"]),
    OpSpec("pad_constant",
           lambda x: tf.pad(x, [[1, 2], [0, 3]], constant_values=1),
           lambda x: np_pad_constant(x, [[1, 2], [0, 3]], 1),
           [((2, 3),), ((0, 2),)], ALL, grad=(0,), ops=["PadV2"]),
    OpSpec("pad_zero_3d", lambda x: tf.pad(x, [[0, 0], [2, 1], [1, 1]]),
           lambda x: np.pad(x, [[0, 0], [2, 1], [1, 1]]),
           [((2, 3, 4),)], FLOATS, grad=(0,), ops=["PadV2"]),
    OpSpec("pad_reflect",
           lambda x: tf.pad(x, [[1, 2], [2, 1]][:x.ndim], "REFLECT"),
           lambda x: np.pad(x, [[1, 2], [2, 1]][:x.ndim], mode="reflect"),
           [((3, 4),), ((4,),)], COPY, grad=(0,), ops=["MirrorPad"]),
    OpSpec("pad_symmetric",
           lambda x: tf.pad(x, [[2, 0], [3, 3]], "symmetric"),
           lambda x: np.pad(x, [[2, 0], [3, 3]], mode="symmetric"),
           [((2, 3),), ((3, 5),)], COPY, grad=(0,), ops=["MirrorPad"]),
    OpSpec("reverse", lambda x: tf.reverse(x, [0, -1][:x.ndim]),
           lambda x: np.flip(x, (0, -1)[:x.ndim]),
           [((2, 3),), ((3, 2, 4),), ((5,),), ((0, 2),)], ALL, grad=(0,),
           ops=["ReverseV2"]),
    OpSpec("broadcast_to", lambda x: tf.broadcast_to(x, [2, 3, 4]),
           lambda x: np.broadcast_to(x, (2, 3, 4)).copy(),
           [((3, 4),), ((1, 4),), ((3, 1),), ((),), ((2, 1, 4),)], ALL,
           grad=(0,), ops=["BroadcastTo"]),
    OpSpec("slice", lambda x: tf.slice(x, [1, 0], [2, -1]),
           lambda x: x[1:3, :], [((4, 3),), ((3, 5),)], ALL, grad=(0,),
           ops=["Slice"]),
    OpSpec("strided_slice",
           lambda x: tf.strided_slice(x, [1, -1], [-1, 0], [2, -1]),
           lambda x: x[1:-1:2, -1:0:-1], [((6, 5),), ((3, 3),)], ALL,
           grad=(0,), ops=["StridedSlice"]),
    OpSpec("strided_slice_masks",
           lambda x: tf.strided_slice(x, [0, 1, 0], [0, 2, 0], [1, 1, 1],
                                      begin_mask=1, end_mask=1,
                                      ellipsis_mask=0, new_axis_mask=4,
                                      shrink_axis_mask=2),
           lambda x: x[:, 1, None], [((3, 4),), ((2, 2, 5),)], COPY,
           grad=(0,), ops=["StridedSlice"]),
    OpSpec("strided_slice_grad",
           lambda dy: array_ops._strided_slice_grad(
               dy, [6, 5, 4], [1, 0, -1], [0, 0, 0], [2, 1, -2],
               begin_mask=0, end_mask=3, new_axis_mask=2,
               shrink_axis_mask=0),
           lambda dy: np_slice_grad(dy, (6, 5, 4),
                                    (slice(1, None, 2), None,
                                     slice(-1, 0, -2))),
           [((3, 1, 2, 4),)], ALL, grad=(0,), ops=["StridedSliceGrad"]),
    OpSpec("strided_slice_grad_shrink",
           lambda dy: array_ops._strided_slice_grad(
               dy, [3, 4], [0, 2], [0, 3], [1, 1], begin_mask=1, end_mask=1,
               shrink_axis_mask=2),
           lambda dy: np_slice_grad(dy, (3, 4), (slice(None), 2)),
           [((3,),)], FLOATS, grad=(0,), ops=["StridedSliceGrad"]),
    OpSpec("getitem", lambda x: x[..., ::-2, None, 1],
           lambda x: x[..., ::-2, None, 1], [((3, 5, 2),), ((4, 2),)], ALL,
           grad=(0,), ops=["StridedSlice"]),
    OpSpec("gather", lambda p, i: tf.gather(p, i),
           lambda p, i: np.take(p, i, axis=0),
           [((5, 3), (4,)), ((5,), (2, 3)), ((4, 2, 3), ())], ALL,
           inputs=[uniform(), indices(4)], grad=(0,), ops=["GatherV2"]),
    OpSpec("gather_axis1", lambda p, i: tf.gather(p, i, axis=1),
           lambda p, i: np.take(p, i, axis=1),
           [((2, 5, 3), (6,)), ((3, 4), (2, 2))], COPY,
           inputs=[uniform(), indices(4, "int64")], grad=(0,),
           ops=["GatherV2"]),
    OpSpec("gather_batch_dims",
           lambda p, i: tf.gather(p, i, axis=1, batch_dims=1),
           np_gather_batch1, [((3, 5, 2), (3, 4)), ((2, 4), (2, 6))],
           FLOATS, inputs=[uniform(), indices(4)], grad=(0,),
           ops=["GatherV2"]),
    OpSpec("gather_nd", tf.gather_nd, np_gather_nd,
           [((4, 3), (5, 2)), ((4, 3), (2, 1)), ((3, 3, 2), (2, 2, 2))],
           ALL, inputs=[uniform(), indices(3)], grad=(0,),
           ops=["GatherNd"]),
    OpSpec("scatter_update",
           lambda t, i, u: tf.tensor_scatter_nd_update(t, i, u),
           lambda t, i, u: np_scatter(t, i, u, add=False),
           [((5, 3), (3, 1), (3, 3)), ((4, 4), (2, 2), (2,))], ALL,
           inputs=[uniform(), distinct_rows(4), uniform()],
           grad=(0, 2), ops=["TensorScatterUpdate"]),
    OpSpec("scatter_add",
           lambda t, i, u: tf.tensor_scatter_nd_add(t, i, u),
           lambda t, i, u: np_scatter(t, i, u, add=True),
           [((5, 3), (4, 1), (4, 3)), ((4,), (4, 1), (4,))], NUMERIC,
           inputs=[uniform(), const_indices([[1], [0], [1], [3]]),
                   uniform()], grad=(0, 2), ops=["TensorScatterAdd"]),
    OpSpec("scatter_min",
           lambda t, i, u: tf.tensor_scatter_nd_min(t, i, u),
           lambda t, i, u: np_scatter(t, i, u, combine=np.minimum),
           [((5, 3), (4, 1), (4, 3)), ((4,), (4, 1), (4,))], NUMERIC,
           inputs=[uniform(), const_indices([[1], [0], [1], [3]]),
                   uniform()], grad=(0, 2), ops=["TensorScatterMin"]),
    OpSpec("scatter_max",
           lambda t, i, u: tf.tensor_scatter_nd_max(t, i, u),
           lambda t, i, u: np_scatter(t, i, u, combine=np.maximum),
           [((5, 3), (4, 1), (4, 3)), ((4,), (4, 1), (4,))], NUMERIC,
           inputs=[uniform(), const_indices([[1], [0], [1], [3]]),
                   uniform()], grad=(0, 2), ops=["TensorScatterMax"]),
    OpSpec("where_select", lambda c, x, y: tf.where(c, x, y),
           lambda c, x, y: np.where(c, x, y),
           [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (3,)),
            ((), (4,), ()), ((3, 1, 2), (4, 1), (3, 1, 1))], ALL,
           inputs=[booleans(), uniform(), uniform()], grad=(1, 2),
           ops=["SelectV2"]),
    OpSpec("where_coords", tf.where,
           lambda c: np.argwhere(c).astype(np.int64),
           # (a scalar condition is an InvalidArgumentError in TF 2.21:
           # test_tf_parity_fixes.py)
           [((3, 4),), ((5,),), ((2, 0),)], ("bool", "float32", "int32"),
           ops=["Where"]),
    OpSpec("shape", tf.shape,
           lambda x: np.array(x.shape, dtype=np.int32),
           [((2, 3),), ((),), ((0, 4, 1),)], ("float32", "bool"),
           ops=["Shape"]),
    OpSpec("shape_int64", lambda x: tf.shape(x, out_type=tf.int64),
           lambda x: np.array(x.shape, dtype=np.int64), [((2, 3),)],
           ("float16",), ops=["Shape"]),
    OpSpec("size", tf.size, lambda x: np.int32(x.size),
           [((2, 3),), ((),), ((0, 4),)], ("float32", "int8"),
           ops=["Size"]),
    OpSpec("rank", tf.rank, lambda x: np.int32(x.ndim),
           [((2, 3),), ((),)], ("float64", "bool"), ops=["Rank"]),
    OpSpec("fill", lambda v: tf.fill([2, 3], v),
           lambda v: np.full((2, 3), v, dtype=v.dtype), [((),)], ALL,
           grad=(0,), ops=["Fill"]),
    OpSpec("zeros_like", tf.zeros_like, np.zeros_like,
           [((2, 3),), ((),)], ALL, ops=["ZerosLike"]),
    OpSpec("ones_like", tf.ones_like, np.ones_like, [((2, 3),), ((0,),)],
           ALL, ops=["OnesLike"]),
    OpSpec("range_int", lambda: tf.range(3, 17, 4),
           lambda: np.arange(3, 17, 4, dtype=np.int32), [()], ("int32",),
           ops=["Range"]),
    OpSpec("range_float", lambda: tf.range(1.5, -2.0, -0.5),
           lambda: np.arange(1.5, -2.0, -0.5, dtype=np.float32), [()],
           ("float32",), ops=["Range"]),
    OpSpec("range_int64",
           lambda: tf.range(tf.constant(10, tf.int64)),
           lambda: np.arange(10, dtype=np.int64), [()], ("int64",),
           ops=["Range"]),
    OpSpec("linspace", lambda: tf.linspace(-1.0, 2.0, 7),
           lambda: np.linspace(-1, 2, 7, dtype=np.float32), [()],
           ("float32",), ops=["LinSpace"]),
    OpSpec("one_hot", lambda i: tf.one_hot(i, 4),
           lambda i: np_one_hot(i, 4), [((5,),), ((2, 3),), ((),)],
           ("float32",), inputs=[indices(6)], ops=["OneHot"]),
    OpSpec("one_hot_axis0", lambda i: tf.one_hot(i, 3, axis=0),
           lambda i: np_one_hot(i, 3, axis=0), [((2, 4),)], ("float32",),
           inputs=[indices(4, "int64")], ops=["OneHot"]),
    OpSpec("eye", lambda: tf.eye(3, 4, batch_shape=[2]),
           lambda: np.broadcast_to(np.eye(3, 4, dtype=np.float32),
                                   (2, 3, 4)).copy(), [()], ("float32",),
           ops=[]),
    OpSpec("boolean_mask", tf.boolean_mask,
           lambda x, m: x[m], [((4, 3), (4,)), ((2, 3), (2, 3))], COPY,
           inputs=[uniform(), booleans()], grad=(0,), ops=[]),
]
