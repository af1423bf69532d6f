"""keras.losses and keras.metrics against NumPy formulas."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import keras

EPS = 1e-7


def rng(seed=0):
    return np.random.default_rng(seed)


def np_softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture
def logits():
    return rng().standard_normal((6, 4)).astype(np.float32) * 2


@pytest.fixture
def labels():
    return np.array([0, 3, 1, 1, 2, 0], np.int32)


def test_sparse_categorical_crossentropy(logits, labels):
    ref = -np.log(np_softmax(logits.astype(np.float64))[np.arange(6),
                                                         labels])
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(loss(labels, logits)), ref.mean(),
                               rtol=1e-5)
    probs = np_softmax(logits)
    loss_p = keras.losses.SparseCategoricalCrossentropy()
    np.testing.assert_allclose(float(loss_p(labels, probs)), ref.mean(),
                               rtol=1e-5)
    # (N, 1) labels and float labels are accepted, like Keras.
    np.testing.assert_allclose(
        float(loss(labels.reshape(-1, 1).astype(np.float32), logits)),
        ref.mean(), rtol=1e-5)
    per = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="none")(labels, logits)
    np.testing.assert_allclose(per.numpy(), ref, rtol=1e-5)
    total = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="sum")(labels, logits)
    np.testing.assert_allclose(float(total), ref.sum(), rtol=1e-5)


def test_categorical_crossentropy(logits, labels):
    onehot = np.eye(4, dtype=np.float32)[labels]
    ref = -np.log(np_softmax(logits.astype(np.float64))[np.arange(6),
                                                         labels])
    for from_logits, pred in ((True, logits), (False, np_softmax(logits))):
        loss = keras.losses.CategoricalCrossentropy(from_logits=from_logits)
        np.testing.assert_allclose(float(loss(onehot, pred)), ref.mean(),
                                   rtol=1e-5)
    smooth = keras.losses.CategoricalCrossentropy(from_logits=True,
                                                  label_smoothing=0.2)
    t = onehot * 0.8 + 0.05
    ref_s = -(t * np.log(np_softmax(logits.astype(np.float64)))).sum(-1)
    np.testing.assert_allclose(float(smooth(onehot, logits)), ref_s.mean(),
                               rtol=1e-5)


def test_binary_crossentropy():
    z = rng(1).standard_normal((5, 3)).astype(np.float32) * 3
    y = (rng(2).random((5, 3)) > 0.5).astype(np.float32)
    p = 1 / (1 + np.exp(-z.astype(np.float64)))
    ref = -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(-1).mean()
    bce_logits = keras.losses.BinaryCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(bce_logits(y, z)), ref, rtol=1e-5)
    bce = keras.losses.BinaryCrossentropy()
    np.testing.assert_allclose(float(bce(y, p.astype(np.float32))), ref,
                               rtol=1e-4)
    # Saturated logits stay finite with from_logits.
    big = np.array([[100.0, -100.0]], np.float32)
    assert np.isfinite(float(bce_logits(np.array([[0.0, 1.0]]), big)))
    assert float(bce_logits(np.array([[0.0, 1.0]]), big)) == \
        pytest.approx(100.0, rel=1e-5)


def test_regression_losses():
    a = rng(3).standard_normal((4, 3)).astype(np.float32)
    b = rng(4).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(
        float(keras.losses.MeanSquaredError()(a, b)),
        ((a - b) ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(
        float(keras.losses.MeanAbsoluteError()(a, b)),
        np.abs(a - b).mean(), rtol=1e-5)
    # y_true of shape (N,) against y_pred (N, 1) compares per row.
    yt = np.arange(4, dtype=np.float32)
    yp = (yt + 1).reshape(4, 1)
    assert float(keras.losses.get("mse")(yt, yp)) == pytest.approx(1.0)


def test_sample_weight_and_names():
    a = np.array([[1.0], [2.0], [3.0]], np.float32)
    b = np.zeros_like(a)
    sw = np.array([1.0, 0.0, 2.0], np.float32)
    # sum_over_batch_size divides by the number of examples, as Keras.
    assert float(keras.losses.MeanSquaredError()(a, b, sample_weight=sw)) \
        == pytest.approx((1 + 0 + 18) / 3)
    for name, cls in [("mse", keras.losses.MeanSquaredError),
                      ("sparse_categorical_crossentropy",
                       keras.losses.SparseCategoricalCrossentropy),
                      ("binary_crossentropy",
                       keras.losses.BinaryCrossentropy),
                      ("categorical_crossentropy",
                       keras.losses.CategoricalCrossentropy),
                      ("mae", keras.losses.MeanAbsoluteError)]:
        assert isinstance(keras.losses.get(name), cls)
    with pytest.raises(ValueError, match="Unknown loss"):
        keras.losses.get("nope")
    with pytest.raises(ValueError, match="reduction"):
        keras.losses.MeanSquaredError(reduction="max")


# ---- metrics ----------------------------------------------------------------

def test_mean_metric_state():
    m = keras.metrics.Mean()
    m.update_state([1.0, 2.0, 3.0])
    m.update_state(5.0, sample_weight=3.0)
    assert float(m.result()) == pytest.approx((6 + 15) / 6)
    m.reset_state()
    assert float(m.result()) == 0.0
    assert float(m([2.0, 4.0])) == pytest.approx(3.0)
    assert len(m.variables) == 2
    assert all(not v.trainable for v in m.variables)


def test_accuracy_metrics(logits, labels):
    pred = logits.argmax(-1)
    ref = (pred == labels).mean()
    m = keras.metrics.SparseCategoricalAccuracy()
    m.update_state(labels[:3], logits[:3])
    m.update_state(labels[3:], logits[3:])
    assert float(m.result()) == pytest.approx(ref)
    c = keras.metrics.CategoricalAccuracy()
    c.update_state(np.eye(4, dtype=np.float32)[labels], logits)
    assert float(c.result()) == pytest.approx(ref)
    b = keras.metrics.BinaryAccuracy()
    b.update_state([[1.0], [0.0], [1.0], [0.0]], [[0.7], [0.2], [0.4], [0.9]])
    assert float(b.result()) == pytest.approx(0.5)
    a = keras.metrics.Accuracy()
    a.update_state([1, 2, 3, 4], [1, 2, 0, 4])
    assert float(a.result()) == pytest.approx(0.75)
    a.reset_state()
    assert float(a.result()) == 0.0


def test_metric_weighted_and_string_lookup(logits, labels):
    m = keras.metrics.SparseCategoricalAccuracy()
    sw = np.array([1, 0, 0, 0, 0, 0], np.float32)
    m.update_state(labels, logits, sample_weight=sw)
    assert float(m.result()) == float(logits[0].argmax() == labels[0])
    auto = keras.metrics.get("accuracy",
                             keras.losses.SparseCategoricalCrossentropy())
    auto.update_state(labels, logits)
    assert auto.name == "accuracy"
    assert float(auto.result()) == pytest.approx(
        (logits.argmax(-1) == labels).mean())
    with pytest.raises(ValueError, match="Unknown metric"):
        keras.metrics.get("nope")


def test_metric_update_inside_tf_function(logits, labels):
    m = keras.metrics.SparseCategoricalAccuracy()

    @tf.function
    def step(y, z):
        m.update_state(y, z)
        return m.result()

    step(labels, logits)
    r = step(labels, logits)
    assert float(r) == pytest.approx((logits.argmax(-1) == labels).mean())
    assert float(m.count) == 12
