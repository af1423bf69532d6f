"""keras.Model: a layer with a training loop.

Subclass it (layers assigned in __init__, the forward pass in call) or
build one functionally, keras.Model(inputs, outputs). compile() picks
the optimizer, loss and metrics; fit/evaluate/predict run train_step,
test_step and predict_step over batches, each wrapped in tf.function
(traced once for the batches' shapes, with the batch dim unknown) unless
run_eagerly=True.
"""
import warnings

import numpy as np

import tfmini as tf

from .. import backend, callbacks as callbacks_mod, losses as losses_mod
from .. import metrics as metrics_mod, optimizers, saving
from ..layers.base import Layer, _unknown_batch, _walk
from . import data_adapter
from .data_adapter import DataHandler, unpack_x_y_sample_weight


def _has_tracing():
    return hasattr(tf, "function") and hasattr(tf, "TensorSpec")


def _spec(x):
    """TensorSpec of a batch component with the batch dim unknown, so
    one trace serves full and partial batches."""
    shape = tuple(x.shape)
    if shape:
        shape = (None,) + shape[1:]
    return tf.TensorSpec(shape, x.dtype)


def _structure_key(x, with_shapes):
    if isinstance(x, dict):
        return ("d",) + tuple((k, _structure_key(v, with_shapes))
                              for k, v in sorted(x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(_structure_key(v, with_shapes)
                                           for v in x)
    if x is None:
        return None
    if with_shapes:
        return (x.dtype.name, tuple(x.shape)[1:])
    return x.dtype.name


def _to_float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def _float32_outputs(y_pred):
    def up(t):
        if isinstance(t, tf.Tensor) and t.dtype == tf.float16:
            return tf.cast(t, tf.float32)
        return t
    if isinstance(y_pred, tf.Tensor):
        return up(y_pred)
    return tf.nest.map_structure(up, y_pred)


_functional_subclasses = {}


def _functional_subclass_call(cls, args, kwargs):
    """Is cls (a Model subclass, not functional itself) being called
    with keras.Input-based inputs and outputs?"""
    from ..layers.base import _contains_keras_tensor
    from .functional import Functional
    if cls is Model or issubclass(cls, Functional):
        return False
    if len(args) >= 2:
        inputs, outputs = args[0], args[1]
    elif len(args) == 1 and "outputs" in kwargs:
        inputs, outputs = args[0], kwargs["outputs"]
    elif "inputs" in kwargs and "outputs" in kwargs:
        inputs, outputs = kwargs["inputs"], kwargs["outputs"]
    else:
        return False
    return _contains_keras_tensor(inputs) and _contains_keras_tensor(outputs)


def _functional_subclass(cls):
    """cls with Functional after it in the MRO: cls's own methods win,
    Functional supplies __init__(inputs, outputs) and call()."""
    from .functional import Functional
    sub = _functional_subclasses.get(cls)
    if sub is None:
        sub = type(cls.__name__, (cls, Functional),
                   {"__module__": cls.__module__,
                    "__qualname__": cls.__qualname__})
        _functional_subclasses[cls] = sub
    return sub


def _sorted(logs):
    """Logs in name order, as Keras 3 hands them to callbacks, the
    progress bar and History."""
    return dict(sorted(logs.items()))


class _OutputLosses:
    """compile(loss=[...] or {...}): one loss per model output, summed
    with loss_weights; each output's loss is also logged as
    '<output name>_loss', as Keras 3 does."""

    def __init__(self, model, losses, weights):
        self.model = model
        self.losses = losses
        self.weights = weights
        self.trackers = []
        outputs = getattr(model, "_keras_outputs", None)
        if outputs is not None:
            # The trackers' variables are made now, outside any trace.
            self._make_trackers(self._names(outputs))

    def _make_trackers(self, names):
        # Keras 3 logs per-output losses only when two or more outputs
        # have one.
        has = [n for i, n in enumerate(names)
               if self._pick(self.losses, i, n, "loss") is not None]
        self.trackers = [metrics_mod.Mean(name=f"{n}_loss")
                         for n in has] if len(has) > 1 else []
        self._tracker_of = dict(zip(has, self.trackers))

    def _names(self, y_pred):
        if isinstance(y_pred, dict):
            return list(y_pred)
        outputs = getattr(self.model, "outputs", None)
        if outputs and len(outputs) == len(y_pred):
            return [kt._keras_node.layer.name for kt in outputs]
        return [f"output_{i}" for i in range(len(y_pred))]

    @staticmethod
    def _pick(struct, i, name, what):
        if isinstance(struct, dict):
            if name not in struct:
                raise ValueError(f"No {what} given for output {name!r}; "
                                 f"the {what} has keys {sorted(struct)}")
            return struct[name]
        if isinstance(struct, (list, tuple)):
            if i >= len(struct):
                raise ValueError(f"The {what} has {len(struct)} entries "
                                 f"but the model has more outputs")
            return struct[i]
        if struct is None or i == 0:
            return struct
        raise ValueError(f"The model has several outputs but the {what} "
                         f"is not a list or dict")

    def __call__(self, y_true, y_pred, sample_weight=None):
        if not isinstance(y_pred, (list, tuple, dict)):
            raise ValueError("compile() was given one loss per output, but "
                             "the model has a single output")
        names = self._names(y_pred)
        preds = [y_pred[n] for n in names] if isinstance(y_pred, dict) \
            else list(y_pred)
        if not hasattr(self, "_tracker_of"):
            self._make_trackers(names)
        total = None
        for i, (name, pred) in enumerate(zip(names, preds)):
            fn = self._pick(self.losses, i, name, "loss")
            if fn is None:
                continue
            fn = losses_mod.get(fn)
            value = fn(self._pick(y_true, i, name, "target"), pred,
                       sample_weight)
            n = tf.shape(pred)[0]
            if name in self._tracker_of:
                self._tracker_of[name].update_state(value, sample_weight=n)
            w = 1.0 if self.weights is None else \
                self._pick(self.weights, i, name, "loss_weights")
            term = value * w
            total = term if total is None else total + term
        return total


def _replica_loss_scale():
    """In Keras's distributed train step: this replica's share of the
    global batch (None elsewhere)."""
    ctx = tf.distribute.get_replica_context()
    return None if ctx is None else ctx._loss_scale


def _concat_replicas(out):
    """predict's per-replica outputs joined back into the batch."""
    from tfmini.distribute import PerReplica
    if isinstance(out, PerReplica):
        return tf.concat(list(out), axis=0)
    if isinstance(out, (list, tuple)):
        return type(out)(_concat_replicas(o) for o in out)
    if isinstance(out, dict):
        return {k: _concat_replicas(v) for k, v in out.items()}
    return out


class Model(Layer):
    """A Layer with compile/fit/evaluate/predict/summary and weights
    files (tf.keras.Model)."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "inputs" in kwargs or
                             "outputs" in kwargs):
            from .functional import Functional
            return object.__new__(Functional)
        if _functional_subclass_call(cls, args, kwargs):
            # CustomModel(inputs, outputs), as in Keras: a functional
            # model that keeps the subclass's train_step, metrics, ...
            return object.__new__(_functional_subclass(cls))
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        known = {k: kwargs.pop(k) for k in ("name", "trainable", "dtype")
                 if k in kwargs}
        if args:
            # Keras 3's words (its Layer.__init__ takes keywords only).
            # Not the arguments' repr: a subclass passing `self` (as
            # TF's effective_tf2 guide does) has no name yet to show.
            raise TypeError(f"Layer.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        kwargs.pop("autocast", None)
        super().__init__(**known, **kwargs)
        self._keras_compiled = False
        self._keras_run_eagerly = None
        self._keras_functions = {}
        self._keras_loss_fn = None
        self._keras_compiled_metrics = []
        self._keras_metric_specs = []
        self._keras_loss_tracker = None
        self.optimizer = None
        self.loss = None
        self.stop_training = False
        self.history = None
        # The strategy whose scope the model was made in (TF's
        # model.distribute_strategy); fit/evaluate/predict run on it.
        self._distribute_strategy = tf.distribute.get_strategy() \
            if tf.distribute.has_strategy() else None

    # ---- structure ----------------------------------------------------
    @property
    def layers(self):
        """The model's direct sub-layers, in the order assigned."""
        return self._tracked_children()[0]

    def get_layer(self, name=None, index=None):
        if index is not None:
            layers = self.layers
            if len(layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index "
                                 f"{index} but model only has "
                                 f"{len(layers)} layers.")
            return layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in self.layers]}.")

    def _keras_maybe_build(self, inputs):
        # Sub-layers build lazily during the call itself; a model only
        # runs its own build() when a subclass defines one.
        if self.built:
            return
        shape = data_adapter._map(
            lambda t: tf.TensorShape(t.shape) if hasattr(t, "shape")
            else None, inputs)
        if isinstance(shape, tf.TensorShape) and shape.rank:
            self._keras_batch_input_shape = (None,) + tuple(shape)[1:]
        if type(self).build is not Model.build:
            with backend.init_scope():
                self.build(shape)
        self.built = True

    def build(self, input_shape):
        """Create the weights by calling the model on a batch of zeros
        of input_shape (None dims as 1)."""
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        shapes = input_shape
        if isinstance(shapes, tuple) and shapes and \
                all(isinstance(d, (int, type(None))) for d in shapes):
            shapes = tf.TensorShape(shapes)

        def zeros(s):
            s = tf.TensorShape(s)
            return tf.zeros([1 if d is None else d for d in s],
                            self._keras_dtype)
        if isinstance(shapes, (tf.TensorShape, list)) and \
                isinstance(shapes, tf.TensorShape):
            dummy = zeros(shapes)
            self._keras_batch_input_shape = (None,) + tuple(shapes)[1:]
        else:
            dummy = [zeros(s) for s in shapes]
        self.built = True
        unknown = any(tf.TensorShape(s).rank and tf.TensorShape(s)[0] is None
                      for s in ([shapes] if isinstance(shapes, tf.TensorShape)
                                else shapes))
        with backend.init_scope(), _unknown_batch(unknown):
            self(dummy, training=False)

    def call(self, inputs, training=None, mask=None):
        raise NotImplementedError(
            f"Model {type(self).__name__} does not have a `call()` method: "
            f"subclasses of keras.Model must implement call(inputs)")

    # ---- compile ------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None,
                loss_weights=None, weighted_metrics=None, run_eagerly=None,
                steps_per_execution=None, jit_compile=None,
                auto_scale_loss=True, **kwargs):
        """Set the optimizer, loss and metrics used by fit/evaluate."""
        self._keras_output_losses = None
        if isinstance(loss, (list, tuple)) and len(loss) == 1:
            loss = loss[0]
        if isinstance(loss, (list, tuple, dict)):
            if metrics or weighted_metrics:
                raise ValueError("tfmini's compile() does not support "
                                 "metrics together with one loss per "
                                 "output yet")
            self._keras_output_losses = _OutputLosses(self, loss,
                                                      loss_weights)
        self.optimizer = optimizers.get(optimizer)
        if auto_scale_loss and self.compute_dtype == "float16" and \
                not isinstance(self.optimizer,
                               optimizers.LossScaleOptimizer):
            # Keras 3: a float16 model gets dynamic loss scaling, or its
            # small gradients would underflow to zero.
            self.optimizer = optimizers.LossScaleOptimizer(self.optimizer)
        self.loss = loss
        self._keras_loss_fn = (self._keras_output_losses
                               if self._keras_output_losses is not None
                               else losses_mod.get(loss))
        if isinstance(metrics, dict):
            raise ValueError("tfmini's compile() does not support a dict of "
                             "metrics yet")
        # (metric, weighted): like Keras, only weighted_metrics see the
        # sample weights.
        self._keras_metric_specs = [
            (metrics_mod.get(m, self._keras_loss_fn), False)
            for m in metrics or []] + [
            (metrics_mod.get(m, self._keras_loss_fn), True)
            for m in weighted_metrics or []]
        self._keras_compiled_metrics = [m for m, _ in
                                        self._keras_metric_specs]
        self._keras_loss_tracker = metrics_mod.Mean(name="loss")
        self._keras_run_eagerly = run_eagerly
        self._keras_functions = {}
        self._keras_compiled = True

    @property
    def run_eagerly(self):
        cfg = getattr(tf.config, "functions_run_eagerly", None)
        return bool(self._keras_run_eagerly) or bool(cfg and cfg())

    @run_eagerly.setter
    def run_eagerly(self, value):
        self._keras_run_eagerly = value
        self._keras_functions = {}

    @property
    def metrics(self):
        """The loss tracker, compiled metrics, then metrics assigned as
        attributes (of this model and its layers)."""
        out = []
        if self._keras_loss_tracker is not None:
            out.append(self._keras_loss_tracker)
        if getattr(self, "_keras_output_losses", None) is not None:
            out.extend(self._keras_output_losses.trackers)
        out.extend(self._keras_compiled_metrics)
        seen = {id(m) for m in out}
        for layer in self._flatten_layers():
            found = []
            _walk(list(layer._keras_tracked.values()), [], [], found,
                  set())
            for m in found:
                if id(m) not in seen:
                    seen.add(id(m))
                    out.append(m)
        return out

    @property
    def metrics_names(self):
        # Keras 3 groups the compiled metrics into one 'compile_metrics'.
        names = []
        compiled = {id(m) for m in self._keras_compiled_metrics}
        for m in self.metrics:
            if id(m) not in compiled:
                names.append(m.name)
            elif "compile_metrics" not in names:
                names.append("compile_metrics")
        return names

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    # ---- steps --------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        """The compiled loss of (y, y_pred) plus the model's added and
        regularization losses."""
        terms = []
        # Keras computes losses in float32, also for float16 outputs.
        y_pred = _float32_outputs(y_pred)
        if self._keras_loss_fn is not None and y is not None:
            terms.append(self._keras_loss_fn(y, y_pred, sample_weight))
        terms.extend(self.losses)
        if not terms:
            if self._keras_loss_fn is None:
                raise ValueError("No loss to compute. Provide a `loss` "
                                 "argument in `compile()`.")
            raise ValueError("The model was compiled with a loss but the "
                             "data has no targets (y)")
        total = terms[0]
        for t in terms[1:]:
            total = total + tf.cast(t, total.dtype)
        scale = _replica_loss_scale()
        if scale is not None and training:
            # One replica's share of the global batch: the optimizer sums
            # the replicas' gradients (tfmini/distribute/updates.py).
            total = total * tf.cast(scale, total.dtype)
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Update the compiled metrics; return every metric's result."""
        if y is not None:
            y_pred = _float32_outputs(y_pred)
            for m, weighted in self._keras_metric_specs:
                m.update_state(y, y_pred,
                               sample_weight if weighted else None)
        return self.get_metrics_result()

    # Keras 2's names, which Keras 3 keeps as deprecated shims (Keras 2
    # train_step overrides call them).
    def compiled_loss(self, y, y_pred, sample_weight=None,
                      regularization_losses=None):
        warnings.warn("`model.compiled_loss()` is deprecated. Instead, use "
                      "`model.compute_loss(x, y, y_pred, sample_weight, "
                      "training)`.")
        return self.compute_loss(x=None, y=y, y_pred=y_pred,
                                 sample_weight=sample_weight)

    @property
    def compiled_metrics(self):
        model = self

        class DeprecatedCompiledMetric:
            def update_state(self, y, y_pred, sample_weight=None):
                warnings.warn("`model.compiled_metrics()` is deprecated. "
                              "Instead, use e.g.:\n```\nfor metric in "
                              "self.metrics:\n    metric.update_state(y, "
                              "y_pred)\n```\n", stacklevel=2)
                # Keras 3's shim, as it is: the compiled metrics (one
                # container there) take (y, y_pred); every other metric
                # that is a Mean, the loss tracker too, takes y_pred alone.
                compiled = {id(m) for m in model._keras_compiled_metrics}
                for m in model.metrics:
                    if id(m) in compiled:
                        continue
                    if isinstance(m, metrics_mod.Mean):
                        m.update_state(y_pred, sample_weight=sample_weight)
                    else:
                        m.update_state(y, y_pred,
                                       sample_weight=sample_weight)
                model.compute_metrics(None, y, y_pred, sample_weight)

        return DeprecatedCompiledMetric()

    def get_metrics_result(self):
        return {m.name: m.result() for m in self.metrics}

    def train_step(self, data):
        """One optimization step on a batch: forward under a tape, loss,
        gradients, optimizer update, metrics. Returns {name: value}."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
            scale_loss = getattr(self.optimizer, "scale_loss", None)
            # Loss scaling (LossScaleOptimizer): its apply_gradients
            # unscales.
            scaled = loss if scale_loss is None else scale_loss(loss)
        variables = self.trainable_variables
        grads = tape.gradient(scaled, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def _track_loss(self, loss, x):
        # The epoch's loss is the mean over examples: each batch's mean
        # counts with its batch size (the last batch may be smaller).
        scale = _replica_loss_scale()
        if scale is not None:
            loss = loss / tf.cast(scale, loss.dtype)
        first = data_adapter._flatten(x)[0]
        n = first.shape[0]
        self._keras_loss_tracker.update_state(
            loss, sample_weight=n if n is not None else tf.shape(first)[0])

    def test_step(self, data):
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight,
                                 training=False)
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    # Note [Batch shapes of traced steps]: TF traces fit's steps once,
    # with the batch dim unknown. tfmini's random ops (hence Dropout)
    # need static shapes when traced, so by default a step is traced per
    # batch shape instead: the full batches and the last, smaller one
    # (two traces, reused for every epoch). With _keras_unknown_batch a
    # step is traced once with the batch dim None (for models whose ops
    # all accept unknown dims).
    _keras_unknown_batch = False

    def _function(self, kind, step, batch):
        """The (traced unless run_eagerly) function running `step` on
        batches like `batch`; one per batch structure and dtypes."""
        if self.run_eagerly or not _has_tracing():
            # Without tf.function (or when debugging) steps run eagerly.
            return step
        key = (kind, _structure_key(batch, self._keras_unknown_batch))
        fn = self._keras_functions.get(key)
        if fn is None:
            if self._keras_unknown_batch:
                signature = [tf.nest.map_structure(_spec, batch)]
                fn = tf.function(step, input_signature=signature)
            else:
                fn = tf.function(step)
            self._keras_functions[key] = fn
        return fn

    @property
    def distribute_strategy(self):
        return getattr(self, "_distribute_strategy", None) or \
            tf.distribute.get_strategy()

    def _replicated(self):
        """The strategy to split batches over, when it has several
        replicas (else None: the plain steps)."""
        s = getattr(self, "_distribute_strategy", None)
        if s is None and tf.distribute.has_strategy():
            s = tf.distribute.get_strategy()
        if s is None or s.num_replicas_in_sync == 1:
            return None
        return s

    def _distributed(self, kind, step, strategy):
        """Run `step` per replica on its slice of the batch (TF's
        distributed fit): the train step's loss is scaled by the slice's
        share of the batch, the optimizer sums the replicas' gradients
        and steps once, metrics count every replica's examples and are
        read after the replicas finish."""
        from tfmini.distribute.values import _split_batch

        def replica_step(data, total):
            if kind == "train":
                x = unpack_x_y_sample_weight(data)[0]
                local = tf.shape(data_adapter._flatten(x)[0])[0]
                tf.distribute.get_replica_context()._loss_scale = \
                    tf.cast(local, tf.float32) / tf.cast(total, tf.float32)
            return step(data)

        def run(data):
            first = data_adapter._flatten(data)[0]
            total = first.shape[0] if first.shape[0] is not None else \
                tf.shape(first)[0]
            per = _split_batch(data, strategy.num_replicas_in_sync)
            out = strategy.run(replica_step, args=(per, total))
            if kind == "predict":
                return _concat_replicas(out)
            # Across workers: every worker's examples, in one all-reduce
            # (in the traced step's graph when traced).
            across = getattr(strategy, "_global_logs", None)
            return self.get_metrics_result() if across is None \
                else across(self)
        return run

    def _step_function(self, kind, step):
        strategy = self._replicated()
        if strategy is None:
            return lambda data: self._function(kind, step, data)(data)
        run = self._distributed(kind, step, strategy)

        def call(data):
            if not self.built:
                # Variables are made once, here, not by every replica,
                # under the strategy (a multi-worker one syncs them).
                from tfmini.distribute.values import _split_batch
                x = unpack_x_y_sample_weight(data)[0]
                part = _split_batch(x, strategy.num_replicas_in_sync)
                with strategy.scope():
                    self(tf.nest.map_structure(
                        lambda p: p if p is None else p[0], part),
                        training=False)
            with strategy.scope():
                logs = self._function("distributed_" + kind, run,
                                      data)(data)
            # Across workers: metrics read every worker's examples,
            # predict gives every worker's outputs.
            merge = getattr(strategy, "_across_workers", None)
            return logs if merge is None else merge(self, kind, logs)
        return call

    def make_train_function(self, force=False):
        return self._step_function("train", self.train_step)

    def make_test_function(self, force=False):
        return self._step_function("test", self.test_step)

    def make_predict_function(self, force=False):
        return self._step_function("predict", self.predict_step)

    def _assert_compiled(self, what):
        if not self._keras_compiled:
            raise RuntimeError(f"You must compile your model before "
                               f"{what}. Calling `compile(optimizer, loss)`.")

    # ---- fit / evaluate / predict -------------------------------------
    def _callbacks(self, callbacks, verbose, epochs, steps, add_history,
                   **extra):
        if isinstance(callbacks, callbacks_mod.CallbackList):
            cbs = callbacks
        else:
            user = list(callbacks or [])
            defaults = []
            if verbose and not any(isinstance(c, callbacks_mod.ProgbarLogger)
                                   for c in user):
                defaults.append(callbacks_mod.ProgbarLogger())
            tail = []
            if add_history:
                tail.append(callbacks_mod.History())
            cbs = callbacks_mod.CallbackList(defaults + user + tail)
        cbs.set_model(self)
        cbs.set_params({"verbose": verbose, "epochs": epochs,
                        "steps": steps, **extra})
        return cbs

    @staticmethod
    def _verbose(verbose):
        if verbose == "auto":
            return 1
        return int(verbose)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto",
            callbacks=None, validation_split=0.0, validation_data=None,
            shuffle=True, class_weight=None, sample_weight=None,
            initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, **kwargs):
        """Train for `epochs` epochs; returns the History callback."""
        self._assert_compiled("training/testing")
        verbose = self._verbose(verbose)
        if validation_split and validation_data is None:
            if data_adapter._is_dataset(x):
                raise ValueError("`validation_split` is only supported for "
                                 "Tensors or NumPy arrays, found: a "
                                 "Dataset")
            (x, y, sample_weight), validation_data = \
                data_adapter.train_validation_split(
                    (data_adapter._map(data_adapter._to_numpy, x),
                     None if y is None else
                     data_adapter._map(data_adapter._to_numpy, y),
                     None if sample_weight is None else
                     data_adapter._to_numpy(sample_weight)),
                    validation_split)
            if validation_data[2] is None:
                validation_data = validation_data[:2]
        data = DataHandler(x, y, sample_weight, batch_size,
                           steps_per_epoch, shuffle, class_weight)
        val = None
        if validation_data is not None:
            if data_adapter._is_dataset(validation_data):
                val = DataHandler(validation_data,
                                  steps_per_epoch=validation_steps)
            else:
                vx, vy, vsw = unpack_x_y_sample_weight(validation_data)
                val = DataHandler(vx, vy, vsw,
                                  validation_batch_size or batch_size,
                                  validation_steps)
        cbs = self._callbacks(callbacks, verbose, epochs, data.steps, True)
        train = self.make_train_function()
        self.stop_training = False
        cbs.on_train_begin()
        # BackupAndRestore found a backup: go on after its epoch.
        resume = getattr(self, "_keras_resume_epoch", None) or 0
        # A mid-epoch backup: that epoch goes on after its batch.
        skip = (getattr(self, "_keras_resume_step", None) or 0) \
            if resume >= initial_epoch else 0
        initial_epoch = max(initial_epoch, resume)
        epoch_logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            logs = None
            for step, batch in enumerate(data.epoch()):
                if step < skip:
                    continue
                cbs.on_train_batch_begin(step)
                logs = train(batch)
                cbs.on_train_batch_end(step, _sorted(logs))
                if self.stop_training:
                    break
            if logs is None and skip:
                logs = {}         # resumed after the epoch's last batch
            skip = 0
            if logs is None:
                raise ValueError("Unexpected result of `train_function` "
                                 "(Empty logs). This could be due to "
                                 "issues in input data: the training data "
                                 "yielded no batch.")
            epoch_logs = {k: _to_float(v) for k, v in logs.items()}
            if val is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate(val, cbs)
                epoch_logs.update({"val_" + k: v
                                   for k, v in val_logs.items()})
            epoch_logs = _sorted(epoch_logs)
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end(epoch_logs)
        for c in cbs:
            if isinstance(c, callbacks_mod.History):
                return c
        return self.history

    def _evaluate(self, data, cbs):
        self.reset_metrics()
        test = self.make_test_function()
        cbs.on_test_begin()
        logs = None
        for step, batch in enumerate(data.epoch()):
            cbs.on_test_batch_begin(step)
            logs = test(batch)
            cbs.on_test_batch_end(step, _sorted(logs))
        if logs is None:
            raise ValueError("Unexpected result of `test_function` (Empty "
                             "logs): the evaluation data yielded no batch.")
        logs = {k: _to_float(v) for k, v in logs.items()}
        cbs.on_test_end(_sorted(logs))
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto",
                 sample_weight=None, steps=None, callbacks=None,
                 return_dict=False, **kwargs):
        """The loss and metrics on the data: a scalar (loss only), a list
        in metrics_names order, or a dict with return_dict=True."""
        self._assert_compiled("training/testing")
        verbose = self._verbose(verbose)
        data = DataHandler(x, y, sample_weight, batch_size, steps)
        cbs = self._callbacks(callbacks, verbose, 1, data.steps, False,
                              _evaluating=True)
        logs = self._evaluate(data, cbs)
        if return_dict:
            return _sorted(logs)
        # The list keeps the compiled order: the loss, then the metrics.
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None,
                callbacks=None, **kwargs):
        """The model's outputs for x, batch by batch, as NumPy arrays."""
        verbose = self._verbose(verbose)
        data = DataHandler(x, batch_size=batch_size, steps_per_epoch=steps,
                           for_predict=True)
        cbs = self._callbacks(callbacks, verbose, 1, data.steps, False)
        fn = self.make_predict_function()
        cbs.on_predict_begin()
        outputs = []
        for step, batch in enumerate(data.epoch()):
            cbs.on_predict_batch_begin(step)
            out = fn(batch)
            outputs.append(tf.nest.map_structure(lambda t: t.numpy(), out))
            cbs.on_predict_batch_end(step, {"outputs": out})
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("Unexpected result of `predict_function` "
                             "(Empty batch_outputs): the input yielded no "
                             "batch.")
        first = outputs[0]
        if isinstance(first, np.ndarray):
            return np.concatenate(outputs)
        flat = [data_adapter._flatten(o) for o in outputs]
        joined = [np.concatenate(parts) for parts in zip(*flat)]
        it = iter(joined)
        return tf.nest.map_structure(lambda _: next(it), first)

    def train_on_batch(self, x, y=None, sample_weight=None,
                       class_weight=None, reset_metrics=True,
                       return_dict=False):
        self._assert_compiled("training/testing")
        if reset_metrics:
            self.reset_metrics()
        data = DataHandler(x, y, sample_weight, batch_size=len(
            data_adapter._flatten(data_adapter._map(
                data_adapter._to_numpy, x))[0]), class_weight=class_weight)
        logs = None
        for batch in data.epoch():
            logs = self.make_train_function()(batch)
        logs = {k: _to_float(v) for k, v in logs.items()}
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def test_on_batch(self, x, y=None, sample_weight=None,
                      reset_metrics=True, return_dict=False):
        self._assert_compiled("training/testing")
        if reset_metrics:
            self.reset_metrics()
        n = len(data_adapter._flatten(data_adapter._map(
            data_adapter._to_numpy, x))[0])
        data = DataHandler(x, y, sample_weight, batch_size=n)
        logs = None
        for batch in data.epoch():
            logs = self.make_test_function()(batch)
        logs = {k: _to_float(v) for k, v in logs.items()}
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def predict_on_batch(self, x):
        out = self(x, training=False)
        return tf.nest.map_structure(lambda t: t.numpy(), out)

    # ---- weights files and summary ------------------------------------
    def save_weights(self, filepath, overwrite=True, save_format=None,
                     options=None):
        """Write the weights to filepath (format: keras/saving/
        weights_format.py), atomically."""
        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, by_name=False,
                     options=None):
        """Read weights written by save_weights into this model (same
        architecture, already built)."""
        saving.load_weights(self, filepath, skip_mismatch=skip_mismatch,
                            by_name=by_name)

    def save(self, filepath, overwrite=True, **kwargs):
        """Write the whole model (architecture, weights, compile
        settings) to a '.keras' file, Keras 3's format
        (keras/saving/keras_file.py)."""
        saving.save_model(self, filepath, overwrite=overwrite, **kwargs)

    def export(self, filepath, format="tf_saved_model", verbose=True):
        """Keras 3's export for serving: a saved model whose
        serving_default runs the model on a batch of its input shape.
        Written into a numbered version folder (models/NAME/1), it is what
        tfmini_model_server and the C runtime load (README, "Deployment
        from C")."""
        if format != "tf_saved_model":
            raise ValueError(f"model.export: format {format!r} is not "
                             f"supported; tfmini exports 'tf_saved_model'")
        if not self.built:
            raise ValueError("model.export: the model is not built; call "
                             "it on data or fit it first")
        tf.saved_model.save(self, filepath)
        if verbose:
            print(f"Saved artifact at '{filepath}'.")

    def summary(self, line_length=None, positions=None, print_fn=None,
                expand_nested=False, show_trainable=False,
                layer_range=None):
        """Print a table of the layers, their output shapes and parameter
        counts."""
        from .summary import print_summary
        print_summary(self, line_length=line_length, positions=positions,
                      print_fn=print_fn, expand_nested=expand_nested,
                      show_trainable=show_trainable, layer_range=layer_range)

    # Notebooks (tfmini/notebook_repr.py): the summary table.
    def _repr_html_(self):
        from ... import notebook_repr as nr
        return nr.to_html(f"{type(self).__name__} {self.name!r}",
                          nr.model_rows(self))

    def _repr_pretty_(self, p, cycle):
        from ... import notebook_repr as nr
        nr.pretty(p, cycle, f"{type(self).__name__} {self.name!r}",
                  [] if cycle else nr.model_rows(self))

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable}
