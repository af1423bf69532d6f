"""tf.RaggedTensor: the Ragged tensors guide's values and printed text
(the table below is what TensorFlow 2.21 prints for each expression),
errors, gradients by finite differences, tf.function, tf.data, tf.nest
and memory."""

import numpy as np
import pytest

import tfmini as tf

from _leaks import assert_no_leak

TF_REPRS = [
    ('tf.add(digits, 3)',
     '<tf.RaggedTensor [[6, 4, 7, 4], [], [8, 12, 5], [9], []]>'),
    ('tf.reduce_mean(digits, axis=1)',
     '<tf.Tensor: shape=(5,), dtype=float64, numpy=array([2.25      ,        nan, 5.33333333, 6.        ,        nan])>'),
    ('tf.concat([digits, [[5, 3]]], axis=0)',
     '<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9, 2], [6], [], [5, 3]]>'),
    ('tf.tile(digits, [1, 2])',
     '<tf.RaggedTensor [[3, 1, 4, 1, 3, 1, 4, 1], [], [5, 9, 2, 5, 9, 2], [6, 6], []]>'),
    ('tf.map_fn(tf.math.square, digits)',
     '<tf.RaggedTensor [[9, 1, 16, 1], [], [25, 81, 4], [36], []]>'),
    ('digits[0]',
     '<tf.Tensor: shape=(4,), dtype=int32, numpy=array([3, 1, 4, 1], dtype=int32)>'),
    ('digits[:, :2]',
     '<tf.RaggedTensor [[3, 1], [], [5, 9], [6], []]>'),
    ('digits[:, -2:]',
     '<tf.RaggedTensor [[4, 1], [], [9, 2], [6], []]>'),
    ('digits[1:3]',
     '<tf.RaggedTensor [[], [5, 9, 2]]>'),
    ('digits[-1]',
     '<tf.Tensor: shape=(0,), dtype=int32, numpy=array([], dtype=int32)>'),
    ('digits + 3',
     '<tf.RaggedTensor [[6, 4, 7, 4], [], [8, 12, 5], [9], []]>'),
    ('digits + tf.ragged.constant([[1, 2, 3, 4], [], [5, 6, 7], [8], []])',
     '<tf.RaggedTensor [[4, 3, 7, 5], [], [10, 15, 9], [14], []]>'),
    ('tf.ragged.map_flat_values(lambda x: x * 2 + 1, digits)',
     '<tf.RaggedTensor [[7, 3, 9, 3], [], [11, 19, 5], [13], []]>'),
    ('digits.to_list()',
     '[[3, 1, 4, 1], [], [5, 9, 2], [6], []]'),
    ('tf.RaggedTensor.from_value_rowids(values=[3, 1, 4, 1, 5, 9, 2], value_rowids=[0, 0, 0, 0, 2, 2, 3])',
     '<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9], [2]]>'),
    ('tf.RaggedTensor.from_row_lengths(values=[3, 1, 4, 1, 5, 9, 2], row_lengths=[4, 0, 2, 1])',
     '<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9], [2]]>'),
    ('tf.RaggedTensor.from_row_splits(values=[3, 1, 4, 1, 5, 9, 2], row_splits=[0, 4, 4, 6, 7])',
     '<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9], [2]]>'),
    ('tf.ragged.constant([[1.0, 2.0], [3.0]])',
     '<tf.RaggedTensor [[1.0, 2.0], [3.0]]>'),
    ('tf.RaggedTensor.from_row_splits(values=[[1, 3], [0, 0], [1, 3], [5, 3], [3, 3], [1, 2]], row_splits=[0, 3, 4, 6])',
     '<tf.RaggedTensor [[[1, 3],\n  [0, 0],\n  [1, 3]], [[5, 3]], [[3, 3],\n                      [1, 2]]]>'),
    ('tf.RaggedTensor.from_row_splits(values=[[1, 3], [0, 0], [1, 3], [5, 3], [3, 3], [1, 2]], row_splits=[0, 3, 4, 6]).shape',
     'TensorShape([3, None, 2])'),
    ('rt3',
     '<tf.RaggedTensor [[[1, 2, 3]], [], [[], [4, 5], [6, 7, 8, 9], [10]]]>'),
    ('rt3.shape',
     'TensorShape([3, None, None])'),
    ('rt3.ragged_rank',
     '2'),
    ('rt3[1]',
     '<tf.RaggedTensor []>'),
    ('rt3[2][1]',
     '<tf.Tensor: shape=(2,), dtype=int32, numpy=array([4, 5], dtype=int32)>'),
    ('rt3[1:]',
     '<tf.RaggedTensor [[], [[], [4, 5], [6, 7, 8, 9], [10]]]>'),
    ('rt3[:, -1:]',
     '<tf.RaggedTensor [[[1, 2, 3]], [], [[10]]]>'),
    ('tf.RaggedTensor.from_tensor([[1, 3, -1, -1], [2, -1, -1, -1], [4, 5, 8, 9]], padding=-1)',
     '<tf.RaggedTensor [[1, 3], [2], [4, 5, 8, 9]]>'),
    ('tf.RaggedTensor.from_tensor([[1, 3, -1, -1], [2, -1, -1, -1], [4, 5, 8, 9]], lengths=[1, 0, 3])',
     '<tf.RaggedTensor [[1], [], [4, 5, 8]]>'),
    ('tf.ragged.constant([[1, 2], [3]]) + 3',
     '<tf.RaggedTensor [[4, 5], [6]]>'),
    ('tf.ragged.constant([[10, 87, 12], [19, 53], [12, 32]]) + [[1000], [2000], [3000]]',
     '<tf.RaggedTensor [[1010, 1087, 1012], [2019, 2053], [3012, 3032]]>'),
    ('tf.ragged.constant([[[1, 2], [3, 4], [5, 6]], [[7, 8]]], ragged_rank=1) + tf.constant([[10]])',
     '<tf.RaggedTensor [[[11, 12],\n  [13, 14],\n  [15, 16]], [[17, 18]]]>'),
    ('tf.ragged.constant([[[1], [2]], [], [[3]], [[4]]], ragged_rank=1) + tf.constant([10, 20, 30])',
     '<tf.RaggedTensor [[[11, 21, 31],\n  [12, 22, 32]], [], [[13, 23, 33]], [[14, 24, 34]]]>'),
    ('tf.ragged.constant([[[1, 2], [3]], [[4, 5]]]).to_tensor(default_value=-1)',
     '<tf.Tensor: shape=(2, 2, 2), dtype=int32, numpy=\narray([[[ 1,  2],\n        [ 3, -1]],\n\n       [[ 4,  5],\n        [-1, -1]]], dtype=int32)>'),
    ('digits.to_tensor()',
     '<tf.Tensor: shape=(5, 4), dtype=int32, numpy=\narray([[3, 1, 4, 1],\n       [0, 0, 0, 0],\n       [5, 9, 2, 0],\n       [6, 0, 0, 0],\n       [0, 0, 0, 0]], dtype=int32)>'),
    ('digits.to_tensor(default_value=9, shape=[3, 2])',
     '<tf.Tensor: shape=(3, 2), dtype=int32, numpy=\narray([[3, 1],\n       [9, 9],\n       [5, 9]], dtype=int32)>'),
    ('digits.row_lengths()',
     '<tf.Tensor: shape=(5,), dtype=int64, numpy=array([4, 0, 3, 1, 0])>'),
    ('digits.nrows()',
     '<tf.Tensor: shape=(), dtype=int64, numpy=5>'),
    ('digits.value_rowids()',
     '<tf.Tensor: shape=(8,), dtype=int64, numpy=array([0, 0, 0, 0, 2, 2, 2, 3])>'),
    ('digits.bounding_shape()',
     '<tf.Tensor: shape=(2,), dtype=int64, numpy=array([5, 4])>'),
    ('digits.flat_values',
     '<tf.Tensor: shape=(8,), dtype=int32, numpy=array([3, 1, 4, 1, 5, 9, 2, 6], dtype=int32)>'),
    ('rt3.nested_row_splits',
     '(<tf.Tensor: shape=(4,), dtype=int64, numpy=array([0, 1, 1, 5])>, <tf.Tensor: shape=(6,), dtype=int64, numpy=array([ 0,  3,  3,  5,  9, 10])>)'),
    ('tf.reduce_sum(digits, axis=1)',
     '<tf.Tensor: shape=(5,), dtype=int32, numpy=array([ 9,  0, 16,  6,  0], dtype=int32)>'),
    ('tf.reduce_max(digits, axis=1)',
     '<tf.Tensor: shape=(5,), dtype=int32, numpy=\narray([          4, -2147483648,           9,           6, -2147483648],\n      dtype=int32)>'),
    ('tf.reduce_min(digits, axis=1)',
     '<tf.Tensor: shape=(5,), dtype=int32, numpy=\narray([         1, 2147483647,          2,          6, 2147483647],\n      dtype=int32)>'),
    ('tf.reduce_sum(digits, axis=0)',
     '<tf.Tensor: shape=(4,), dtype=int32, numpy=array([14, 10,  6,  1], dtype=int32)>'),
    ('tf.reduce_max(digits, axis=0)',
     '<tf.Tensor: shape=(4,), dtype=int32, numpy=array([6, 9, 4, 1], dtype=int32)>'),
    ('tf.reduce_sum(digits)',
     '<tf.Tensor: shape=(), dtype=int32, numpy=31>'),
    ('tf.reduce_prod(digits, axis=1)',
     '<tf.Tensor: shape=(5,), dtype=int32, numpy=array([12,  1, 90,  6,  1], dtype=int32)>'),
    ('tf.reduce_mean(digits, axis=0)',
     '<tf.Tensor: shape=(4,), dtype=float64, numpy=array([4.66666667, 5.        , 3.        , 1.        ])>'),
    ('tf.reduce_any(digits > 4, axis=1)',
     '<tf.Tensor: shape=(5,), dtype=bool, numpy=array([False, False,  True,  True, False])>'),
    ('tf.reduce_all(digits > 0, axis=1)',
     '<tf.Tensor: shape=(5,), dtype=bool, numpy=array([ True,  True,  True,  True,  True])>'),
    ('tf.reduce_sum(rt3, axis=2)',
     '<tf.RaggedTensor [[6], [], [0, 9, 30, 10]]>'),
    ('tf.reduce_sum(rt3, axis=1)',
     '<tf.RaggedTensor [[1, 2, 3], [], [20, 12, 8, 9]]>'),
    ('tf.gather(digits, [2, 0])',
     '<tf.RaggedTensor [[5, 9, 2], [3, 1, 4, 1]]>'),
    ('tf.stack([digits[:2], digits[2:4]])',
     '<tf.RaggedTensor [[[3, 1, 4, 1], []],\n [[5, 9, 2], [6]]]>'),
    ('tf.stack([digits, digits], axis=1)',
     '<tf.RaggedTensor [[[3, 1, 4, 1], [3, 1, 4, 1]],\n [[], []],\n [[5, 9, 2], [5, 9, 2]],\n [[6], [6]],\n [[], []]]>'),
    ('tf.concat([digits, digits], axis=1)',
     '<tf.RaggedTensor [[3, 1, 4, 1, 3, 1, 4, 1], [], [5, 9, 2, 5, 9, 2], [6, 6], []]>'),
    ('tf.where(digits > 3, digits, -digits)',
     '<tf.RaggedTensor [[-3, -1, 4, -1], [], [5, 9, -2], [6], []]>'),
    ('tf.cast(digits, tf.float32) / 2',
     '<tf.RaggedTensor [[1.5, 0.5, 2.0, 0.5], [], [2.5, 4.5, 1.0], [3.0], []]>'),
    ('tf.math.sqrt(tf.cast(digits, tf.float32))',
     '<tf.RaggedTensor [[1.7320508, 1.0, 2.0, 1.0], [], [2.236068, 3.0, 1.4142135], [2.4494898],\n []]>'),
    ('tf.ragged.constant([[0.5, 1.5], [2.5]]) * 0.1',
     '<tf.RaggedTensor [[0.05, 0.15], [0.25]]>'),
    ('tf.ragged.constant([[1, 2], [3]], dtype=tf.float64)',
     '<tf.RaggedTensor [[1.0, 2.0], [3.0]]>'),
    ('tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], inner_shape=(2,))',
     '<tf.RaggedTensor [[[1, 2],\n  [3, 4]], [[5, 6]]]>'),
    ('tf.ragged.constant([[1, 2], [], [3]], row_splits_dtype=tf.int32).row_splits',
     '<tf.Tensor: shape=(4,), dtype=int32, numpy=array([0, 2, 2, 3], dtype=int32)>'),
    ('tf.ragged.range([3, 1, 4])',
     '<tf.RaggedTensor [[0, 1, 2], [0], [0, 1, 2, 3]]>'),
    ('tf.ragged.range([1, 2], [4, 7], 2)',
     '<tf.RaggedTensor [[1, 3], [2, 4, 6]]>'),
    ('tf.ragged.boolean_mask(digits, digits > 2)',
     '<tf.RaggedTensor [[3, 4], [], [5, 9], [6], []]>'),
    ('tf.reverse(digits, [1])',
     '<tf.RaggedTensor [[1, 4, 1, 3], [], [2, 9, 5], [6], []]>'),
    ('tf.RaggedTensorSpec(shape=[2, None], dtype=tf.int32)',
     'RaggedTensorSpec(TensorShape([2, None]), tf.int32, 1, tf.int64)'),
    ('digits.shape',
     'TensorShape([5, None])'),
    ('tf.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1).shape',
     'TensorShape([2, None, 2])'),
    ('tf.nest.flatten(digits, expand_composites=True)',
     '[<tf.Tensor: shape=(8,), dtype=int32, numpy=array([3, 1, 4, 1, 5, 9, 2, 6], dtype=int32)>, <tf.Tensor: shape=(6,), dtype=int64, numpy=array([0, 4, 4, 7, 8, 8])>]'),
    ('tf.ragged.constant([[1, 2], [3]]).numpy()',
     'array([array([1, 2], dtype=int32), array([3], dtype=int32)], dtype=object)'),
    ('tf.ragged.constant([[1, 2], [3, 4]]).numpy()',
     'array([[1, 2],\n       [3, 4]], dtype=int32)'),
    ('digits._type_spec',
     'RaggedTensorSpec(TensorShape([5, None]), tf.int32, 1, tf.int64)'),
    ('abs(-digits)',
     '<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9, 2], [6], []]>'),
    ('-digits',
     '<tf.RaggedTensor [[-3, -1, -4, -1], [], [-5, -9, -2], [-6], []]>'),
    ('digits * digits',
     '<tf.RaggedTensor [[9, 1, 16, 1], [], [25, 81, 4], [36], []]>'),
    ('2 * digits',
     '<tf.RaggedTensor [[6, 2, 8, 2], [], [10, 18, 4], [12], []]>'),
    ('digits // 2',
     '<tf.RaggedTensor [[1, 0, 2, 0], [], [2, 4, 1], [3], []]>'),
    ('digits % 3',
     '<tf.RaggedTensor [[0, 1, 1, 1], [], [2, 0, 2], [0], []]>'),
    ('tf.ragged.constant([[True, False], [True]]) & tf.ragged.constant([[True, True], [False]])',
     '<tf.RaggedTensor [[True, False], [False]]>'),
    ('tf.ones_like(digits)',
     '<tf.RaggedTensor [[1, 1, 1, 1], [], [1, 1, 1], [1], []]>'),
    ('tf.zeros_like(tf.ragged.constant([[1.5], [2.5, 3.5]]))',
     '<tf.RaggedTensor [[0.0], [0.0, 0.0]]>'),
    ('tf.RaggedTensor.from_tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], ragged_rank=2)',
     '<tf.RaggedTensor [[[1, 2],\n  [3, 4]],\n\n [[5, 6],\n  [7, 8]]]>'),
    ('tf.size(digits)',
     '<tf.Tensor: shape=(), dtype=int32, numpy=8>'),
    ('tf.add_n([digits, digits, digits])',
     '<tf.RaggedTensor [[9, 3, 12, 3], [], [15, 27, 6], [18], []]>'),
    ('tf.math.maximum(digits, 3)',
     '<tf.RaggedTensor [[3, 3, 4, 3], [], [5, 9, 3], [6], []]>'),
    ('digits.with_flat_values(digits.flat_values * 10)',
     '<tf.RaggedTensor [[30, 10, 40, 10], [], [50, 90, 20], [60], []]>'),
    ('tf.ragged.row_splits_to_segment_ids([0, 2, 2, 5])',
     '<tf.Tensor: shape=(5,), dtype=int64, numpy=array([0, 0, 2, 2, 2])>'),
    ('tf.ragged.segment_ids_to_row_splits([0, 0, 2, 2, 2])',
     '<tf.Tensor: shape=(4,), dtype=int64, numpy=array([0, 2, 2, 5])>'),
]


