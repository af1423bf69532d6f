"""tf.distribute.experimental: the names TF keeps there."""
import enum

from .multi_worker import MultiWorkerMirroredStrategy  # noqa: F401
from .strategy import CentralStorageStrategy  # noqa: F401
from .values import _ValueContext as ValueContext  # noqa: F401


class CommunicationImplementation(enum.Enum):
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    """Options for collectives: MultiWorkerMirroredStrategy's MPI
    all-reduce packs gradients into buckets of bytes_per_pack bytes (0:
    4 MiB) and fails a collective after timeout_seconds (None: 1800 s).
    implementation is accepted; the transport is MPI's on CPUs."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be non-negative, got "
                             f"{bytes_per_pack}")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation
