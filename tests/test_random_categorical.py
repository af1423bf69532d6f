"""tf.random.categorical and stateless_categorical: TF 2.21's Multinomial
CPU kernel numbers for seeded calls (tests/data/categorical_tf_2_21.json,
made with TF 2.21 by the calls below), in eager and in tf.function."""
import json
import pathlib

import numpy as np
import pytest

import tfmini as tf

REF = json.loads((pathlib.Path(__file__).parent / "data" /
                  "categorical_tf_2_21.json").read_text())
L = [[0.0, 1.0, 2.0], [-1.0, 0.5, 0.2]]


@pytest.fixture(autouse=True)
def _reset_seed():
    yield
    tf.random.set_seed(None)


def test_global_seed_only():
    tf.random.set_seed(5)
    got = [tf.random.categorical(L, 6).numpy().tolist() for _ in range(2)]
    assert got == REF["global5_op_none"]


def test_global_and_op_seed_calls_move_on():
    tf.random.set_seed(1234)
    got = [tf.random.categorical(L, 5, seed=7).numpy().tolist()
           for _ in range(3)]
    assert got == REF["global1234_op7"]
    tf.random.set_seed(1234)      # set_seed replays them
    assert tf.random.categorical(L, 5, seed=7).numpy().tolist() == \
        REF["global1234_op7"][0]


def test_op_seed_only_int32():
    tf.random.set_seed(None)
    r = [tf.random.categorical(L, 9, seed=3, dtype=tf.int32)
         for _ in range(2)]
    assert r[0].dtype == tf.int32
    assert [x.numpy().tolist() for x in r] == REF["op_only_3_int32"]


def test_stateless():
    r = tf.random.stateless_categorical(L, 7, seed=[1, 2])
    assert r.dtype == tf.int64 and r.shape == (2, 7)
    assert r.numpy().tolist() == REF["stateless_1_2"]
    assert tf.random.stateless_categorical(
        tf.constant([[1.0, 1.0, 1.0, 1.0]], tf.float64), 10,
        seed=[-5, 99]).numpy().tolist() == REF["stateless_neg"]
    assert tf.random.stateless_categorical(
        tf.constant([[0.1, 3.0], [2.0, -2.0]], tf.float16), 6,
        seed=[3, 4]).numpy().tolist() == REF["stateless_f16"]
    big = np.linspace(-2, 2, 50).reshape(5, 10).astype(np.float32)
    assert tf.random.stateless_categorical(
        big, 20, seed=[11, 12]).numpy().tolist() == \
        REF["stateless_5x10_x20"]


def test_non_finite_logits():
    inf, nan = float("inf"), float("nan")
    r = tf.random.stateless_categorical(
        [[-inf, 0.0, -inf], [-inf] * 3, [0.0, nan, 1.0]], 5, seed=[7, 7])
    # A row with no finite logit gives num_classes, as TF.
    assert r.numpy().tolist() == REF["stateless_inf"]


def test_in_function_each_run_moves_on():
    tf.random.set_seed(1)

    @tf.function
    def f():
        return tf.random.categorical(L, 4, seed=3)
    got = [f().numpy().tolist() for _ in range(2)]
    # TF 2.21: the same program.
    assert got == [[[1, 2, 2, 0], [1, 2, 1, 1]], [[2, 2, 2, 2], [1, 1, 2, 1]]]


def test_frequencies_follow_softmax():
    logits = np.log(np.array([[0.2, 0.3, 0.5]], np.float32))
    r = tf.random.stateless_categorical(logits, 20000, seed=[0, 1]).numpy()
    freq = np.bincount(r[0], minlength=3) / r.size
    np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=0.015)


def test_errors_and_empty_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Multinomial: logits should be a matrix, got "
                             r"shape \[2\]"):
        tf.random.categorical([1.0, 2.0], 3)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="num_classes should be positive, got 0"):
        tf.random.categorical(tf.zeros([2, 0]), 3)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="logits must be float.*int32"):
        tf.random.categorical(tf.constant([[1, 2]]), 3)
    with pytest.raises(ValueError, match="Accepted dtypes"):
        tf.random.categorical(L, 3, dtype=tf.float32)
    assert tf.random.categorical(tf.zeros([0, 3]), 2).shape == (0, 2)
    assert tf.random.categorical(tf.zeros([2, 3]), 0).shape == (2, 0)