def _names():
    digits = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    rt3 = tf.RaggedTensor.from_row_splits(
        values=tf.RaggedTensor.from_row_splits(
            values=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            row_splits=[0, 3, 3, 5, 9, 10]),
        row_splits=[0, 1, 1, 5])
    return {"tf": tf, "np": np, "digits": digits, "rt3": rt3}


@pytest.mark.parametrize("expr,text", TF_REPRS,
                         ids=[e for e, _ in TF_REPRS])
def test_prints_as_tensorflow(expr, text):
    assert repr(eval(expr, _names())) == text


def test_print_and_str_match_repr():
    d = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    assert str(d) == repr(d) == \
        "<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9, 2], [6], []]>"


# ---- construction and errors ---------------------------------------------

def test_constructor_is_private():
    with pytest.raises(ValueError, match="constructor is private"):
        tf.RaggedTensor(tf.constant([1]), tf.constant([0, 1], tf.int64))


def test_constant_rejects_mixed_depth():
    with pytest.raises(ValueError, match="same nesting depth"):
        tf.ragged.constant([1, [2, 3]])


def test_constant_checks_inner_shape():
    with pytest.raises(ValueError, match="inner_shape"):
        tf.ragged.constant([[[1, 2]], [[3, 4]]], inner_shape=(3,))


def test_empty_constant_with_dtype():
    t = tf.ragged.constant([], dtype=tf.int32)
    assert isinstance(t, tf.Tensor) and t.dtype == tf.int32
    assert t.shape.as_list() == [0]


def test_empty_constant_is_float32():
    r = tf.ragged.constant([[], []])
    assert r.dtype == tf.float32 and r.to_list() == [[], []]
    assert r.shape.as_list() == [2, None]


@pytest.mark.parametrize("splits,what", [
    ([1, 2, 3], "row_splits\\[0\\] must be 0"),
    ([0, 3, 2], "ascending"),
    ([0, 2], "must equal the number of values"),
])
def test_invalid_row_splits(splits, what):
    with pytest.raises(tf.errors.InvalidArgumentError, match=what):
        tf.RaggedTensor.from_row_splits([1, 2, 3], splits)


def test_from_value_rowids_checks_rows():
    with pytest.raises(tf.errors.InvalidArgumentError, match="sorted"):
        tf.RaggedTensor.from_value_rowids([1, 2], [1, 0])


def test_mismatched_splits_name_op_and_shapes():
    x = tf.ragged.constant([[1, 2, 3], [4], [5, 6]])
    y = tf.ragged.constant([[1, 2], [3, 4], [5, 6]])
    # TF 2.21's text: its assert_equal on the two row_splits.
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        x + y
    assert str(e.value) == (
        "Condition x == y did not hold.\n"
        "Indices of first 1 different values:\n[[1]]\n"
        "Corresponding x values:\n[3]\nCorresponding y values:\n[2]\n"
        "First 3 elements of x:\n[0 3 4]\n"
        "First 3 elements of y:\n[0 2 4]")


def test_dense_that_does_not_broadcast():
    x = tf.ragged.constant([[1, 2], [3, 4, 5, 6], [7]])
    y = tf.constant([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])
    # TF 2.21: y's uniform rows of 4 (x) against x's rows (y).
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"(?s)Corresponding x values:\n\[ 4  8 12\]\n"
                             r"Corresponding y values:\n\[2 6 7\]"):
        x + y


def test_index_out_of_range():
    d = tf.ragged.constant([[1], [2, 3]])
    with pytest.raises(IndexError, match="out of bounds"):
        d[2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of"):
        d[:, 1]


def test_concat_of_different_ragged_rank():
    a = tf.ragged.constant([[1], [2, 3]])
    b = tf.ragged.constant([[[1]], [[2, 3]]])
    with pytest.raises(ValueError, match="ragged_rank"):
        tf.concat([a, b], axis=0)


def test_dense_ops_unaffected_by_dispatch():
    assert tf.add(tf.constant([1, 2]), 1).numpy().tolist() == [2, 3]
    assert tf.add.__name__ == "add" and tf.math.add is tf.add
    with pytest.raises(Exception):
        tf.add(tf.constant([1]), object())


# ---- conversions -----------------------------------------------------------

def test_round_trips():
    rows = [[3, 1, 4, 1], [], [5, 9, 2], [6], []]
    d = tf.ragged.constant(rows)
    assert tf.RaggedTensor.from_tensor(d.to_tensor(), lengths=[
        len(r) for r in rows]).to_list() == rows
    assert tf.RaggedTensor.from_sparse(d.to_sparse()).to_list() == rows
    assert d.to_list() == rows
    assert [r.numpy().tolist() for r in d] == rows
    again = tf.RaggedTensor.from_nested_row_splits(
        d.flat_values, d.nested_row_splits)
    assert again.to_list() == rows


def test_pickle():
    import pickle
    d = tf.ragged.constant([[1.5], [], [2.5, 3.5]])
    e = pickle.loads(pickle.dumps(d))
    assert e.to_list() == d.to_list() and e.dtype == tf.float32


def test_shape_and_spec():
    d = tf.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1)
    assert d.shape.as_list() == [2, None, 2]
    spec = d._type_spec
    assert spec == tf.RaggedTensorSpec([2, None, 2], tf.int32, 1)
    assert spec.is_compatible_with(d)
    assert not spec.is_compatible_with(tf.ragged.constant([[1.0]]))


# ---- gradients (central differences, float64) ------------------------------

SPLITS = [0, 3, 3, 5, 6]


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d.flat[i] = eps
        g.flat[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


GRAD_CASES = {
    "sum_axis1": lambda r: tf.reduce_sum(
        tf.reduce_sum(r, axis=1) * tf.constant([1.0, 2.0, 3.0, 4.0],
                                               tf.float64)),
    "mean_axis1": lambda r: tf.reduce_sum(tf.where(
        tf.math.is_nan(tf.reduce_mean(r, axis=1)),
        tf.zeros([4], tf.float64), tf.reduce_mean(r, axis=1) ** 2)),
    "max_axis1": lambda r: tf.reduce_sum(
        tf.reduce_max(r, axis=1)[::2] * tf.constant([1.0, 3.0],
                                                    tf.float64)),
    "axis0": lambda r: tf.reduce_sum(tf.reduce_sum(r, axis=0) ** 2),
    "elementwise": lambda r: tf.reduce_sum(tf.sin(r) * r + 2.0 * r),
    "to_tensor": lambda r: tf.reduce_sum(
        r.to_tensor(default_value=1.5) ** 3),
    "concat_gather": lambda r: tf.reduce_sum(tf.gather(
        tf.concat([r, r * 2.0], axis=1), [3, 0]).flat_values ** 2),
    "slice_rows": lambda r: tf.reduce_sum(r[:, :2].flat_values ** 2),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradient_through_values(name):
    fn = GRAD_CASES[name]
    x0 = np.array([0.3, -1.2, 2.0, 0.7, 1.1, -0.4])

    def f(x):
        r = tf.RaggedTensor.from_row_splits(tf.constant(x), SPLITS)
        return float(fn(r))
    v = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = fn(tf.RaggedTensor.from_row_splits(v, SPLITS))
    g = tape.gradient(y, v)
    np.testing.assert_allclose(g.numpy(), _fd(f, x0), rtol=1e-5, atol=1e-6)


def test_gradient_with_variable_values():
    w = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        r = tf.RaggedTensor.from_row_lengths(w * 2.0, [2, 1])
        y = tf.reduce_sum(tf.reduce_sum(r, axis=1) * tf.constant([1.0, 5.0]))
    assert tape.gradient(y, w).numpy().tolist() == [2.0, 2.0, 10.0]


# ---- tf.function -----------------------------------------------------------

def test_ragged_input_signature():
    @tf.function(input_signature=[
        tf.RaggedTensorSpec(shape=[None, None], dtype=tf.int32)])
    def max_and_min(rt):
        return (tf.math.reduce_max(rt, axis=-1),
                tf.math.reduce_min(rt, axis=-1))
    mx, mn = max_and_min(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]))
    assert mx.numpy().tolist() == [2, 3, 6]
    assert mn.numpy().tolist() == [1, 3, 4]
    mx, _ = max_and_min(tf.ragged.constant([[7], [], [1, 9, 2, 3]]))
    assert mx.numpy().tolist() == [7, np.iinfo(np.int32).min, 9]
    assert max_and_min.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError):
        max_and_min(tf.ragged.constant([[1.0]]))


