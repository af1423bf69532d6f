"""Huber, KLDivergence, CosineSimilarity and friends; AUC, Precision,
Recall, top-k accuracies, against NumPy; integer labels of any int
dtype (uint8: MNIST's) with the sparse losses and accuracies."""
import numpy as np
import pytest

import tfmini as tf

keras = tf.keras
EPS = 1e-7
rng = np.random.default_rng(0)
YT = rng.uniform(0, 1, (4, 5)).astype(np.float32)
YP = rng.uniform(0, 1, (4, 5)).astype(np.float32)


def np_huber(t, p, d=1.0):
    e = p - t
    a = np.abs(e)
    return np.mean(np.where(a <= d, 0.5 * e * e, d * a - 0.5 * d * d), -1)


def np_kld(t, p):
    t, p = np.clip(t, EPS, 1), np.clip(p, EPS, 1)
    return np.sum(t * np.log(t / p), -1)


def np_cos(t, p):
    tn = t / np.linalg.norm(t, axis=-1, keepdims=True)
    pn = p / np.linalg.norm(p, axis=-1, keepdims=True)
    return -np.sum(tn * pn, -1)


def np_hinge_labels(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


LOSSES = [
    ("huber", keras.losses.Huber(), np_huber),
    ("huber_delta", keras.losses.Huber(delta=0.3),
     lambda t, p: np_huber(t, p, 0.3)),
    ("kld", keras.losses.KLDivergence(), np_kld),
    ("cosine", keras.losses.CosineSimilarity(), np_cos),
    ("log_cosh", keras.losses.LogCosh(),
     lambda t, p: np.mean(np.log(np.cosh(p - t)), -1)),
    ("poisson", keras.losses.Poisson(),
     lambda t, p: np.mean(p - t * np.log(p + EPS), -1)),
    ("hinge", keras.losses.Hinge(),
     lambda t, p: np.mean(np.maximum(1 - np_hinge_labels(np.round(t)) * p,
                                     0), -1)),
    ("squared_hinge", keras.losses.SquaredHinge(),
     lambda t, p: np.mean(np.maximum(1 - np_hinge_labels(np.round(t)) * p,
                                     0) ** 2, -1)),
    ("mape", keras.losses.MeanAbsolutePercentageError(),
     lambda t, p: 100 * np.mean(np.abs((t - p) / np.maximum(np.abs(t),
                                                            EPS)), -1)),
    ("msle", keras.losses.MeanSquaredLogarithmicError(),
     lambda t, p: np.mean((np.log(np.maximum(p, EPS) + 1) -
                           np.log(np.maximum(t, EPS) + 1)) ** 2, -1)),
]


@pytest.mark.parametrize("name,loss,ref", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_numpy(name, loss, ref):
    t = np.round(YT) if "hinge" in name else YT
    want = ref(t.astype(np.float64), YP.astype(np.float64))
    np.testing.assert_allclose(float(loss(t, YP)), want.mean(), rtol=1e-5)
    sw = np.array([1.0, 0.0, 2.0, 0.5], np.float32)
    np.testing.assert_allclose(float(loss(t, YP, sample_weight=sw)),
                               (want * sw).mean(), rtol=1e-5)
    again = type(loss).from_config(loss.get_config())
    np.testing.assert_allclose(float(again(t, YP)), want.mean(), rtol=1e-5)
    assert isinstance(keras.losses.get(type(loss).__name__), type(loss))


def test_huber_is_quadratic_then_linear():
    got = keras.losses.huber(np.zeros((1, 3), np.float32),
                             np.array([[0.5, 2.0, -3.0]], np.float32))
    np.testing.assert_allclose(got.numpy(), [(0.125 + 1.5 + 2.5) / 3])


def test_loss_gradients_match_finite_differences():
    t = tf.constant(YT.astype(np.float64))
    for name, loss, _ in LOSSES[:4]:
        p = tf.Variable(YP.astype(np.float64) * 0.8 + 0.1)
        with tf.GradientTape() as tape:
            v = loss(t, p)
        g = tape.gradient(v, p).numpy()
        base, h = p.numpy(), 1e-6
        num = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sgn in (1, -1):
                q = base.copy()
                q[idx] += sgn * h
                num[idx] += sgn * float(loss(t, tf.constant(q))) / (2 * h)
        np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-7,
                                   err_msg=name)


# ---- AUC / Precision / Recall ---------------------------------------

def np_counts(y, p, thr, w=None):
    w = np.ones_like(p) if w is None else w
    above = p[:, None] > np.asarray(thr)[None, :]
    pos = (y != 0)[:, None]
    return (np.sum(w[:, None] * (above & pos), 0),
            np.sum(w[:, None] * (above & ~pos), 0),
            np.sum(w[:, None] * (~above & ~pos), 0),
            np.sum(w[:, None] * (~above & pos), 0))


def keras_thresholds(n):
    return ([-EPS] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + EPS])


