"""tf.test.experimental."""
from .. import _C


def sync_devices():
    """Wait until every device has finished the work queued on it (GPU
    kernels run asynchronously): call before reading a timer."""
    _C.sync_devices()