def test_ragged_result_comes_back_ragged():
    @tf.function(input_signature=[
        tf.RaggedTensorSpec(shape=[None, None], dtype=tf.float32)])
    def f(rt):
        return rt * 2.0 + 1.0, tf.reduce_mean(rt, axis=1)
    r, m = f(tf.ragged.constant([[1.0, 3.0], [], [5.0]]))
    assert isinstance(r, tf.RaggedTensor)
    assert r.to_list() == [[3.0, 7.0], [], [11.0]]
    assert np.isnan(m.numpy()[1]) and m.numpy()[0] == 2.0
    text = f.get_concrete_function().pretty_printed_signature()
    assert "RaggedTensorSpec(TensorShape([None, None]), tf.float32, 1, " \
           "tf.int64)" in text


def test_palindrome_from_the_guide():
    @tf.function
    def make_palindrome(x, axis):
        return tf.concat([x, tf.reverse(x, [axis])], axis)
    r = make_palindrome(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]), 1)
    assert repr(r) == \
        "<tf.RaggedTensor [[1, 2, 2, 1], [3, 3], [4, 5, 6, 6, 5, 4]]>"
    d = make_palindrome(tf.constant([[1, 2], [3, 4], [5, 6]]), 1)
    assert d.numpy().tolist() == [[1, 2, 2, 1], [3, 4, 4, 3], [5, 6, 6, 5]]


def test_ragged_argument_without_signature_keys_by_components():
    @tf.function
    def f(rt):
        return rt + 1
    a = tf.ragged.constant([[1, 2], [3]])
    b = tf.ragged.constant([[5], [6, 7]])      # same component shapes
    assert f(a).to_list() == [[2, 3], [4]]
    assert f(b).to_list() == [[6], [7, 8]]
    assert f.experimental_get_tracing_count() == 1
    f(tf.ragged.constant([[1.0]]))
    assert f.experimental_get_tracing_count() == 2


def test_to_tensor_while_tracing_needs_a_static_shape():
    @tf.function(input_signature=[
        tf.RaggedTensorSpec(shape=[None, None], dtype=tf.int32)])
    def f(rt):
        return rt.to_tensor()
    with pytest.raises(ValueError, match="static result shape"):
        f(tf.ragged.constant([[1]]))

    @tf.function(input_signature=[
        tf.RaggedTensorSpec(shape=[3, None], dtype=tf.int32)])
    def g(rt):
        return rt.to_tensor(shape=[None, 2])
    assert g(tf.ragged.constant([[1, 2, 3], [], [4]])).numpy().tolist() \
        == [[1, 2], [0, 0], [4, 0]]


# ---- map_fn, nest, tf.data -------------------------------------------------

def test_map_fn_signatures():
    d = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    sums = tf.map_fn(tf.reduce_sum, d, fn_output_signature=tf.int32)
    assert sums.numpy().tolist() == [9, 0, 16, 6, 0]
    out = tf.map_fn(lambda r: tf.concat([r, r], 0), d,
                    fn_output_signature=tf.RaggedTensorSpec([None],
                                                            tf.int32, 0))
    assert out.to_list() == [[3, 1, 4, 1, 3, 1, 4, 1], [], [5, 9, 2, 5, 9, 2],
                             [6, 6], []]
    dense = tf.map_fn(lambda x: x * 2, tf.constant([[1, 2], [3, 4]]))
    assert dense.numpy().tolist() == [[2, 4], [6, 8]]


def test_nest_expand_composites():
    d = tf.ragged.constant([[1, 2], [3]])
    flat = tf.nest.flatten({"a": d, "b": 5}, expand_composites=True)
    assert [x.numpy().tolist() if hasattr(x, "numpy") else x
            for x in flat] == [[1, 2, 3], [0, 2, 3], 5]
    back = tf.nest.pack_sequence_as({"a": d, "b": 5}, flat,
                                    expand_composites=True)
    assert back["a"].to_list() == [[1, 2], [3]] and back["b"] == 5
    assert tf.nest.flatten(d) == [d]
    tf.nest.assert_same_structure(d, tf.ragged.constant([[9], [8, 7]]),
                                  expand_composites=True)
    with pytest.raises(TypeError):
        tf.nest.assert_same_structure(d, tf.constant([1]),
                                      expand_composites=True)


def test_dataset_from_ragged_slices_and_batches():
    ds = tf.data.Dataset.from_tensor_slices(
        tf.ragged.constant([[1, 2], [3], [4, 5, 6]]))
    assert repr(ds.element_spec) == \
        "RaggedTensorSpec(TensorShape([None]), tf.int32, 0, tf.int64)"
    assert [x.numpy().tolist() for x in ds] == [[1, 2], [3], [4, 5, 6]]
    batches = list(ds.batch(2))
    assert [repr(b) for b in batches] == [
        "<tf.RaggedTensor [[1, 2], [3]]>", "<tf.RaggedTensor [[4, 5, 6]]>"]
    assert repr(ds.batch(2).element_spec) == \
        "RaggedTensorSpec(TensorShape([None, None]), tf.int32, 1, tf.int64)"


def test_ragged_batch():
    ds = tf.data.Dataset.range(4).map(lambda x: tf.range(x))
    assert [repr(b) for b in ds.ragged_batch(2)] == [
        "<tf.RaggedTensor [[], [0]]>", "<tf.RaggedTensor [[0, 1], [0, 1, 2]]>"]
    filled = tf.data.Dataset.range(4).map(lambda x: tf.fill([x, 3], x))
    b = list(filled.ragged_batch(2))[1]
    assert b.shape.as_list() == [2, None, 3]
    assert b.to_list() == [[[2, 2, 2], [2, 2, 2]],
                           [[3, 3, 3], [3, 3, 3], [3, 3, 3]]]
    assert len(list(ds.ragged_batch(3, drop_remainder=True))) == 1


# ---- memory ---------------------------------------------------------------

def test_ragged_ops_do_not_leak():
    def round_():
        d = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
        f = tf.cast(d, tf.float32)
        _ = (d + 1, tf.reduce_sum(d, axis=1), tf.reduce_mean(f, axis=0),
             d.to_tensor(), d[:, :2], tf.concat([d, d], axis=1),
             tf.gather(d, [1, 2]), repr(d), d.to_list(),
             tf.map_fn(tf.math.square, d))
        try:
            d + tf.ragged.constant([[1]])
        except tf.errors.InvalidArgumentError:
            pass
        v = tf.constant([1.0, 2.0, 3.0])
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.reduce_sum(tf.RaggedTensor.from_row_lengths(
                v, [2, 1]).to_tensor() ** 2)
        tape.gradient(y, v)
    assert_no_leak(round_)


def test_equality_is_elementwise():
    a = tf.ragged.constant([[1, 2], [3]])
    assert (a == tf.ragged.constant([[1, 5], [3]])).to_list() == \
        [[True, False], [True]]
    assert (a != 3).to_list() == [[True, True], [False]]
    with pytest.raises(TypeError):
        hash(a)


DATASET_GUIDE_OUTPUT = """\
Element 0:
        colors = [1 2]
       lengths = 7
Element 1:
        colors = [3]
       lengths = 8
Element 2:
        colors = [4 5 6]
       lengths = 9
Element 0:
        colors = <tf.RaggedTensor [[1, 2], [3]]>
       lengths = [7 8]
Element 1:
        colors = <tf.RaggedTensor [[4, 5, 6]]>
       lengths = [9]
Element 0:
        colors = [1 2]
       lengths = 7
Element 1:
        colors = [3]
       lengths = 8
Element 2:
        colors = [4 5 6]
       lengths = 9
<tf.RaggedTensor [[0], [0, 1, 2, 3, 4]]>
<tf.RaggedTensor [[0, 1, 2], [0, 1]]>
<tf.RaggedTensor [[0, 1, 2, 3, 4, 5, 6, 7]]>
Element 0:
   mean_length = 7
 length_ranges = <tf.RaggedTensor [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6, 7]]>
Element 1:
   mean_length = 9
 length_ranges = <tf.RaggedTensor [[0, 1, 2, 3, 4, 5, 6, 7, 8]]>
"""


def test_dataset_section_of_the_guide(capsys):
    def print_dictionary_dataset(dataset):
        for i, element in enumerate(dataset):
            print("Element {}:".format(i))
            for (feature_name, feature_value) in element.items():
                print('{:>14} = {}'.format(feature_name, feature_value))
    dataset = tf.data.Dataset.from_tensor_slices({
        'colors': tf.ragged.constant([[1, 2], [3], [4, 5, 6]]),
        'lengths': tf.constant([7, 8, 9])})
    print_dictionary_dataset(dataset)
    batched_dataset = dataset.batch(2)
    print_dictionary_dataset(batched_dataset)
    print_dictionary_dataset(batched_dataset.unbatch())
    non_ragged = tf.data.Dataset.from_tensor_slices([1, 5, 3, 2, 8])
    for element in non_ragged.map(tf.range).ragged_batch(2):
        print(element)

    def transform_lengths(features):
        return {'mean_length': tf.math.reduce_mean(features['lengths']),
                'length_ranges': tf.ragged.range(features['lengths'])}
    print_dictionary_dataset(batched_dataset.map(transform_lengths))
    assert capsys.readouterr().out == DATASET_GUIDE_OUTPUT


