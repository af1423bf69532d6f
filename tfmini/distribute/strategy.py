"""The strategies: default, OneDevice, Mirrored (replicas in threads over
logical CPU devices, Note [Replica threads]) and MultiWorkerMirrored.

Note [Shared variables]: every logical CPU device of one process is the
same memory, so a variable created under a strategy's scope is one
tf.Variable that all replicas read: nothing to mirror and keep equal.
What TF's users see of mirroring holds: experimental_local_results(v)
gives one value per replica, an optimizer applies the replicas' summed
gradients once per step (apply_gradients in replica context all-reduces
and applies in a merge_call), assign in replica context combines the
replicas' values by the variable's aggregation, and a checkpoint holds
plain variables, so it restores with or without a strategy."""
import contextlib

from .. import _C
from .replica import (ReplicaContext, _reduce_op, _state, current_replica,
                      in_cross_replica, run_replicas)
from .values import (DistributedDataset, DistributedDatasetsFromFunction,
                     InputContext, PerReplica, ReduceOp, _concat, _regroup)

_CPU_PREFIX = "/job:localhost/replica:0/task:0/device:CPU:"
_GPU_PREFIX = "/job:localhost/replica:0/task:0/device:GPU:"


class StrategyExtended:
    """strategy.extended: the devices behind the replicas."""

    def __init__(self, strategy, devices):
        self._strategy = strategy
        self._devices = tuple(devices)

    @property
    def worker_devices(self):
        return self._devices

    @property
    def parameter_devices(self):
        return getattr(self, "_parameter_devices", self._devices)

    def variable_created_in_scope(self, v):
        return True

    # The cross-replica pattern of TF's docs: in a merge_fn, reduce the
    # replicas' updates to the variable, then update it.
    def reduce_to(self, reduce_op, value, destinations, options=None):
        return self._strategy.reduce(reduce_op, value, axis=None)

    def batch_reduce_to(self, reduce_op, value_destination_pairs,
                        options=None):
        return [self.reduce_to(reduce_op, v, d)
                for v, d in value_destination_pairs]

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """fn(var, *args, **kwargs), once: the variable is shared (Note
        [Shared variables]); a PerReplica argument gives its first
        component (its replicas' values are equal after reduce_to)."""
        from .values import _select
        return fn(var, *_select(tuple(args), 0),
                  **_select(dict(kwargs or {}), 0))

    def value_container(self, value):
        return value

    @property
    def experimental_require_static_shapes(self):
        return False

    @property
    def should_checkpoint(self):
        return True

    @property
    def should_save_summary(self):
        return True


class Strategy:
    """tf.distribute.Strategy: run a step on every replica and combine
    the results."""

    def __init__(self, devices):
        self._extended = StrategyExtended(self, devices)

    @property
    def extended(self):
        return self._extended

    @property
    def num_replicas_in_sync(self):
        return len(self._extended.worker_devices)

    @contextlib.contextmanager
    def _scope(self):
        st = _state()
        if st.scopes and st.scopes[-1] is not self and \
                not isinstance(st.scopes[-1], _DefaultStrategy):
            raise ValueError("Mixing different tf.distribute.Strategy "
                             "objects: the scope of another strategy is "
                             "already entered")
        st.scopes.append(self)
        try:
            yield self
        finally:
            st.scopes.pop()

    def scope(self):
        """Variables (and Keras models, optimizers, metrics) created in
        this block belong to this strategy."""
        return self._scope()

    # ---- running ------------------------------------------------------
    def run(self, fn, args=(), kwargs=None, options=None):
        """fn(*args, **kwargs) on every replica; PerReplica arguments give
        each replica its component. Values that differ between replicas
        come back as PerReplica."""
        _check_run_call(args)
        _check_replica_counts((args, kwargs), self.num_replicas_in_sync)
        with self.scope():
            return run_replicas(self, fn, tuple(args), dict(kwargs or {}))

    def reduce(self, reduce_op, value, axis):
        """The replicas' values combined into one tensor: with axis, each
        replica's value is first reduced along that axis (a MEAN is then
        over every element of all replicas)."""
        import tfmini as tf
        reduce_op = _reduce_op(reduce_op)
        if not isinstance(value, PerReplica):
            if reduce_op == ReduceOp.MEAN or self.num_replicas_in_sync == 1:
                values = [value]
            else:
                raise ValueError(
                    f"A non-DistributedValues value {value!r} cannot be "
                    f"reduced with the given reduce_op {reduce_op}")
        else:
            values = list(value)
        values = [tf.convert_to_tensor(v) for v in values]
        if axis is None:
            total = values[0]
            for v in values[1:]:
                total = total + v
            if reduce_op == ReduceOp.MEAN:
                total = total / tf.cast(len(values), total.dtype)
            return total
        sums = [tf.reduce_sum(v, axis=axis) for v in values]
        total = sums[0]
        for s in sums[1:]:
            total = total + s
        if reduce_op == ReduceOp.MEAN:
            count = sum(tf.cast(tf.shape(v)[axis], total.dtype)
                        for v in values)
            total = total / count
        return total

    def experimental_local_results(self, value):
        """The per-replica parts of value: a PerReplica's components; a
        variable once per replica (one shared variable, Note [Shared
        variables]); any other value as a 1-tuple."""
        from ..variables import Variable
        if isinstance(value, PerReplica):
            return tuple(value)
        if isinstance(value, Variable):
            return (value,) * self.num_replicas_in_sync
        return (value,)

    def gather(self, value, axis):
        """The replicas' values concatenated along axis."""
        if isinstance(value, PerReplica):
            return _concat(list(value), axis)
        return value

    def experimental_distribute_dataset(self, dataset, options=None):
        return DistributedDataset(self, dataset)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        return DistributedDatasetsFromFunction(self, dataset_fn)

    experimental_distribute_datasets_from_function = \
        distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn):
        from .values import _ValueContext
        n = self.num_replicas_in_sync
        return _regroup([value_fn(_ValueContext(i, n)) for i in range(n)])


def _check_run_call(args):
    """strategy.run's own checks, shared by every strategy's run."""
    r = current_replica()
    if r is not None and r._group is not None:
        raise RuntimeError("strategy.run cannot be called inside "
                           "strategy.run (a replica context)")
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"strategy.run: `args` must be a list or "
                         f"tuple of arguments, got "
                         f"{type(args).__name__} (write args=(x,))")


def _check_replica_counts(x, n):
    if isinstance(x, PerReplica):
        if len(x) != n:
            raise ValueError(f"strategy.run: a PerReplica value has "
                             f"{len(x)} components but the strategy has "
                             f"{n} replicas")
    elif isinstance(x, (list, tuple)):
        for v in x:
            _check_replica_counts(v, n)
    elif isinstance(x, dict):
        for v in x.values():
            _check_replica_counts(v, n)


class _DefaultStrategy(Strategy):
    """What tf.distribute.get_strategy() gives outside every scope: one
    replica, the calling thread, no copies."""

    def __init__(self):
        super().__init__(["/job:localhost/replica:0/task:0/device:CPU:0"])

    def scope(self):
        return contextlib.nullcontext(self)

    def run(self, fn, args=(), kwargs=None, options=None):
        with ReplicaContext(self, 0):
            return fn(*args, **(kwargs or {}))

    def reduce(self, reduce_op, value, axis):
        """As TF's default strategy: with one replica and no axis there
        is nothing to combine, so value comes back as given (a Python
        number stays one)."""
        if axis is None and not isinstance(value, PerReplica):
            _reduce_op(reduce_op)
            return value
        return Strategy.reduce(self, reduce_op, value, axis)


_default = _DefaultStrategy()
_default_replica = ReplicaContext(_default, 0)


def _canonical_cpu(spec):
    """'/cpu:1', 'CPU:1', '/device:CPU:1', ... -> TF's full name of a
    logical CPU device, checked against tf.config's logical devices; a
    tf.config.LogicalDevice by its name."""
    from .. import config
    s = spec.name if isinstance(spec, config.LogicalDevice) else str(spec)
    tail = s.upper().rsplit("/", 1)[-1]
    if tail.startswith("DEVICE:"):
        tail = tail[len("DEVICE:"):]
    kind, _, num = tail.partition(":")
    if kind == "GPU":
        count = config._gpu_count()
        try:
            n = int(num) if num else 0
        except ValueError:
            raise ValueError(f"Unknown device specification "
                             f"{spec!r}") from None
        # Without any GPU, TF takes GPU names and its replicas run on
        # the CPU (soft placement, as tfmini's device scopes do): the
        # distributed training guide's MirroredStrategy(["/gpu:0",
        # "/gpu:1"]) runs there. With GPUs, a missing one is an error.
        if count and not 0 <= n < count:
            raise ValueError(f"Device {spec!r}: there are {count} GPUs")
        return _GPU_PREFIX + str(n)
    if kind != "CPU":
        raise ValueError(f"Unknown device {spec!r} for a strategy")
    try:
        n = int(num) if num else 0
    except ValueError:
        raise ValueError(f"Unknown device specification {spec!r}") from None
    count = config._logical_cpu_count()
    if not 0 <= n < count:
        raise ValueError(
            f"Device {spec!r} is not a logical CPU device: there are "
            f"{count} (split the CPU with tf.config."
            f"set_logical_device_configuration)")
    return _CPU_PREFIX + str(n)