def np_roc_auc(y, p, n=200, w=None, method="interpolation"):
    tp, fp, tn, fn = np_counts(y, p, keras_thresholds(n), w)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.nan_to_num(tp / (tp + fn))
        fpr = np.nan_to_num(fp / (fp + tn))
    h = {"interpolation": (tpr[:-1] + tpr[1:]) / 2,
         "minoring": np.minimum(tpr[:-1], tpr[1:]),
         "majoring": np.maximum(tpr[:-1], tpr[1:])}[method]
    return np.sum((fpr[:-1] - fpr[1:]) * h)


Y = (rng.uniform(size=64) > 0.5).astype(np.float32)
P = np.clip(Y * 0.3 + rng.uniform(size=64) * 0.7, 0, 1).astype(np.float32)


@pytest.mark.parametrize("method", ["interpolation", "minoring", "majoring"])
def test_auc_roc_matches_numpy_trapezoid(method):
    m = keras.metrics.AUC(summation_method=method)
    m.update_state(Y[:40], P[:40])
    m.update_state(Y[40:], P[40:])
    np.testing.assert_allclose(float(m.result()),
                               np_roc_auc(Y, P, method=method), rtol=1e-5)
    # With 200 thresholds it is close to the exact rank statistic.
    pos, neg = P[Y == 1], P[Y == 0]
    exact = np.mean((pos[:, None] > neg[None, :]) +
                    0.5 * (pos[:, None] == neg[None, :]))
    if method == "interpolation":
        assert abs(float(m.result()) - exact) < 0.01


def test_auc_weights_thresholds_logits_and_traced():
    w = rng.uniform(size=64).astype(np.float32)
    m = keras.metrics.AUC(num_thresholds=17)
    m.update_state(Y, P, sample_weight=w)
    np.testing.assert_allclose(float(m.result()), np_roc_auc(Y, P, 17, w),
                               rtol=1e-5)
    m = keras.metrics.AUC(from_logits=True)
    logits = np.log(P + 1e-3) - np.log(1.001 - P)
    m.update_state(Y, logits.astype(np.float32))
    np.testing.assert_allclose(float(m.result()),
                               np_roc_auc(Y, 1 / (1 + np.exp(-logits))),
                               rtol=1e-4)
    m = keras.metrics.AUC(thresholds=[0.25, 0.5, 0.75])
    assert m.num_thresholds == 5
    m2 = keras.metrics.AUC()

    @tf.function
    def upd(y, p):
        m2.update_state(y, p)
    upd(tf.constant(Y), tf.constant(P))
    np.testing.assert_allclose(float(m2.result()), np_roc_auc(Y, P),
                               rtol=1e-5)
    m2.reset_state()
    assert float(m2.result()) == 0.0