# The Ragged tensors guide's code cells (those without strings or Keras),
# run unchanged; the output below is TF 2.21's.
RAGGED_GUIDE = """\
digits = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
print(tf.add(digits, 3))
print(tf.reduce_mean(digits, axis=1))
print(tf.concat([digits, [[5, 3]]], axis=0))
print(tf.tile(digits, [1, 2]))
print(tf.map_fn(tf.math.square, digits))
print(digits[0])
print(digits[:, :2])
print(digits[:, -2:])
print(digits + 3)
print(digits + tf.ragged.constant([[1, 2, 3, 4], [], [5, 6, 7], [8], []]))
times_two_plus_one = lambda x: x * 2 + 1
print(tf.ragged.map_flat_values(times_two_plus_one, digits))
print(digits.to_list())
print(digits.numpy())
print(tf.RaggedTensor.from_value_rowids(
    values=[3, 1, 4, 1, 5, 9, 2],
    value_rowids=[0, 0, 0, 0, 2, 2, 3]))
print(tf.RaggedTensor.from_row_lengths(
    values=[3, 1, 4, 1, 5, 9, 2],
    row_lengths=[4, 0, 2, 1]))
print(tf.RaggedTensor.from_row_splits(
    values=[3, 1, 4, 1, 5, 9, 2],
    row_splits=[0, 4, 4, 6, 7]))
print(tf.ragged.constant([[1.0, 2.0], [3.0]]))
try:
  tf.ragged.constant([[[1, 2], [3]], [[4, 5], [6, 7]]], ragged_rank=0)
except ValueError as exception:
  print("ValueError")
rt = tf.RaggedTensor.from_row_splits(
    values=[[1, 3], [0, 0], [1, 3], [5, 3], [3, 3], [1, 2]],
    row_splits=[0, 3, 4, 6])
print(rt)
print("Shape: {}".format(rt.shape))
print("Number of partitioned dimensions: {}".format(rt.ragged_rank))
rt = tf.RaggedTensor.from_uniform_row_length(
    values=tf.RaggedTensor.from_row_splits(
        values=[10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
        row_splits=[0, 3, 5, 9, 10]),
    uniform_row_length=2)
print(rt)
print("Shape: {}".format(rt.shape))
print("Number of partitioned dimensions: {}".format(rt.ragged_rank))
x = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
y = tf.ragged.constant([[1, 1], [2], [3, 3, 3]])
print(x + y)
x = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
print(x + 3)
rt = tf.RaggedTensor.from_row_splits(
    values=tf.RaggedTensor.from_row_splits(
        values=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        row_splits=[0, 3, 3, 5, 9, 10]),
    row_splits=[0, 1, 1, 5])
print(rt[1])
print(rt[2][1])
print(rt[1:])
print(rt[:, -1:])
x = [[1, 3, -1, -1], [2, -1, -1, -1], [4, 5, 8, 9]]
print(tf.RaggedTensor.from_tensor(x, padding=-1))
rt = tf.ragged.constant([[1, 2], [3, 4, 5], [6], [], [7]])
print("Python list:", rt.to_list())
print("NumPy array:", rt.numpy())
print("Values:", rt.values.numpy())
print("Splits:", rt.row_splits.numpy())
print("Indexed value:", rt[1].numpy())
x = tf.ragged.constant([[1, 2], [3]])
y = 3
print(x + y)
x = tf.ragged.constant(
   [[10, 87, 12],
    [19, 53],
    [12, 32]])
y = [[1000], [2000], [3000]]
print(x + y)
x = tf.ragged.constant(
    [[[1, 2], [3, 4], [5, 6]],
     [[7, 8]]],
    ragged_rank=1)
y = tf.constant([[10]])
print(x + y)
x = tf.ragged.constant(
    [[[1], [2]],
     [],
     [[3]],
     [[4]]],
    ragged_rank=1)
y = tf.constant([10, 20, 30])
print(x + y)
x = tf.ragged.constant([[1, 2], [3, 4, 5, 6], [7]])
y = tf.constant([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])
try:
  x + y
except tf.errors.InvalidArgumentError as exception:
  print("InvalidArgumentError")
x = tf.ragged.constant([[1, 2, 3], [4], [5, 6]])
y = tf.ragged.constant([[1, 2], [3, 4], [5, 6]])
try:
  x + y
except tf.errors.InvalidArgumentError as exception:
  print("InvalidArgumentError")
rt = tf.RaggedTensor.from_row_splits(
    values=[3, 1, 4, 1, 5, 9, 2],
    row_splits=[0, 4, 4, 6, 7])
print(rt)
rt = tf.RaggedTensor.from_row_splits(
    values=tf.RaggedTensor.from_row_splits(
        values=[10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
        row_splits=[0, 3, 3, 5, 9, 10]),
    row_splits=[0, 1, 1, 5])
print(rt)
print("Shape: {}".format(rt.shape))
print("Number of partitioned dimensions: {}".format(rt.ragged_rank))
rt = tf.RaggedTensor.from_nested_row_lengths(
    flat_values=[10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
    nested_row_lengths=([1, 0, 4], [3, 0, 2, 4, 1]))
print(rt)
rt = tf.RaggedTensor.from_row_splits(
    values=[[1, 3], [0, 0], [1, 3], [5, 3], [3, 3], [1, 2]],
    row_splits=[0, 3, 4, 6])
print(rt)
print("Shape: {}".format(rt.shape))
print("Number of partitioned dimensions: {}".format(rt.ragged_rank))
print("Flat values shape: {}".format(rt.flat_values.shape))
print("Flat values:\\n{}".format(rt.flat_values))
@tf.function
def make_palindrome(x, axis):
  return tf.concat([x, tf.reverse(x, [axis])], axis)
print(make_palindrome(tf.constant([[1, 2], [3, 4], [5, 6]]), axis=1))
print(make_palindrome(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]), axis=1))
@tf.function(
    input_signature=[tf.RaggedTensorSpec(shape=[None, None], dtype=tf.int32)])
def max_and_min(rt):
  return (tf.math.reduce_max(rt, axis=-1), tf.math.reduce_min(rt, axis=-1))
max_and_min(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]))
@tf.function
def increment(x):
  return x + 1
rt = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
cf = increment.get_concrete_function(rt)
print(cf(rt))
"""