class MirroredStrategy(Strategy):
    """Synchronous training on the devices of one machine: one replica
    per device, each in its own thread (Note [Replica threads]). As in
    TF, without `devices` (None or empty) it takes every GPU, else every
    logical CPU (one unless the CPU was split with
    tf.config.set_logical_device_configuration); or name them:
    MirroredStrategy(["/cpu:0", "/cpu:1"]). Over GPUs each replica runs
    under its GPU, and their values all-reduce with NCCL when tfmini was
    built with it (nccl.py)."""

    def __init__(self, devices=None, cross_device_ops=None):
        from .. import config
        if isinstance(devices, str):
            devices = [devices]
        if not devices:
            # TF's all_local_devices(): an empty list means "all" too, as
            # the GPU guide's MirroredStrategy(list_logical_devices('GPU'))
            # relies on where there is no GPU.
            n = config._gpu_count()
            cpus = config._logical_cpu_count()
            devices = ([f"/gpu:{i}" for i in range(n)] if n else
                       [f"/cpu:{i}" for i in range(cpus)])
        devices = [_canonical_cpu(d) for d in devices]
        if len(set(devices)) != len(devices):
            raise ValueError(f"Duplicated devices in {devices}")
        from .cross_device_ops import CrossDeviceOps
        if cross_device_ops is not None and \
                not isinstance(cross_device_ops, CrossDeviceOps):
            raise ValueError(f"cross_device_ops must be a "
                             f"tf.distribute.CrossDeviceOps, got "
                             f"{cross_device_ops!r}")
        super().__init__(devices)
        self._extended._cross_device_ops = cross_device_ops


class CentralStorageStrategy(Strategy):
    """tf.distribute.experimental.CentralStorageStrategy: replicas on the
    compute devices (every GPU, else the CPU), each variable once, on the
    parameter device (the one compute device, else the CPU). tfmini's
    variables are single anyway (Note [Shared variables]); what differs
    from MirroredStrategy is the default devices."""

    def __init__(self, compute_devices=None, parameter_device=None):
        from .. import config
        if not compute_devices:
            n = config._gpu_count()
            compute_devices = [f"/gpu:{i}" for i in range(n)] or ["/cpu:0"]
        devices = [_canonical_cpu(d) for d in compute_devices]
        if len(set(devices)) != len(devices):
            raise ValueError(f"Duplicated devices in {devices}")
        super().__init__(devices)
        if parameter_device is None:
            parameter_device = devices[0] if len(devices) == 1 else "/cpu:0"
        self._extended._parameter_devices = (
            _canonical_cpu(parameter_device),)


class OneDeviceStrategy(Strategy):
    """Everything on one device, one replica (tf.distribute.
    OneDeviceStrategy)."""

    def __init__(self, device):
        super().__init__([_canonical_cpu(device)])

    reduce = _DefaultStrategy.reduce


def get_strategy():
    """The strategy of the current scope or replica, else the default."""
    r = current_replica()
    if r is not None:
        return r.strategy
    st = _state()
    if st.scopes:
        return st.scopes[-1]
    return _default


def has_strategy():
    """Whether a non-default strategy is in effect."""
    return get_strategy() is not _default


def get_replica_context():
    """The current ReplicaContext; None in cross-replica context (inside a
    strategy's scope but outside its run, or in a merge_fn)."""
    r = current_replica()
    if r is not None:
        return r
    if in_cross_replica():
        return None
    return _default_replica


def in_cross_replica_context():
    return in_cross_replica()


def get_cross_replica_context():
    if in_cross_replica():
        return get_strategy()
    if current_replica() is None:
        return _default
    return None


__all__ = ["Strategy", "StrategyExtended", "MirroredStrategy",
           "OneDeviceStrategy", "CentralStorageStrategy",
           "get_strategy", "has_strategy", "get_replica_context",
           "in_cross_replica_context", "get_cross_replica_context",
           "InputContext"]
