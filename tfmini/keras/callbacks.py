"""keras.callbacks: hooks called by fit/evaluate/predict.

fit calls on_train_begin, then per epoch on_epoch_begin, per batch
on_train_batch_begin/end (logs: the running metrics), on_epoch_end
(logs: the epoch's metrics and val_ metrics), then on_train_end.
"""
import contextlib
import logging
import math
import os
import sys
import time

import numpy as np

from .utils.progbar import Progbar

_logger = logging.getLogger("tfmini")


class Callback:
    """Base class; override the hooks you need."""

    def __init__(self):
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        pass

    def on_test_batch_end(self, batch, logs=None):
        pass

    def on_predict_batch_begin(self, batch, logs=None):
        pass

    def on_predict_batch_end(self, batch, logs=None):
        pass

    def on_batch_begin(self, batch, logs=None):
        pass

    def on_batch_end(self, batch, logs=None):
        pass


_HOOKS = ("on_epoch_begin", "on_epoch_end", "on_train_begin",
          "on_train_end", "on_test_begin", "on_test_end",
          "on_predict_begin", "on_predict_end", "on_train_batch_begin",
          "on_train_batch_end", "on_test_batch_begin", "on_test_batch_end",
          "on_predict_batch_begin", "on_predict_batch_end")


class CallbackList:
    """Calls each hook on every callback, in order. Batch hooks that no
    callback overrides are skipped (they run every step)."""

    def __init__(self, callbacks=None, model=None, **params):
        self.callbacks = list(callbacks or [])
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)
        self._batch_hooks = {}
        for hook in _HOOKS:
            self._batch_hooks[hook] = [
                getattr(c, hook) for c in self.callbacks
                if _overrides(c, hook)]

    def append(self, callback):
        self.callbacks.append(callback)
        for hook in _HOOKS:
            if _overrides(callback, hook):
                self._batch_hooks[hook].append(getattr(callback, hook))

    def set_model(self, model):
        for c in self.callbacks:
            c.set_model(model)

    def set_params(self, params):
        for c in self.callbacks:
            c.set_params(params)

    def __iter__(self):
        return iter(self.callbacks)

    def __getattr__(self, hook):
        if hook not in _HOOKS:
            raise AttributeError(hook)
        fns = self.__dict__["_batch_hooks"][hook]
        if fns and hook in ("on_train_batch_end", "on_test_batch_end"):
            # Keras 3 hands callbacks a step's logs as Python floats
            # (pythonify_logs). Only the user's callbacks get them: this
            # module's own (the progress bar) take the tensors as they
            # are, so a step reads no value back it does not print.
            def call(batch, logs=None):
                py = None
                for fn in fns:
                    owner = getattr(fn, "__self__", None)
                    if type(owner).__module__ == __name__:
                        fn(batch, logs)
                        continue
                    if py is None:
                        py = _pythonify(logs)
                    fn(batch, py)
            return call

        def call(*args, **kwargs):
            for fn in fns:
                fn(*args, **kwargs)
        return call


def _pythonify(logs):
    """Logs flattened (nested dicts merged in), in name order, each value
    a float where float() takes it, as Keras 3's pythonify_logs."""
    out = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            out.update(_pythonify(value))
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            pass
        out[key] = value
    return out


def _overrides(callback, hook):
    if hook in callback.__dict__:        # LambdaCallback's functions
        return True
    fn = getattr(type(callback), hook, None)
    base = getattr(Callback, hook)
    if fn is not base:
        return True
    # on_train_batch_* forward to the legacy on_batch_* hooks.
    legacy = {"on_train_batch_begin": "on_batch_begin",
              "on_train_batch_end": "on_batch_end"}.get(hook)
    return legacy is not None and (
        legacy in callback.__dict__ or
        getattr(type(callback), legacy) is not getattr(Callback, legacy))


