"""keras.metrics: stateful metrics.

A metric keeps its running state in non-trainable tf.Variables, so that
update_state() inside a traced train step is a pair of assign ops in the
graph. result() reads the state; reset_state() zeroes it. Calling a metric
updates it and returns the new result.
"""
import tfmini as tf
from tfmini import trackable as _tracking

from . import backend, losses as losses_mod
from .variables import KerasVariable


# Set by tfmini.distribute while a MultiWorkerMirroredStrategy has
# several workers: _read_hook(metric, result_fn) gives result_fn's value
# over every worker's state. As in TF, a metric's variables are SUM-
# aggregated and synchronized ON_READ: read outside a replica they sum
# the replicas' (Note [Metrics read across workers] in
# distribute/multi_worker.py).
_read_hook = None


def _reads_across_workers(fn):
    def result(self):
        if _read_hook is None:
            return fn(self)
        return _read_hook(self, lambda: fn(self))
    result.__name__, result.__doc__ = fn.__name__, fn.__doc__
    result._keras_synced_read = True
    return result


class Metric(_tracking.Trackable):
    """Base class: subclasses create state with add_variable in
    __init__ and implement update_state and result."""

    _keras_is_metric = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("result")
        if fn is not None and not getattr(fn, "_keras_synced_read", False):
            cls.result = _reads_across_workers(fn)

    def _trackable_children(self):
        """Its variables, by short name (the trackable protocol)."""
        return [((_tracking.escape(_tracking.short_name(v)),), v)
                for v in self.variables]

    def __init__(self, name=None, dtype=None):
        self.name = name or backend.to_snake_case(type(self).__name__)
        self._dtype = tf.as_dtype(getattr(dtype, "name", dtype) or
                                  backend.floatx())
        self._variables = []

    @property
    def dtype(self):
        return self._dtype.name

    def add_variable(self, shape=(), initializer="zeros", dtype=None,
                     name=None):
        dt = tf.as_dtype(getattr(dtype, "name", dtype) or self._dtype)
        with backend.init_scope():
            v = KerasVariable(tf.zeros(shape, dt), path=f"{self.name}/{name}",
                              trainable=False, aggregation="sum",
                              synchronization="on_read")
        self._variables.append(v)
        return v

    add_weight = add_variable

    @property
    def variables(self):
        return list(self._variables)

    def update_state(self, *args, **kwargs):
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def reset_state(self):
        for v in self._variables:
            v.assign(tf.zeros(tuple(v.shape), v.dtype), read_value=False)

    # No reset_states: Keras 3 (TF 2.21's tf.keras) dropped it from
    # metrics (RNN layers keep theirs), and code written for TF 2.21
    # meets its AttributeError.

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _weighted(values, sample_weight, dtype):
    values = tf.cast(values, dtype)
    if sample_weight is None:
        return tf.reduce_sum(values), tf.cast(tf.size(values), dtype)
    sw = sample_weight
    if not isinstance(sw, tf.Tensor):
        sw = tf.convert_to_tensor(sw)
    sw = tf.cast(sw, dtype)
    rv, rw = values.shape.rank, sw.shape.rank
    if rw == rv + 1 and sw.shape[-1] == 1:
        sw = tf.squeeze(sw, -1)
    sw = tf.broadcast_to(sw, tf.shape(values)) if rw != rv else sw
    return tf.reduce_sum(values * sw), tf.reduce_sum(sw)


class Mean(Metric):
    """The (weighted) mean of the values given to update_state."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

    def update_state(self, values, sample_weight=None):
        values = values if isinstance(values, tf.Tensor) else \
            tf.convert_to_tensor(values)
        total, count = _weighted(values, sample_weight, self._dtype)
        self.total.assign_add(total, read_value=False)
        self.count.assign_add(count, read_value=False)

    def result(self):
        return tf.math.divide_no_nan(self.total.read_value(),
                                     self.count.read_value())


class Sum(Metric):
    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")

    def update_state(self, values, sample_weight=None):
        values = values if isinstance(values, tf.Tensor) else \
            tf.convert_to_tensor(values)
        self.total.assign_add(_weighted(values, sample_weight,
                                        self._dtype)[0], read_value=False)

    def result(self):
        return self.total.read_value()


class MeanMetricWrapper(Mean):
    """The mean of fn(y_true, y_pred) over all examples seen."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", "metric"),
                         dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(values, sample_weight)


# ---- metric functions ------------------------------------------------------

def _as_tensor(x):
    if isinstance(x, tf.Tensor) or hasattr(x, "_dtype_enum"):
        return x
    return tf.convert_to_tensor(x)