def test_auc_pr_interpolation_matches_numpy():
    tp, fp, _, fn = np_counts(Y, P, keras_thresholds(200))
    dtp = tp[:-1] - tp[1:]
    pp = tp + fp
    dp = pp[:-1] - pp[1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.nan_to_num(dtp / np.maximum(dp, 0), posinf=0)
        slope[np.maximum(dp, 0) == 0] = 0
        inter = tp[1:] - slope * pp[1:]
        ratio = np.where((pp[:-1] > 0) & (pp[1:] > 0),
                         pp[:-1] / np.maximum(pp[1:], 1e-30), 1.0)
        inc = slope * (dtp + inter * np.log(ratio))
        den = np.maximum(tp[1:] + fn[1:], 0)
        inc = np.where(den > 0, inc / np.where(den > 0, den, 1), 0)
    m = keras.metrics.AUC(curve="PR")
    m.update_state(Y, P)
    np.testing.assert_allclose(float(m.result()), inc.sum(), rtol=1e-4)


def test_auc_config_and_bad_args():
    m = keras.metrics.AUC(num_thresholds=50, curve="PR", name="pr")
    again = keras.metrics.AUC.from_config(m.get_config())
    assert again.num_thresholds == 50 and again.curve == "PR"
    assert [v.path for v in m.variables] == [
        "pr/true_positives", "pr/false_positives", "pr/true_negatives",
        "pr/false_negatives"]
    with pytest.raises(ValueError, match="curve"):
        keras.metrics.AUC(curve="XY")
    with pytest.raises(ValueError, match="num_thresholds"):
        keras.metrics.AUC(num_thresholds=1)


def test_precision_recall_thresholds_class_id_top_k():
    tp, fp, _, fn = np_counts(Y, P, [0.5])
    p, r = keras.metrics.Precision(), keras.metrics.Recall()
    p.update_state(Y, P)
    r.update_state(Y, P)
    np.testing.assert_allclose(float(p.result()), tp[0] / (tp[0] + fp[0]),
                               rtol=1e-6)
    np.testing.assert_allclose(float(r.result()), tp[0] / (tp[0] + fn[0]),
                               rtol=1e-6)
    p = keras.metrics.Precision(thresholds=[0.2, 0.7])
    p.update_state(Y, P)
    tp, fp, _, _ = np_counts(Y, P, [0.2, 0.7])
    np.testing.assert_allclose(p.result().numpy(), tp / (tp + fp), rtol=1e-6)
    # class_id picks one column; top_k keeps each row's k best.
    yt = np.array([[0, 0, 1], [0, 1, 0]], np.float32)
    yp = np.array([[0.2, 0.6, 0.9], [0.9, 0.7, 0.1]], np.float32)
    r = keras.metrics.Recall(class_id=1)
    r.update_state(yt, yp)
    assert float(r.result()) == 1.0
    p = keras.metrics.Precision(top_k=1)
    p.update_state(yt, yp)
    assert float(p.result()) == 0.5
    again = keras.metrics.Precision.from_config(p.get_config())
    assert again.top_k == 1
    with pytest.raises(ValueError, match="Threshold"):
        keras.metrics.Recall(thresholds=1.5)


def test_top_k_accuracies():
    scores = rng.normal(size=(20, 6)).astype(np.float32)
    labels = rng.integers(0, 6, 20)
    rank = (scores > scores[np.arange(20), labels][:, None]).sum(-1)
    for k in (1, 3):
        want = np.mean(rank < k)
        m = keras.metrics.SparseTopKCategoricalAccuracy(k=k)
        m.update_state(labels.astype(np.uint8), scores)
        np.testing.assert_allclose(float(m.result()), want, rtol=1e-6)
        m = keras.metrics.TopKCategoricalAccuracy(k=k)
        m.update_state(np.eye(6, dtype=np.float32)[labels], scores)
        np.testing.assert_allclose(float(m.result()), want, rtol=1e-6)
    again = keras.metrics.TopKCategoricalAccuracy.from_config(
        keras.metrics.TopKCategoricalAccuracy(k=3, name="t3").get_config())
    assert again.k == 3 and again.name == "t3"
    # Ties at the boundary count as in the top k (TF's in_top_k).
    m = keras.metrics.SparseTopKCategoricalAccuracy(k=1)
    m.update_state([1], [[0.5, 0.5, 0.1]])
    assert float(m.result()) == 1.0


def test_cosine_and_kld_metrics():
    m = keras.metrics.CosineSimilarity()
    m.update_state(YT, YP)
    np.testing.assert_allclose(float(m.result()), -np_cos(YT, YP).mean(),
                               rtol=1e-5)
    m = keras.metrics.KLDivergence()
    m.update_state(YT, YP)
    np.testing.assert_allclose(float(m.result()), np_kld(YT, YP).mean(),
                               rtol=1e-5)
    assert isinstance(keras.metrics.get("auc"), keras.metrics.AUC)


# ---- integer labels of any int dtype ---------------------------------

LOGITS = rng.normal(size=(6, 4)).astype(np.float32)
LABELS = np.array([0, 3, 1, 2, 3, 0])


def np_sparse_ce(labels, logits):
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32,
                                   np.int64])
