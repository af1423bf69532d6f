"""tf.errors: TF's exception classes, registered with the C core."""
from . import _C


class OpError(Exception):
    """A failed op: the base of TF's runtime errors."""

    def __init__(self, node_def=None, op=None, message=None, *args):
        if message is None and op is None and node_def is not None:
            message, node_def = node_def, None   # OpError("message")
        super().__init__(message)
        self.message = message
        self.node_def = node_def
        self.op = op


class InvalidArgumentError(OpError, ValueError):
    """Bad shapes, dtypes or values given to an op. Also a ValueError, so
    code written against either TF's eager or graph errors catches it."""


class ResourceExhaustedError(OpError, MemoryError):
    pass


class OutOfRangeError(OpError):
    pass


class UnimplementedError(OpError):
    pass


class InternalError(OpError):
    pass


class NotFoundError(OpError):
    pass


class FailedPreconditionError(OpError):
    pass


class UnknownError(OpError):
    pass


class DataLossError(OpError):
    """A file's contents are corrupt (a saved model that fails its
    checks)."""


class DeadlineExceededError(OpError):
    """An operation (e.g. a collective with a timeout) did not finish in
    time."""


class UnavailableError(OpError):
    """A peer of a collective is gone (a worker exited)."""


class AlreadyExistsError(OpError):
    """What was to be created exists already (a second profiler)."""


class OperatorNotAllowedInGraphError(TypeError):
    """A symbolic tensor used where a Python value is needed."""


for _code, _cls in [("INVALID_ARGUMENT", InvalidArgumentError),
                    ("RESOURCE_EXHAUSTED", ResourceExhaustedError),
                    ("OUT_OF_RANGE", OutOfRangeError),
                    ("UNIMPLEMENTED", UnimplementedError),
                    ("INTERNAL", InternalError),
                    ("NOT_FOUND", NotFoundError),
                    ("DATA_LOSS", DataLossError)]:
    _C._register_error(_code, _cls)
