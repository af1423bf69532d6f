"""tf.distribute: strategies that run a training step on several replicas
in one process (MirroredStrategy over logical CPU devices, replicas in
threads; see Note [Replica threads] in replica.py and Note [Shared
variables] in strategy.py) and MultiWorkerMirroredStrategy over MPI (one
process per worker, Note [Workers are replicas] in multi_worker.py)."""
from ..variables import VariableAggregation, VariableSynchronization  # noqa
from .replica import ReplicaContext
from .multi_worker import MultiWorkerMirroredStrategy  # noqa: F401
from .cross_device_ops import (CrossDeviceOps,  # noqa: F401
                               HierarchicalCopyAllReduce, NcclAllReduce,
                               ReductionToOneDevice)
from .strategy import (MirroredStrategy,  # noqa: F401
                       OneDeviceStrategy, Strategy, StrategyExtended,
                       get_cross_replica_context, get_replica_context,
                       get_strategy, has_strategy, in_cross_replica_context)
from .values import InputContext, InputOptions, PerReplica, ReduceOp  # noqa
from . import cluster_resolver, experimental  # noqa: F401

__all__ = ["MirroredStrategy", "MultiWorkerMirroredStrategy",
           "OneDeviceStrategy", "Strategy", "StrategyExtended",
           "ReplicaContext", "InputContext", "InputOptions", "ReduceOp",
           "get_strategy", "has_strategy", "get_replica_context",
           "in_cross_replica_context", "get_cross_replica_context",
           "experimental", "cluster_resolver", "CrossDeviceOps",
           "HierarchicalCopyAllReduce", "NcclAllReduce",
           "ReductionToOneDevice"]
