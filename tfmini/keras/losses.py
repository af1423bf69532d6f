"""keras.losses: loss classes and functions.

A loss class is called as loss(y_true, y_pred, sample_weight=None): the
per-example loss (its function) is weighted by sample_weight and reduced:
'sum_over_batch_size' (default: the sum divided by the number of
per-example values, i.e. the mean over the batch), 'sum', or 'none'.
"""
import tfmini as tf

from . import backend

_REDUCTIONS = ("sum_over_batch_size", "sum", "none", "auto", "mean")


class Reduction:
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"


def _tensor(x, dtype=None):
    if isinstance(x, tf.Tensor) or hasattr(x, "_dtype_enum"):
        if dtype is not None and x.dtype != dtype:
            return tf.cast(x, dtype)
        return x
    return tf.convert_to_tensor(x, dtype=dtype)


def _match_ranks(y_true, y_pred):
    """Keras' squeeze_or_expand: (N,) against (N, 1) compares per row."""
    rt, rp = y_true.shape.rank, y_pred.shape.rank
    if rt is not None and rp is not None:
        if rt == rp - 1 and y_pred.shape[-1] == 1:
            y_true = tf.expand_dims(y_true, -1)
        elif rp == rt - 1 and y_true.shape[-1] == 1:
            y_true = tf.squeeze(y_true, -1)
    return y_true, y_pred


def _prepare(y_true, y_pred):
    y_pred = _tensor(y_pred)
    if not y_pred.dtype.is_floating:
        y_pred = tf.cast(y_pred, backend.floatx())
    y_true = _tensor(y_true, y_pred.dtype)
    return _match_ranks(y_true, y_pred)


# ---- per-example functions ------------------------------------------------

def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(tf.abs(y_pred - y_true), axis=-1)


def _clip_probs(p):
    eps = backend.epsilon()
    return tf.clip_by_value(p, eps, 1.0 - eps)


def categorical_crossentropy(y_true, y_pred, from_logits=False,
                             label_smoothing=0.0, axis=-1):
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        n = tf.cast(tf.shape(y_true)[axis], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / n
    if from_logits:
        return tf.nn.softmax_cross_entropy_with_logits(
            labels=y_true, logits=y_pred, axis=axis)
    # Probabilities: renormalize (Keras does), clip, then -sum(t log p).
    y_pred = y_pred / tf.reduce_sum(y_pred, axis=axis, keepdims=True)
    return -tf.reduce_sum(y_true * tf.math.log(_clip_probs(y_pred)),
                          axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False,
                                    axis=-1, ignore_class=None):
    y_pred = _tensor(y_pred)
    if not y_pred.dtype.is_floating:
        y_pred = tf.cast(y_pred, backend.floatx())
    y_true = _tensor(y_true)
    if y_true.shape.rank is not None and y_pred.shape.rank is not None \
            and y_true.shape.rank == y_pred.shape.rank \
            and y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    if y_true.dtype not in (tf.int32, tf.int64):
        # Any label dtype works as in Keras (MNIST's labels are uint8);
        # the kernels take int32/int64 only.
        y_true = tf.cast(y_true, tf.int32)
    if axis not in (-1, y_pred.shape.rank - 1):
        raise ValueError("sparse_categorical_crossentropy supports only "
                         "the last axis as the class axis")
    if from_logits:
        return tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y_true, logits=y_pred)
    n = y_pred.shape[-1]
    onehot = tf.one_hot(y_true, n, dtype=y_pred.dtype)
    return -tf.reduce_sum(onehot * tf.math.log(_clip_probs(y_pred)),
                          axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False,
                        label_smoothing=0.0, axis=-1):
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        # max(x, 0) - x z + log(1 + exp(-|x|)): no overflow for any x.
        per = (tf.nn.relu(y_pred) - y_pred * y_true +
               tf.math.log1p(tf.exp(-tf.abs(y_pred))))
    else:
        p = _clip_probs(y_pred)
        per = -(y_true * tf.math.log(p) +
                (1.0 - y_true) * tf.math.log(1.0 - p))
    return tf.reduce_mean(per, axis=axis)