RAGGED_GUIDE_OUTPUT = """\
<tf.RaggedTensor [[6, 4, 7, 4], [], [8, 12, 5], [9], []]>
tf.Tensor([2.25              nan 5.33333333 6.                nan], shape=(5,), dtype=float64)
<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9, 2], [6], [], [5, 3]]>
<tf.RaggedTensor [[3, 1, 4, 1, 3, 1, 4, 1], [], [5, 9, 2, 5, 9, 2], [6, 6], []]>
<tf.RaggedTensor [[9, 1, 16, 1], [], [25, 81, 4], [36], []]>
tf.Tensor([3 1 4 1], shape=(4,), dtype=int32)
<tf.RaggedTensor [[3, 1], [], [5, 9], [6], []]>
<tf.RaggedTensor [[4, 1], [], [9, 2], [6], []]>
<tf.RaggedTensor [[6, 4, 7, 4], [], [8, 12, 5], [9], []]>
<tf.RaggedTensor [[4, 3, 7, 5], [], [10, 15, 9], [14], []]>
<tf.RaggedTensor [[7, 3, 9, 3], [], [11, 19, 5], [13], []]>
[[3, 1, 4, 1], [], [5, 9, 2], [6], []]
[array([3, 1, 4, 1], dtype=int32) array([], dtype=int32)
 array([5, 9, 2], dtype=int32) array([6], dtype=int32)
 array([], dtype=int32)]
<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9], [2]]>
<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9], [2]]>
<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9], [2]]>
<tf.RaggedTensor [[1.0, 2.0], [3.0]]>
ValueError
<tf.RaggedTensor [[[1, 3],
  [0, 0],
  [1, 3]], [[5, 3]], [[3, 3],
                      [1, 2]]]>
Shape: (3, None, 2)
Number of partitioned dimensions: 1
<tf.RaggedTensor [[[10, 11, 12], [13, 14]],
 [[15, 16, 17, 18], [19]]]>
Shape: (2, 2, None)
Number of partitioned dimensions: 2
<tf.RaggedTensor [[2, 3], [5], [7, 8, 9]]>
<tf.RaggedTensor [[4, 5], [6], [7, 8, 9]]>
<tf.RaggedTensor []>
tf.Tensor([4 5], shape=(2,), dtype=int32)
<tf.RaggedTensor [[], [[], [4, 5], [6, 7, 8, 9], [10]]]>
<tf.RaggedTensor [[[1, 2, 3]], [], [[10]]]>
<tf.RaggedTensor [[1, 3], [2], [4, 5, 8, 9]]>
Python list: [[1, 2], [3, 4, 5], [6], [], [7]]
NumPy array: [array([1, 2], dtype=int32) array([3, 4, 5], dtype=int32)
 array([6], dtype=int32) array([], dtype=int32) array([7], dtype=int32)]
Values: [1 2 3 4 5 6 7]
Splits: [0 2 5 6 6 7]
Indexed value: [3 4 5]
<tf.RaggedTensor [[4, 5], [6]]>
<tf.RaggedTensor [[1010, 1087, 1012], [2019, 2053], [3012, 3032]]>
<tf.RaggedTensor [[[11, 12],
  [13, 14],
  [15, 16]], [[17, 18]]]>
<tf.RaggedTensor [[[11, 21, 31],
  [12, 22, 32]], [], [[13, 23, 33]], [[14, 24, 34]]]>
InvalidArgumentError
InvalidArgumentError
<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9], [2]]>
<tf.RaggedTensor [[[10, 11, 12]], [], [[], [13, 14], [15, 16, 17, 18], [19]]]>
Shape: (3, None, None)
Number of partitioned dimensions: 2
<tf.RaggedTensor [[[10, 11, 12]], [], [[], [13, 14], [15, 16, 17, 18], [19]]]>
<tf.RaggedTensor [[[1, 3],
  [0, 0],
  [1, 3]], [[5, 3]], [[3, 3],
                      [1, 2]]]>
Shape: (3, None, 2)
Number of partitioned dimensions: 1
Flat values shape: (6, 2)
Flat values:
[[1 3]
 [0 0]
 [1 3]
 [5 3]
 [3 3]
 [1 2]]
tf.Tensor(
[[1 2 2 1]
 [3 4 4 3]
 [5 6 6 5]], shape=(3, 4), dtype=int32)
<tf.RaggedTensor [[1, 2, 2, 1], [3, 3], [4, 5, 6, 6, 5, 4]]>
<tf.RaggedTensor [[2, 3], [4], [5, 6, 7]]>
"""


def test_ragged_guide_prints_as_tensorflow(capsys):
    exec(RAGGED_GUIDE, {"tf": tf})
    assert capsys.readouterr().out == RAGGED_GUIDE_OUTPUT


def test_dispatch_wrappers_arrive_with_the_first_composite():
    import os
    import subprocess
    import sys
    code = ("import tfmini as tf\n"
            "assert not hasattr(tf.add, '__wrapped__')\n"
            "tf.ragged.constant([[1]])\n"
            "assert tf.add.__wrapped__ is not None and tf.add is tf.math.add\n"
            "print(tf.add(tf.ragged.constant([[1], [2, 3]]), 1))\n")
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "<tf.RaggedTensor [[2], [3, 4]]>\n"


# ---- randomized: every op against a plain-Python reference -----------------

def _random_rows(rng):
    return [[int(v) for v in rng.integers(-9, 10, size=rng.integers(0, 5))]
            for _ in range(rng.integers(1, 6))]


def _pad(rows, fill=0):
    w = max((len(r) for r in rows), default=0)
    return [r + [fill] * (w - len(r)) for r in rows]


@pytest.mark.parametrize("seed", range(12))
def test_random_rows_against_python(seed):
    rng = np.random.default_rng(seed)
    rows = _random_rows(rng)
    r = tf.ragged.constant(rows, dtype=tf.int32)
    assert r.to_list() == rows
    assert (r * 3 - 1).to_list() == [[v * 3 - 1 for v in x] for x in rows]
    assert (r + r).to_list() == [[2 * v for v in x] for x in rows]
    assert tf.reduce_sum(r, axis=1).numpy().tolist() == [sum(x) for x in rows]
    assert tf.reduce_max(r, axis=1).numpy().tolist() == [
        max(x) if x else np.iinfo(np.int32).min for x in rows]
    assert r.to_tensor(default_value=7).numpy().reshape(
        len(rows), -1).tolist() == _pad(rows, 7)
    cols = _pad(rows)
    if cols[0]:
        want = [sum(x[j] for x in rows if len(x) > j)
                for j in range(len(cols[0]))]
        assert tf.reduce_sum(r, axis=0).numpy().tolist() == want
    a, b = sorted(int(v) for v in rng.integers(-3, 5, size=2))
    assert r[:, a:b].to_list() == [x[a:b] for x in rows]
    assert r[a:b].to_list() == rows[a:b]
    idx = [int(i) for i in rng.integers(-len(rows), len(rows), size=4)]
    assert tf.gather(r, idx).to_list() == [rows[i] for i in idx]
    other = _random_rows(rng)[:len(rows)]
    other += [[]] * (len(rows) - len(other))
    o = tf.ragged.constant(other, dtype=tf.int32, ragged_rank=1)
    assert tf.concat([r, o], axis=0).to_list() == rows + other
    assert tf.concat([r, o], axis=1).to_list() == [
        x + y for x, y in zip(rows, other)]
    assert tf.ragged.boolean_mask(r, r > 0).to_list() == [
        [v for v in x if v > 0] for x in rows]
    assert tf.reverse(r, [1]).to_list() == [x[::-1] for x in rows]


def test_signature_errors_show_the_ragged_spec():
    spec = tf.RaggedTensorSpec(shape=[None, None], dtype=tf.int32)

    @tf.function(input_signature=[spec])
    def f(rt):
        return rt
    assert f.input_signature == (spec,)
    with pytest.raises(TypeError, match=r"argument 'rt' must match "
                       r"RaggedTensorSpec\(TensorShape\(\[None, None\]\), "
                       r"tf.int32, 1, tf.int64\), got <tf.Tensor"):
        f(tf.constant([[1]]))