def accuracy(y_true, y_pred):
    y_true, y_pred = _as_tensor(y_true), _as_tensor(y_pred)
    y_true, y_pred = losses_mod._match_ranks(y_true, y_pred)
    if y_true.dtype != y_pred.dtype:
        y_true = tf.cast(y_true, y_pred.dtype)
    return tf.cast(tf.equal(y_true, y_pred), backend.floatx())


def sparse_categorical_accuracy(y_true, y_pred):
    y_true, y_pred = _as_tensor(y_true), _as_tensor(y_pred)
    rt, rp = y_true.shape.rank, y_pred.shape.rank
    if rt is not None and rp is not None and rt == rp and \
            y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    pred = tf.argmax(y_pred, axis=-1, output_type=tf.int32)
    if y_true.dtype != tf.int32:
        y_true = tf.cast(y_true, tf.int32)
    return tf.cast(tf.equal(y_true, pred), backend.floatx())


def categorical_accuracy(y_true, y_pred):
    y_true, y_pred = _as_tensor(y_true), _as_tensor(y_pred)
    return tf.cast(tf.equal(tf.argmax(y_true, axis=-1),
                            tf.argmax(y_pred, axis=-1)), backend.floatx())


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_true, y_pred = _as_tensor(y_true), _as_tensor(y_pred)
    y_true, y_pred = losses_mod._match_ranks(y_true, y_pred)
    pred = tf.cast(y_pred > threshold, y_pred.dtype)
    if y_true.dtype != y_pred.dtype:
        y_true = tf.cast(y_true, y_pred.dtype)
    return tf.reduce_mean(tf.cast(tf.equal(y_true, pred), backend.floatx()),
                          axis=-1)


def _in_top_k(labels, y_pred, k):
    """TF's in_top_k: the label's score is in the top k when fewer than
    k scores beat it (ties at the boundary count as in)."""
    y_pred = tf.cast(y_pred, tf.float32)
    n = y_pred.shape[-1]
    target = tf.reduce_sum(tf.one_hot(labels, n, dtype=y_pred.dtype) *
                           y_pred, axis=-1, keepdims=True)
    beaten = tf.reduce_sum(tf.cast(y_pred > target, tf.int32), axis=-1)
    return tf.logical_and(beaten < k, tf.math.is_finite(target[..., 0]))


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    y_true, y_pred = _as_tensor(y_true), _as_tensor(y_pred)
    labels = tf.argmax(y_true, axis=-1, output_type=tf.int32)
    return tf.cast(_in_top_k(labels, y_pred, k), backend.floatx())


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5,
                                      from_sorted_ids=False):
    y_true, y_pred = _as_tensor(y_true), _as_tensor(y_pred)
    rt, rp = y_true.shape.rank, y_pred.shape.rank
    if rt is not None and rp is not None and rt == rp and \
            y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    if y_true.dtype != tf.int32:
        y_true = tf.cast(y_true, tf.int32)
    if from_sorted_ids:
        # y_pred holds class ids, best first: is the label among the
        # first k?
        ids = tf.cast(y_pred[..., :k], tf.int32)
        hit = tf.reduce_any(tf.equal(ids, tf.expand_dims(y_true, -1)), -1)
        return tf.cast(hit, backend.floatx())
    return tf.cast(_in_top_k(y_true, y_pred, k), backend.floatx())


# ---- metric classes --------------------------------------------------------

class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) equals the integer label."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) equals argmax of the one-hot label."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often (y_pred > threshold) equals the 0/1 label."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype,
                         threshold=threshold)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(losses_mod.mean_squared_error, name=name,
                         dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(losses_mod.mean_absolute_error, name=name,
                         dtype=dtype)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_crossentropy", dtype=None,
                 from_logits=False, axis=-1):
        super().__init__(losses_mod.sparse_categorical_crossentropy,
                         name=name, dtype=dtype, from_logits=from_logits,
                         axis=axis)


class CategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="categorical_crossentropy", dtype=None,
                 from_logits=False, label_smoothing=0.0, axis=-1):
        super().__init__(losses_mod.categorical_crossentropy, name=name,
                         dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class BinaryCrossentropy(MeanMetricWrapper):
    def __init__(self, name="binary_crossentropy", dtype=None,
                 from_logits=False, label_smoothing=0.0):
        super().__init__(losses_mod.binary_crossentropy, name=name,
                         dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label's class is among the k top scores."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype,
                         k=k)
        self.k = k

    def get_config(self):
        return dict(super().get_config(), k=self.k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is among the k top scores."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy",
                 dtype=None, from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name=name,
                         dtype=dtype, k=k, from_sorted_ids=from_sorted_ids)
        self.k = k
        self.from_sorted_ids = from_sorted_ids

    def get_config(self):
        return dict(super().get_config(), k=self.k,
                    from_sorted_ids=self.from_sorted_ids)


def _positive_cosine(y_true, y_pred, axis=-1):
    return -losses_mod.cosine_similarity(y_true, y_pred, axis=axis)


class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine between labels and predictions (+1 aligned)."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(_positive_cosine, name=name, dtype=dtype,
                         axis=axis)