def huber(y_true, y_pred, delta=1.0):
    """Quadratic within delta of the target, linear beyond (Keras 3:
    0.5 e^2 if |e| <= delta else delta |e| - 0.5 delta^2)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    err = y_pred - y_true
    abs_err = tf.abs(err)
    delta = tf.cast(delta, y_pred.dtype)
    per = tf.where(abs_err <= delta, 0.5 * tf.square(err),
                   delta * abs_err - 0.5 * tf.square(delta))
    return tf.reduce_mean(per, axis=-1)


def kl_divergence(y_true, y_pred):
    """sum(t log(t / p)) with both clipped to [epsilon, 1]."""
    y_true, y_pred = _prepare(y_true, y_pred)
    eps = backend.epsilon()
    y_true = tf.clip_by_value(y_true, eps, 1.0)
    y_pred = tf.clip_by_value(y_pred, eps, 1.0)
    return tf.reduce_sum(y_true * tf.math.log(y_true / y_pred), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    """The negated cosine between the L2-normalized vectors (a loss to
    minimize: -1 when aligned)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = tf.nn.l2_normalize(y_true, axis=axis)
    y_pred = tf.nn.l2_normalize(y_pred, axis=axis)
    return -tf.reduce_sum(y_true * y_pred, axis=axis)


def log_cosh(y_true, y_pred):
    """log(cosh(e)) as e + softplus(-2e) - log 2 (no overflow)."""
    y_true, y_pred = _prepare(y_true, y_pred)
    e = y_pred - y_true
    return tf.reduce_mean(e + tf.nn.softplus(-2.0 * e) - 0.6931471805599453,
                          axis=-1)


