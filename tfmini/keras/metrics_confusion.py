"""keras.metrics built on confusion counts at thresholds: Precision,
Recall, AUC (Keras 3's definitions).

A prediction counts as positive at threshold t when it is > t, and a
label is positive when nonzero. The counts are (num_thresholds,)
float variables, updated with one (N, T) comparison per batch, so
update_state is a handful of ops in a traced step."""
import numpy as np

import tfmini as tf

from . import backend
from .metrics import Metric, _as_tensor

_NEG_INF = -1e10


def _auto_name(name, cls):
    # Keras 3 names these metrics 'auc', 'auc_1', ... when no name is
    # given, so two AUCs in one compile() log under distinct keys.
    return name or backend.unique_object_name(
        backend.to_snake_case(cls.__name__))


def _thresholds(thresholds, default):
    if thresholds is None:
        thresholds = default
    if isinstance(thresholds, (int, float)):
        thresholds = [thresholds]
    out = [float(t) for t in thresholds]
    for t in out:
        if t != _NEG_INF and not 0.0 <= t <= 1.0:
            raise ValueError(f"Threshold values must be in [0, 1]. "
                             f"Received: {out}")
    return out


def _filter_top_k(y_pred, k):
    """Keep the k largest predictions of each row; the rest become
    -1e10 (never above a threshold), as Keras does."""
    n = y_pred.shape[-1]
    _, idx = tf.math.top_k(y_pred, k=k)
    keep = tf.reduce_sum(tf.one_hot(idx, n, dtype=y_pred.dtype), axis=-2)
    return tf.where(keep > 0, y_pred, tf.fill(tf.shape(y_pred),
                                              tf.cast(_NEG_INF,
                                                      y_pred.dtype)))


def _counts(y_true, y_pred, thresholds, sample_weight, dtype, top_k=None,
            class_id=None, label_weights=None, per_label=False):
    """(tp, fp, tn, fn) for one batch: each (T,), or (T, labels) with
    per_label (the last axis holds the labels)."""
    y_true, y_pred = _as_tensor(y_true), _as_tensor(y_pred)
    y_pred = tf.cast(y_pred, dtype)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        y_true = y_true[..., class_id]
        y_pred = y_pred[..., class_id]
    label = tf.cast(tf.not_equal(tf.cast(y_true, dtype), 0.0), dtype)
    label = tf.broadcast_to(tf.reshape(label, tf.shape(y_pred)),
                            tf.shape(y_pred))
    w = tf.ones_like(y_pred)
    if sample_weight is not None:
        sw = tf.cast(_as_tensor(sample_weight), dtype)
        if len(sw._shape_tuple) == 1 and len(y_pred._shape_tuple) > 1:
            sw = tf.reshape(sw, (-1,) + (1,) * (len(y_pred._shape_tuple)
                                                - 1))
        w = w * sw
    if label_weights is not None:
        w = w * tf.constant(np.asarray(label_weights, np.float32), dtype)
    if per_label:
        n_labels = y_pred._shape_tuple[-1]
        label = tf.reshape(label, (-1, 1, n_labels))
        pred = tf.reshape(y_pred, (-1, 1, n_labels))
        w = tf.reshape(w, (-1, 1, n_labels))
        thr = np.array(thresholds, np.float32)[None, :, None]
    else:
        label = tf.reshape(label, [-1, 1])
        pred = tf.reshape(y_pred, [-1, 1])
        w = tf.reshape(w, [-1, 1])
        thr = np.array(thresholds, np.float32)[None, :]
    above = tf.cast(pred > tf.constant(thr, dtype), dtype)
    below = 1.0 - above
    pos, neg = label * w, (1.0 - label) * w
    return (tf.reduce_sum(above * pos, 0), tf.reduce_sum(above * neg, 0),
            tf.reduce_sum(below * neg, 0), tf.reduce_sum(below * pos, 0))