class KLDivergence(MeanMetricWrapper):
    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(losses_mod.kl_divergence, name=name, dtype=dtype)


class Poisson(MeanMetricWrapper):
    def __init__(self, name="poisson", dtype=None):
        super().__init__(losses_mod.poisson, name=name, dtype=dtype)


class LogCoshError(MeanMetricWrapper):
    def __init__(self, name="logcosh", dtype=None):
        super().__init__(losses_mod.log_cosh, name=name, dtype=dtype)


class Hinge(MeanMetricWrapper):
    def __init__(self, name="hinge", dtype=None):
        super().__init__(losses_mod.hinge, name=name, dtype=dtype)


class SquaredHinge(MeanMetricWrapper):
    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(losses_mod.squared_hinge, name=name, dtype=dtype)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(losses_mod.mean_absolute_percentage_error,
                         name=name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(losses_mod.mean_squared_logarithmic_error,
                         name=name, dtype=dtype)


_CLASSES = {
    "accuracy": Accuracy, "acc": Accuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "binary_accuracy": BinaryAccuracy,
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "binary_crossentropy": BinaryCrossentropy,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "cosine_similarity": CosineSimilarity,
    "kl_divergence": KLDivergence, "kld": KLDivergence,
    "poisson": Poisson, "logcosh": LogCoshError, "hinge": Hinge,
    "squared_hinge": SquaredHinge,
    "mean_absolute_percentage_error": MeanAbsolutePercentageError,
    "mape": MeanAbsolutePercentageError,
    "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
    "msle": MeanSquaredLogarithmicError,
}
for _c in set(_CLASSES.values()) | {Mean, Sum}:
    _CLASSES[_c.__name__] = _c
del _c


def _accuracy_for(loss, y_true, y_pred):
    """Which accuracy 'accuracy' means for this loss and these shapes,
    as Keras decides it."""
    name = getattr(loss, "name", "") or ""
    if "sparse_categorical" in name:
        return sparse_categorical_accuracy
    if "binary" in name:
        return binary_accuracy
    if "categorical" in name:
        return categorical_accuracy
    pshape, tshape = tuple(y_pred.shape), tuple(y_true.shape)
    if pshape and pshape[-1] == 1:
        return binary_accuracy
    if pshape and len(tshape) < len(pshape) or (tshape and tshape[-1] == 1):
        return sparse_categorical_accuracy
    return categorical_accuracy


class _AutoAccuracy(MeanMetricWrapper):
    """compile(metrics=['accuracy']): resolved on the first update from
    the loss and the shapes; reported under the name given."""

    def __init__(self, name, loss):
        super().__init__(None, name=name)
        self._loss = loss

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self._fn is None:
            self._fn = _accuracy_for(self._loss, _as_tensor(y_true),
                                     _as_tensor(y_pred))
        super().update_state(y_true, y_pred, sample_weight)


def get(identifier, loss=None):
    """A Metric from a name, a class, an instance or a function."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier in ("accuracy", "acc"):
            return _AutoAccuracy(identifier, loss)
        try:
            cls = _CLASSES[identifier]
        except KeyError:
            cls = None
        if cls is not None:
            # Keras names a metric given by its function's name (or
            # alias: 'mae') after that string, so logs say 'mae'.
            if identifier[0].islower():
                return cls(name=identifier)
            return cls()
        raise ValueError(f"Unknown metric function: {identifier!r}. "
                         f"Known: {sorted(_CLASSES)}") from None
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"Could not interpret metric identifier: "
                     f"{identifier!r}")


mse = MSE = losses_mod.mean_squared_error
mae = MAE = losses_mod.mean_absolute_error


# At the end: metrics_confusion imports Metric from this module.
from .metrics_confusion import AUC, Precision, Recall  # noqa: E402,F401

for _c in (AUC, Precision, Recall):
    _CLASSES[_c.__name__] = _c
_CLASSES.update(auc=AUC, precision=Precision, recall=Recall)
del _c