def poisson(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    return tf.reduce_mean(
        y_pred - y_true * tf.math.log(y_pred + backend.epsilon()), axis=-1)


def _hinge_labels(y_true):
    # Keras maps {0, 1} labels to {-1, 1}; other labels pass unchanged.
    is_binary = tf.reduce_all(tf.logical_or(tf.equal(y_true, 0.0),
                                            tf.equal(y_true, 1.0)))
    return tf.where(is_binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return tf.reduce_mean(tf.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = _hinge_labels(y_true)
    return tf.reduce_mean(tf.square(tf.maximum(1.0 - y_true * y_pred, 0.0)),
                          axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    diff = tf.abs((y_true - y_pred) /
                  tf.maximum(tf.abs(y_true), backend.epsilon()))
    return 100.0 * tf.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred)
    eps = backend.epsilon()
    a = tf.math.log(tf.maximum(y_pred, eps) + 1.0)
    b = tf.math.log(tf.maximum(y_true, eps) + 1.0)
    return tf.reduce_mean(tf.square(a - b), axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
kld = KLD = kullback_leibler_divergence = kl_divergence
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
logcosh = log_cosh


# ---- classes --------------------------------------------------------------

class Loss:
    """Base class: subclasses implement call(y_true, y_pred) -> the
    per-example losses."""

    def __init__(self, reduction="sum_over_batch_size", name=None):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"Invalid value for argument `reduction`. "
                             f"Expected one of {_REDUCTIONS[:3]}. Received: "
                             f"reduction={reduction!r}")
        self.reduction = ("sum_over_batch_size"
                          if reduction in ("auto", "mean") else reduction)
        self.name = name or backend.to_snake_case(type(self).__name__)

    def call(self, y_true, y_pred):
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None):
        losses = self.call(y_true, y_pred)
        return reduce_weighted(losses, sample_weight, self.reduction)

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def reduce_weighted(losses, sample_weight, reduction):
    if sample_weight is not None:
        sw = _tensor(sample_weight, losses.dtype)
        rl, rw = losses.shape.rank, sw.shape.rank
        if rl is not None and rw is not None:
            if rw == rl + 1 and sw.shape[-1] == 1:
                sw = tf.squeeze(sw, -1)
            while rw is not None and rw < rl:
                sw = tf.expand_dims(sw, -1)
                rw += 1
        losses = losses * sw
    if reduction == "none":
        return losses
    total = tf.reduce_sum(losses)
    if reduction == "sum":
        return total
    return total / tf.cast(tf.size(losses), losses.dtype)


class LossFunctionWrapper(Loss):
    def __init__(self, fn, reduction="sum_over_batch_size", name=None,
                 **kwargs):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        return config


class MeanSquaredError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_squared_error"):
        super().__init__(mean_squared_error, reduction, name)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction, name)


class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size",
                 name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction, name,
                         from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, ignore_class=None,
                 reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy"):
        if ignore_class is not None:
            raise ValueError("tfmini's SparseCategoricalCrossentropy does "
                             "not support ignore_class")
        super().__init__(sparse_categorical_crossentropy, reduction, name,
                         from_logits=from_logits)
        self.from_logits = from_logits


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size",
                 name="binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction, name,
                         from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class Huber(LossFunctionWrapper):
    def __init__(self, delta=1.0, reduction="sum_over_batch_size",
                 name="huber_loss"):
        super().__init__(huber, reduction, name, delta=float(delta))


class KLDivergence(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size",
                 name="kl_divergence"):
        super().__init__(kl_divergence, reduction, name)


class CosineSimilarity(LossFunctionWrapper):
    def __init__(self, axis=-1, reduction="sum_over_batch_size",
                 name="cosine_similarity"):
        super().__init__(cosine_similarity, reduction, name, axis=axis)


class LogCosh(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="log_cosh"):
        super().__init__(log_cosh, reduction, name)


class Poisson(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="poisson"):
        super().__init__(poisson, reduction, name)


class Hinge(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="hinge"):
        super().__init__(hinge, reduction, name)


class SquaredHinge(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size",
                 name="squared_hinge"):
        super().__init__(squared_hinge, reduction, name)


class MeanAbsolutePercentageError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_absolute_percentage_error"):
        super().__init__(mean_absolute_percentage_error, reduction, name)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_squared_logarithmic_error"):
        super().__init__(mean_squared_logarithmic_error, reduction, name)


_BY_NAME = {
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
    "MSE": MeanSquaredError, "MeanSquaredError": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError,
    "MAE": MeanAbsoluteError, "MeanAbsoluteError": MeanAbsoluteError,
    "categorical_crossentropy": CategoricalCrossentropy,
    "CategoricalCrossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "SparseCategoricalCrossentropy": SparseCategoricalCrossentropy,
    "binary_crossentropy": BinaryCrossentropy,
    "BinaryCrossentropy": BinaryCrossentropy,
    "huber": Huber, "huber_loss": Huber,
    "kl_divergence": KLDivergence, "kld": KLDivergence,
    "KLD": KLDivergence, "cosine_similarity": CosineSimilarity,
    "log_cosh": LogCosh, "logcosh": LogCosh, "poisson": Poisson,
    "hinge": Hinge, "squared_hinge": SquaredHinge,
    "mean_absolute_percentage_error": MeanAbsolutePercentageError,
    "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
    "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
    "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
}
for _c in (Huber, KLDivergence, CosineSimilarity, LogCosh, Poisson, Hinge,
           SquaredHinge, MeanAbsolutePercentageError,
           MeanSquaredLogarithmicError):
    _BY_NAME[_c.__name__] = _c
del _c


def get(identifier):
    """A Loss from a name, a class, an instance or a function."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"Unknown loss function: {identifier!r}. "
                             f"Known: {sorted(_BY_NAME)}") from None
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, Loss):
        return identifier
    if callable(identifier):
        return LossFunctionWrapper(identifier,
                                   name=getattr(identifier, "__name__",
                                                "loss"))
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}")