class History(Callback):
    """Records each epoch's logs: history.history['loss'] is a list with
    one value per epoch; history.epoch the epoch numbers."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


class ProgbarLogger(Callback):
    """Prints 'Epoch i/n' and a progress bar per epoch (verbose=1), or
    one line per epoch (verbose=2)."""

    def __init__(self, count_mode="steps", stateful_metrics=None,
                 verbose=1, stream=None):
        super().__init__()
        self.verbose = verbose
        self.stream = stream
        self.progbar = None
        self.target = None
        self.epochs = 1
        self._seen = 0

    def set_params(self, params):
        super().set_params(params)
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")
        if "verbose" in params:
            self.verbose = params["verbose"]

    def _new_bar(self):
        self.progbar = Progbar(self.target, verbose=self.verbose,
                               stateful_metrics=None, stream=self.stream)
        # fit's logs are running values already: show them as given.
        self.progbar.stateful_metrics = _AllNames()
        self._seen = 0

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose and self.epochs > 1:
            out = self.stream or sys.stdout
            out.write(f"Epoch {epoch + 1}/{self.epochs}\n")
            out.flush()
        self._new_bar()

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self.verbose:
            self.progbar.update(self._seen, list((logs or {}).items()),
                                finalize=False)

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose:
            if self.target is None:
                self.target = self._seen
                self.progbar.target = self._seen
            # The epoch's logs hold every value (validation too) in the
            # order Keras 3 prints them: show them in that order.
            self.progbar._values = {}
            self.progbar.update(self._seen, list((logs or {}).items()),
                                finalize=True)

    def on_test_begin(self, logs=None):
        if self.params.get("_evaluating"):
            self._new_bar()

    def on_test_batch_end(self, batch, logs=None):
        if self.params.get("_evaluating") and self.verbose:
            self._seen = batch + 1
            self.progbar.update(self._seen, list((logs or {}).items()),
                                finalize=False)

    def on_test_end(self, logs=None):
        if self.params.get("_evaluating") and self.verbose:
            if self.progbar.target is None:
                self.progbar.target = self._seen
            self.progbar.update(self._seen, list((logs or {}).items()),
                                finalize=True)

    def on_predict_begin(self, logs=None):
        self._new_bar()

    def on_predict_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self.verbose:
            self.progbar.update(self._seen, finalize=False)

    def on_predict_end(self, logs=None):
        if self.verbose:
            if self.progbar.target is None:
                self.progbar.target = self._seen
            self.progbar.update(self._seen, finalize=True)


class _AllNames:
    def __contains__(self, name):
        return True


def _monitor_op(mode, monitor):
    if mode not in ("auto", "min", "max"):
        _logger.warning("mode %s is unknown, fallback to auto mode.", mode)
        mode = "auto"
    if mode == "auto":
        mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure")
                         or "auc" in monitor) else "min"
    return mode


class EarlyStopping(Callback):
    """Stop training when `monitor` has stopped improving for `patience`
    epochs (improving = by more than min_delta, in the direction of
    `mode`), optionally restoring the best epoch's weights."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0,
                 verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.patience = int(patience)
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.mode = _monitor_op(mode, monitor)
        if self.mode == "min":
            self.min_delta *= -1
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def _improved(self, current, reference):
        if reference is None:
            return True
        if self.mode == "max":
            return current - self.min_delta > reference
        return current - self.min_delta < reference

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            _logger.warning(
                "Early stopping conditioned on metric `%s` which is not "
                "available. Available metrics are: %s", self.monitor,
                ",".join(logs or {}))
            return
        if epoch < self.start_from_epoch:
            return
        current = float(current)
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improved(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved(current,
                                                       self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print("Restoring model weights from the end of the best "
                          f"epoch: {self.best_epoch + 1}.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Save the model's weights after each epoch (or only when `monitor`
    improves, with save_best_only) to filepath, which may hold format
    fields: 'ckpt-{epoch:02d}-{val_loss:.2f}.weights'.

    tfmini saves weights only (the format of model.save_weights); with
    save_weights_only=False the file is the same, since saving whole
    models is not implemented here yet."""

    def __init__(self, filepath, monitor="val_loss", verbose=0,
                 save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {save_freq!r}")
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self.mode = _monitor_op(mode, monitor)
        self.best = initial_value_threshold
        self._batches = 0
        self._epoch = 0

    def _path(self, epoch, logs):
        try:
            return self.filepath.format(epoch=epoch + 1, **(logs or {}))
        except KeyError as e:
            raise KeyError(f"Failed to format this callback filepath: "
                           f"{self.filepath!r}. Reason: {e}") from None

    def _save(self, epoch, logs):
        logs = {k: float(v) for k, v in (logs or {}).items()}
        path = self._path(epoch, logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                _logger.warning("Can save best model only with %s "
                                "available, skipping.", self.monitor)
                return
            better = (self.best is None or
                      (current > self.best if self.mode == "max"
                       else current < self.best))
            if not better:
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not "
                          f"improve from {self.best:.5f}")
                return
            if self.verbose > 0:
                # Keras 3 prints the unset best as None.
                prev = "None" if self.best is None else f"{self.best:.5f}"
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from "
                      f"{prev} to {current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        self.model.save_weights(path, overwrite=True)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: finished saving model to {path}")

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if isinstance(self.save_freq, int):
            self._batches += 1
            if self._batches % self.save_freq == 0:
                self._save(self._epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, logs)


class LearningRateScheduler(Callback):
    """At each epoch's start set the optimizer's learning rate to
    schedule(epoch, lr) (or schedule(epoch) for one-argument functions);
    logs['learning_rate'] records it."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        opt = self.model.optimizer
        lr = float(np.asarray(opt.learning_rate))
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = float(np.asarray(new))
        if not math.isfinite(new):
            raise ValueError(f'The output of the "schedule" function should '
                             f'be a finite float. Got: {new}')
        opt.learning_rate = new
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting "
                  f"learning rate to {new}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(
                np.asarray(self.model.optimizer.learning_rate))


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` once `monitor` has not
    improved for `patience` epochs."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10,
                 verbose=0, mode="auto", min_delta=1e-4, cooldown=0,
                 min_lr=0.0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor "
                             f">= 1.0. Received factor={factor}")
        self.monitor, self.factor, self.patience = monitor, factor, patience
        self.verbose, self.min_delta = verbose, min_delta
        self.cooldown, self.min_lr = cooldown, min_lr
        self.mode = _monitor_op(mode, monitor)
        self.best, self.wait, self.cooldown_counter = None, 0, 0

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            return
        current = float(current)
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        better = self.best is None or (
            current > self.best + self.min_delta if self.mode == "max"
            else current < self.best - self.min_delta)
        if better:
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                opt = self.model.optimizer
                old = float(np.asarray(opt.learning_rate))
                if old > self.min_lr:
                    new = max(old * self.factor, self.min_lr)
                    opt.learning_rate = new
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau "
                              f"reducing learning rate to {new}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
        if logs is not None:
            logs["learning_rate"] = float(
                np.asarray(self.model.optimizer.learning_rate))


class TerminateOnNaN(Callback):
    """Stop training when the loss becomes NaN or infinite."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: LambdaCallback(on_epoch_end=fn, ...)."""

    def __init__(self, **hooks):
        super().__init__()
        for name, fn in hooks.items():
            if name not in _HOOKS + ("on_batch_begin", "on_batch_end"):
                raise ValueError(f"Unknown hook for LambdaCallback: {name}")
            setattr(self, name, fn)



class TensorBoard(Callback):
    """Write logs for TensorBoard, as Keras 3's callback lays them out:
    `log_dir/train` and `log_dir/validation` runs; per epoch the
    'epoch_<metric>' scalars (with 'epoch_learning_rate' in train), per
    batch 'batch_<metric>' scalars when update_freq is 'batch' or an int
    N (every N batches), weight histograms '<weight path>/histogram'
    every histogram_freq epochs (and images with write_images), and the
    traced train step's graph when write_graph. Needs the tensorboard and
    protobuf packages. Weights are named by their path ('dense/kernel'),
    so layers' weights of the same name do not share a tag."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True,
                 write_images=False, write_steps_per_second=False,
                 update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None):
        super().__init__()
        from ..summary import _deps
        _deps.require("keras.callbacks.TensorBoard")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = int(histogram_freq)
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (isinstance(update_freq, bool) or
                                       not isinstance(update_freq, int) or
                                       update_freq < 1):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', "
                             f"'batch' or a positive int, got "
                             f"{update_freq!r}")
        self.update_freq = update_freq
        if profile_batch or embeddings_freq:
            _logger.warning("TensorBoard: tfmini has no profiler and does "
                            "not write embeddings; profile_batch and "
                            "embeddings_freq are ignored")
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")
        self._writers = {}
        self._prev_summary_state = []
        self._global_train_batch = 0
        self._global_test_batch = 0
        self._should_write_train_graph = False

    def set_model(self, model):
        self.model = model
        self._close_writers()
        self._should_write_train_graph = bool(self.write_graph)

    @property
    def _train_writer(self):
        if "train" not in self._writers:
            from .. import summary
            self._writers["train"] = summary.create_file_writer(
                self._train_dir)
        return self._writers["train"]

    @property
    def _val_writer(self):
        if "val" not in self._writers:
            from .. import summary
            self._writers["val"] = summary.create_file_writer(self._val_dir)
        return self._writers["val"]

    def _push_writer(self, writer, counter):
        """Make `writer` the default for the model's own batch-level
        summaries, recording every update_freq batches of `counter`."""
        if self.update_freq == "epoch":
            return
        from .. import summary

        def should_record():
            return getattr(self, counter) % self.update_freq == 0
        contexts = (writer.as_default(), summary.record_if(should_record))
        for c in contexts:
            c.__enter__()
        self._prev_summary_state.append(contexts)

    def _pop_writer(self):
        if self.update_freq == "epoch" or not self._prev_summary_state:
            return
        contexts = self._prev_summary_state.pop()
        for c in reversed(contexts):
            c.__exit__(None, None, None)

    @contextlib.contextmanager
    def _writing(self, writer):
        """`writer` as the default, recording whatever record_if the
        batch-level push set (it filters the model's own summaries)."""
        from .. import summary
        with writer.as_default(), summary.record_if(True):
            yield

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        self._push_writer(self._train_writer, "_global_train_batch")

    def on_train_end(self, logs=None):
        self._pop_writer()
        self._close_writers()

    def on_test_begin(self, logs=None):
        self._push_writer(self._val_writer, "_global_test_batch")

    def on_test_end(self, logs=None):
        from .. import summary
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and hasattr(optimizer, "iterations"):
            with self._writing(self._val_writer):
                for name, value in (logs or {}).items():
                    summary.scalar(f"evaluation_{name}_vs_iterations",
                                   value, step=optimizer.iterations)
        self._pop_writer()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch, logs=None):
        from .. import summary
        if self._should_write_train_graph:
            self._write_train_graph()
            self._should_write_train_graph = False
        if self.update_freq == "epoch":
            return
        if self._global_train_batch % self.update_freq:
            return
        with self._writing(self._train_writer):
            if self.write_steps_per_second:
                elapsed = max(time.time() - self._batch_start_time, 1e-9)
                summary.scalar("batch_steps_per_second", 1.0 / elapsed,
                               step=self._global_train_batch)
            if isinstance(logs, dict):
                for name, value in logs.items():
                    summary.scalar("batch_" + name, value,
                                   step=self._global_train_batch)

    def on_test_batch_begin(self, batch, logs=None):
        self._global_test_batch += 1

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._epoch_start_time = time.time()
            self._epoch_start_iterations = self._global_train_batch

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def _write_train_graph(self):
        """The graph of the traced train step (none when it runs
        eagerly)."""
        from .. import summary
        functions = getattr(self.model, "_keras_functions", {})
        traces = [t for key, fn in functions.items() if key[0] == "train"
                  for t in getattr(fn, "_traces", ())]
        if traces:
            with self._writing(self._train_writer):
                summary.graph(traces[-1].graph)

    def _log_epoch_metrics(self, epoch, logs):
        from .. import summary
        if not logs:
            return
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        optimizer = getattr(self.model, "optimizer", None)
        try:
            train["learning_rate"] = float(optimizer.learning_rate)
        except (AttributeError, TypeError, ValueError):
            pass
        if self.write_steps_per_second:
            steps = self._global_train_batch - self._epoch_start_iterations
            train["steps_per_second"] = steps / max(
                time.time() - self._epoch_start_time, 1e-9)
        for writer, values in ((self._train_writer, train),
                               (self._val_writer if val else None, val)):
            if writer is None:
                continue
            with self._writing(writer):
                for name, value in values.items():
                    summary.scalar("epoch_" + name, value, step=epoch)

    def _log_weights(self, epoch):
        from .. import summary
        with self._writing(self._train_writer):
            for layer in self.model.layers:
                for weight in layer.weights:
                    name = getattr(weight, "path", None) or weight.name
                    name = name.replace(":", "_")
                    summary.histogram(f"{name}/histogram", weight,
                                      step=epoch)
                    if self.write_images:
                        self._log_weight_as_image(weight, f"{name}/image",
                                                  epoch)

    def _log_weight_as_image(self, weight, name, epoch):
        """Biases as a 1-pixel-wide column, Dense kernels as one image
        (wider than high), conv kernels one image per output channel;
        other shapes are skipped. Values are shown as floats in [0, 1]
        (clipped), as Keras does."""
        from .. import summary
        w = np.squeeze(np.asarray(weight.numpy()))
        if w.ndim == 1:
            w = w.reshape(1, -1, 1, 1)
        elif w.ndim == 2:
            if w.shape[0] > w.shape[1]:
                w = w.T
            w = w.reshape(1, w.shape[0], w.shape[1], 1)
        elif w.ndim == 3:
            w = np.transpose(w, (2, 0, 1))[..., None]
        else:
            return
        summary.image(name, w, step=epoch)


class BackupAndRestore(Callback):
    """Back up the model's and optimizer's state to backup_dir at the end
    of each epoch (save_freq="epoch") or every save_freq batches (an int);
    a fit that finds a backup there restores it and goes on from where it
    was taken: the epoch after it, or mid-epoch the batch after it
    (tf.keras.callbacks.BackupAndRestore: a job killed mid-training
    resumes instead of starting over). Under a multi-worker strategy only
    the chief writes; every worker restores the same backup. With
    delete_checkpoint the backup goes when training ends normally.

    Note [Mid-epoch resume]: a batch backup records (epoch, batch); the
    resumed fit runs that epoch again from batch + 1, reading and dropping
    the batches before it, so with the same data order (shuffle=False, or
    a deterministic dataset) its weights end as an uninterrupted run's.
    The epoch's metrics then count only the batches run after the resume.
    With an int save_freq the epoch end is backed up too, so that a job
    stopped between an epoch's last batch and the next epoch resumes at
    the next epoch."""

    _STATE = "training_state.json"

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True,
                 save_before_preemption=False):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_freq != "epoch" and not (
                isinstance(save_freq, int) and
                not isinstance(save_freq, bool) and save_freq > 0):
            raise ValueError(f"Invalid value for argument `save_freq`. "
                             f"Expected 'epoch' or a positive integer, got "
                             f"{save_freq!r}")
        if save_before_preemption:
            raise NotImplementedError("BackupAndRestore(save_before_"
                                      "preemption=True) is not supported")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self._ckpt = None
        self._since_save = 0

    def _checkpoint(self):
        import tfmini as tf
        if self._ckpt is None:
            self._ckpt = tf.train.Checkpoint(model=self.model,
                                             optimizer=self.model.optimizer)
        return self._ckpt

    def _is_writer(self):
        s = getattr(self.model, "_distribute_strategy", None)
        return s is None or s.extended.should_checkpoint

    def on_train_begin(self, logs=None):
        import json
        self._since_save = 0
        state = os.path.join(self.backup_dir, self._STATE)
        if not os.path.exists(state):
            return
        with open(state) as f:
            saved = json.load(f)
        opt = self.model.optimizer
        if self.model.built and opt is not None and \
                hasattr(opt, "build"):
            # Slots made now take their saved values at once.
            opt.build(self.model.trainable_variables)
        self._checkpoint().read(os.path.join(self.backup_dir, "ckpt"))
        if "batch" in saved:       # Note [Mid-epoch resume]
            self.model._keras_resume_epoch = int(saved["epoch"])
            self.model._keras_resume_step = int(saved["batch"]) + 1
        else:
            self.model._keras_resume_epoch = int(saved["epoch"]) + 1
            self.model._keras_resume_step = 0

    def _save(self, state):
        if not self._is_writer():
            return
        import json
        from tfmini import _C
        self._checkpoint().write(os.path.join(self.backup_dir, "ckpt"))
        # Written after the checkpoint: a backup is complete once it says
        # where it was taken.
        _C.write_file_atomic(os.path.join(self.backup_dir, self._STATE),
                             json.dumps(state).encode(), "BackupAndRestore")

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        self._since_save += 1
        if self._since_save >= self.save_freq:
            self._since_save = 0
            self._save({"epoch": self._epoch, "batch": int(batch)})

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = int(epoch)

    def on_epoch_end(self, epoch, logs=None):
        self._since_save = 0
        self._save({"epoch": int(epoch)})

    def on_train_end(self, logs=None):
        self.model._keras_resume_epoch = None
        self.model._keras_resume_step = None
        # Not reached when training fails: the backup stays for the rerun.
        if self.delete_checkpoint and self._is_writer():
            import shutil
            shutil.rmtree(self.backup_dir, ignore_errors=True)
