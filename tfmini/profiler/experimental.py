"""tf.profiler.experimental: tfmini has no profiler, so a profiling
session records nothing. start() and stop() keep TF's rules (one session
at a time, stop only after start) and say, once per session, that
nothing is written: code that brackets a step with them, as TF's guides
do, runs and computes the same numbers. Trace annotations only label
steps for a profiler, so here they are plain context managers."""
import collections
import logging
import threading

from .. import errors

_logger = logging.getLogger("tfmini")
_lock = threading.Lock()
_running = None        # the logdir of the session started, or None


class ProfilerOptions(collections.namedtuple(
        "ProfilerOptions", ["host_tracer_level", "python_tracer_level",
                            "device_tracer_level", "delay_ms"])):
    """TF's tracing levels; nothing here reads them."""

    def __new__(cls, host_tracer_level=2, python_tracer_level=0,
                device_tracer_level=1, delay_ms=None):
        return super().__new__(cls, host_tracer_level, python_tracer_level,
                               device_tracer_level, delay_ms)


def start(logdir, options=None):
    """Begin a profiling session (which records nothing here)."""
    global _running
    if options is not None and not isinstance(options, ProfilerOptions):
        raise TypeError("tf.profiler.experimental.start: options must be "
                        f"a ProfilerOptions, got {type(options).__name__}")
    with _lock:
        if _running is not None:
            raise errors.AlreadyExistsError(
                None, None, "Another profiler is running.")
        _running = str(logdir)
    _logger.warning("tf.profiler.experimental.start: tfmini has no "
                    "profiler; nothing will be written under %s", logdir)


def stop(save=True):
    """End the session start() began."""
    global _running
    with _lock:
        if _running is None:
            raise errors.UnavailableError(
                None, None,
                "Cannot export profiling results. No profiler is running.")
        _running = None


class Profile:
    """`with Profile(logdir):` is start(logdir) ... stop()."""

    def __init__(self, logdir, options=None):
        self._logdir, self._options = logdir, options

    def __enter__(self):
        start(self._logdir, self._options)

    def __exit__(self, *exc):
        stop()


class Trace:
    """A named step annotation (`with Trace("train", step_num=i):`)."""

    def __init__(self, name, **kwargs):
        self.name, self.kwargs = name, kwargs

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
