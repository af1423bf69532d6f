"""tf.data.Dataset against NumPy slicing."""
import numpy as np
import pytest

import tfmini as tf
from tfmini.data import Dataset


def test_from_tensor_slices_nested_and_batch():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.arange(5, dtype=np.int32)
    ds = Dataset.from_tensor_slices((x, {"label": y}))
    first = next(iter(ds))
    assert isinstance(first[0], tf.Tensor)
    assert first[0].numpy().tolist() == [0.0, 1.0]
    assert int(first[1]["label"]) == 0
    batches = list(ds.batch(2))
    assert [b[0].shape for b in batches] == [(2, 2), (2, 2), (1, 2)]
    assert len(ds.batch(2)) == 3
    assert len(ds.batch(2, drop_remainder=True)) == 2
    np.testing.assert_array_equal(batches[2][1]["label"].numpy(), [4])


def test_python_lists_become_float32_and_int32():
    ds = Dataset.from_tensor_slices(([[1.0, 2.0], [3.0, 4.0]], [0, 1]))
    x, y = next(iter(ds))
    assert x.dtype == tf.float32 and y.dtype == tf.int32


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="same size"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))


def test_shuffle_is_seeded_permutation_and_reshuffles():
    ds = Dataset.from_tensor_slices(np.arange(50)).shuffle(50, seed=3)
    a = [int(v) for v in ds]
    b = [int(v) for v in ds]
    assert sorted(a) == list(range(50)) and sorted(b) == list(range(50))
    assert a != list(range(50))
    assert a != b                                  # new order each epoch
    again = Dataset.from_tensor_slices(np.arange(50)).shuffle(50, seed=3)
    assert [int(v) for v in again] == a            # same seed, same order
    fixed = Dataset.from_tensor_slices(np.arange(20)).shuffle(
        20, seed=1, reshuffle_each_iteration=False)
    assert [int(v) for v in fixed] == [int(v) for v in fixed]


def test_small_buffer_shuffle_keeps_every_element():
    ds = Dataset.from_tensor_slices(np.arange(30)).shuffle(4, seed=0)
    assert sorted(int(v) for v in ds) == list(range(30))


def test_map_repeat_take_skip():
    ds = Dataset.from_tensor_slices(np.arange(4, dtype=np.int32))
    doubled = ds.map(lambda v: v * 2)
    assert [int(v) for v in doubled] == [0, 2, 4, 6]
    assert [int(v) for v in ds.repeat(2)] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [int(v) for v in ds.repeat().take(6)] == [0, 1, 2, 3, 0, 1]
    assert [int(v) for v in ds.skip(3)] == [3]
    assert len(ds.repeat(3)) == 12
    with pytest.raises(TypeError):
        len(ds.repeat())


def test_map_unpacks_tuples_and_prefetch_is_transparent():
    ds = Dataset.from_tensor_slices((np.ones(3, np.float32),
                                     np.arange(3, dtype=np.int32)))
    summed = ds.map(lambda a, b: a + tf.cast(b, tf.float32)).prefetch(
        tf.data.AUTOTUNE)
    assert [float(v) for v in summed] == [1.0, 2.0, 3.0]


def test_batch_after_map_stacks_tensors():
    ds = Dataset.from_tensor_slices(np.arange(5, dtype=np.float32))
    out = list(ds.map(lambda v: v + 1.0).batch(2))
    assert [b.numpy().tolist() for b in out] == [[1, 2], [3, 4], [5]]


def test_bad_batch_size():
    with pytest.raises(ValueError):
        Dataset.from_tensor_slices(np.arange(3)).batch(0)