class _ThresholdMetric(Metric):
    def __init__(self, thresholds=None, top_k=None, class_id=None,
                 name=None, dtype=None):
        super().__init__(name=_auto_name(name, type(self)), dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else _NEG_INF
        self.thresholds = _thresholds(thresholds, default)
        self._single = len(self.thresholds) == 1
        n = len(self.thresholds)
        self.true_positives = self.add_variable((n,), name="true_positives")

    def _update(self, y_true, y_pred, sample_weight):
        return _counts(y_true, y_pred, self.thresholds, sample_weight,
                       self._dtype, self.top_k, self.class_id)

    def _out(self, value):
        return value[0] if self._single else value

    def get_config(self):
        config = super().get_config()
        config.update(thresholds=self.init_thresholds, top_k=self.top_k,
                      class_id=self.class_id)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _TpRatio(_ThresholdMetric):
    """tp / (tp + other) at each threshold, `other` the count named by
    _other: its variable's name and its index in _counts' (tp, fp, tn,
    fn)."""

    _other = None       # (name, index)

    def __init__(self, thresholds=None, top_k=None, class_id=None,
                 name=None, dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)
        other, _ = self._other
        setattr(self, other, self.add_variable((len(self.thresholds),),
                                               name=other))

    def update_state(self, y_true, y_pred, sample_weight=None):
        counts = self._update(y_true, y_pred, sample_weight)
        other, index = self._other
        self.true_positives.assign_add(counts[0], read_value=False)
        getattr(self, other).assign_add(counts[index], read_value=False)

    def result(self):
        tp = self.true_positives.read_value()
        other = getattr(self, self._other[0])
        return self._out(tf.math.divide_no_nan(tp, tp + other.read_value()))


class Precision(_TpRatio):
    """tp / (tp + fp) at each threshold (default 0.5; a scalar when there
    is one threshold)."""

    _other = ("false_positives", 1)


class Recall(_TpRatio):
    """tp / (tp + fn) at each threshold (default 0.5)."""

    _other = ("false_negatives", 3)


class AUC(Metric):
    """Area under the ROC or PR curve from confusion counts at
    num_thresholds thresholds: -eps, then (i+1)/(n-1) for i < n-2, then
    1+eps (or the given thresholds between -eps and 1+eps). ROC sums
    trapezoids over (fpr, tpr); 'minoring'/'majoring' take the lower /
    upper of each pair; PR with 'interpolation' uses Davis & Goadrich's
    interpolation, as Keras. With multi_label=False labels and
    predictions are flattened (label_weights weigh each label's
    entries); with multi_label=True each label (last axis) gets its own
    curve and the result is their mean, weighted by label_weights."""

    def __init__(self, num_thresholds=200, curve="ROC",
                 summation_method="interpolation", name=None, dtype=None,
                 thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name=_auto_name(name, type(self)), dtype=dtype)
        curve = str(curve).upper()
        if curve not in ("ROC", "PR"):
            raise ValueError(f'Invalid `curve` argument value "{curve}". '
                             f"Expected one of: ['ROC', 'PR']")
        method = str(summation_method).lower()
        if method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f'Invalid `summation_method` argument value '
                             f'"{summation_method}". Expected one of: '
                             f"['interpolation', 'minoring', 'majoring']")
        self.curve, self.summation_method = curve, method
        self.multi_label = bool(multi_label)
        self.num_labels = num_labels
        self.label_weights = (None if label_weights is None else
                              [float(w) for w in np.ravel(label_weights)])
        if self.label_weights is not None and min(self.label_weights) < 0:
            raise ValueError(f"All values of `label_weights` must be "
                             f"non-negative. Received: {label_weights}")
        self._from_logits = bool(from_logits)
        eps = backend.epsilon()
        if thresholds is not None:
            inner = sorted(_thresholds(thresholds, None))
            self._init_from_thresholds = True
        else:
            if num_thresholds <= 1:
                raise ValueError(f"Argument `num_thresholds` must be an "
                                 f"integer > 1. Received: num_thresholds="
                                 f"{num_thresholds}")
            inner = [(i + 1) / (num_thresholds - 1)
                     for i in range(num_thresholds - 2)]
            self._init_from_thresholds = False
        self._thresholds = [0.0 - eps] + inner + [1.0 + eps]
        self.num_thresholds = len(self._thresholds)
        self.true_positives = None
        if not self.multi_label or num_labels is not None:
            self._build(num_labels)

    def _build(self, num_labels):
        """The four (T,) or (T, num_labels) count variables: a
        multi-label AUC without num_labels makes them on its first
        update, from the predictions' last axis."""
        shape = (self.num_thresholds,)
        if self.multi_label:
            if num_labels is None:
                raise ValueError("AUC(multi_label=True) needs a known "
                                 "number of labels (the last axis)")
            self.num_labels = int(num_labels)
            shape += (self.num_labels,)
        self.true_positives = self.add_variable(shape,
                                                name="true_positives")
        self.false_positives = self.add_variable(shape,
                                                 name="false_positives")
        self.true_negatives = self.add_variable(shape,
                                                name="true_negatives")
        self.false_negatives = self.add_variable(shape,
                                                 name="false_negatives")

    @property
    def thresholds(self):
        return list(self._thresholds)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = _as_tensor(y_pred)
        if self._from_logits:
            y_pred = tf.sigmoid(tf.cast(y_pred, self._dtype))
        if self.true_positives is None:
            self._build(y_pred._shape_tuple[-1])
        tp, fp, tn, fn = _counts(
            y_true, y_pred, self._thresholds, sample_weight, self._dtype,
            label_weights=None if self.multi_label else self.label_weights,
            per_label=self.multi_label)
        for var, value in ((self.true_positives, tp),
                           (self.false_positives, fp),
                           (self.true_negatives, tn),
                           (self.false_negatives, fn)):
            var.assign_add(value, read_value=False)

    def _interpolate_pr_auc(self, tp, fp, fn):
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = tf.math.divide_no_nan(dtp, tf.maximum(dp, 0.0))
        intercept = tp[1:] - slope * p[1:]
        both = tf.logical_and(p[:-1] > 0, p[1:] > 0)
        ratio = tf.where(both, tf.math.divide_no_nan(
            p[:-1], tf.maximum(p[1:], 0.0)), tf.ones_like(p[1:]))
        inc = tf.math.divide_no_nan(
            slope * (dtp + intercept * tf.math.log(ratio)),
            tf.maximum(tp[1:] + fn[1:], 0.0))
        return tf.reduce_sum(inc, axis=0)

    def _by_label(self, auc):
        """One AUC from the per-label ones (multi_label)."""
        if not self.multi_label:
            return auc
        if self.label_weights is None:
            return tf.reduce_mean(auc)
        w = tf.constant(np.asarray(self.label_weights, np.float32),
                        auc.dtype)
        return tf.math.divide_no_nan(tf.reduce_sum(auc * w),
                                     tf.reduce_sum(w))

    def result(self):
        if self.true_positives is None:
            return tf.constant(0.0, self._dtype)
        tp = self.true_positives.read_value()
        fp = self.false_positives.read_value()
        tn = self.true_negatives.read_value()
        fn = self.false_negatives.read_value()
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._by_label(self._interpolate_pr_auc(tp, fp, fn))
        recall = tf.math.divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = tf.math.divide_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, tf.math.divide_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = tf.minimum(y[:-1], y[1:])
        else:
            heights = tf.maximum(y[:-1], y[1:])
        return self._by_label(tf.reduce_sum((x[:-1] - x[1:]) * heights,
                                            axis=0))

    def get_config(self):
        config = super().get_config()
        config.update(num_thresholds=self.num_thresholds, curve=self.curve,
                      summation_method=self.summation_method,
                      multi_label=self.multi_label,
                      num_labels=self.num_labels,
                      label_weights=self.label_weights,
                      from_logits=self._from_logits)
        if self._init_from_thresholds:
            config["thresholds"] = self._thresholds[1:-1]
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