def test_sparse_losses_and_accuracies_take_any_int_labels(dtype):
    y = LABELS.astype(dtype)
    want = np_sparse_ce(LABELS, LOGITS)
    got = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        y, LOGITS)
    np.testing.assert_allclose(float(got), want, rtol=1e-5)
    probs = tf.nn.softmax(LOGITS)
    got = keras.losses.SparseCategoricalCrossentropy()(tf.constant(y), probs)
    np.testing.assert_allclose(float(got), want, rtol=1e-4)
    acc = keras.metrics.SparseCategoricalAccuracy()
    acc.update_state(y[:, None], LOGITS)
    np.testing.assert_allclose(float(acc.result()),
                               np.mean(LOGITS.argmax(-1) == LABELS))


def test_fit_with_uint8_labels_like_the_quickstart():
    x = rng.uniform(size=(32, 8)).astype(np.float32)
    y = rng.integers(0, 3, 32).astype(np.uint8)
    model = keras.Sequential([keras.layers.Dense(3)])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True),
                  metrics=["accuracy"])
    hist = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert np.isfinite(hist.history["loss"]).all()
    assert 0.0 <= hist.history["accuracy"][-1] <= 1.0
    model.evaluate(x, y, verbose=0)


def test_auc_precision_recall_in_fit_with_distinct_names():
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    keras.backend.clear_session()
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy",
                  metrics=[keras.metrics.AUC(), keras.metrics.Precision(),
                           keras.metrics.Recall(),
                           keras.metrics.AUC(curve="PR")])
    hist = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert {"auc", "auc_1", "precision", "recall"} <= set(hist.history)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    ref = keras.metrics.AUC()
    ref.update_state(y, model.predict(x, verbose=0))
    np.testing.assert_allclose(logs["auc"], float(ref.result()), rtol=1e-5)


def test_auc_multi_label_and_label_weights():
    y = (rng.uniform(size=(50, 3)) > 0.5).astype(np.float32)
    p = np.clip(y * 0.4 + rng.uniform(size=(50, 3)) * 0.6, 0, 1).astype(
        np.float32)
    per = [np_roc_auc(y[:, j], p[:, j]) for j in range(3)]
    m = keras.metrics.AUC(multi_label=True)
    m.update_state(y[:20], p[:20])
    m.update_state(y[20:], p[20:])
    assert tuple(m.true_positives.shape) == (200, 3)
    np.testing.assert_allclose(float(m.result()), np.mean(per), rtol=1e-5)
    lw = [0.5, 0.0, 2.0]
    m = keras.metrics.AUC(multi_label=True, num_labels=3, label_weights=lw)
    m.update_state(y, p)
    np.testing.assert_allclose(float(m.result()),
                               np.dot(per, lw) / np.sum(lw), rtol=1e-5)
    # Flattened with label weights: each label's entries weighed.
    m = keras.metrics.AUC(label_weights=lw)
    m.update_state(y, p)
    w = np.broadcast_to(np.array(lw, np.float32), y.shape).ravel()
    np.testing.assert_allclose(float(m.result()),
                               np_roc_auc(y.ravel(), p.ravel(), w=w),
                               rtol=1e-5)
    again = keras.metrics.AUC.from_config(
        keras.metrics.AUC(multi_label=True, num_labels=3,
                          label_weights=lw).get_config())
    assert again.multi_label and again.label_weights == lw
