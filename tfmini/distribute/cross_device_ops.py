"""tf.distribute.CrossDeviceOps and the algorithms TF names with it
(ReductionToOneDevice, NcclAllReduce, HierarchicalCopyAllReduce): the
`cross_device_ops=` of a MirroredStrategy.

tfmini's replicas of one process share its memory (Note [Shared
variables] in strategy.py), and values on distinct GPUs meet in NCCL
when tfmini has it (replica.py's _reduce_values), whichever algorithm
is named: every algorithm sums the same numbers, so the choice is kept
(strategy.extended._cross_device_ops) and checked, not acted on. The
objects' own reduce and batch_reduce work as TF's, in cross-replica
context: a PerReplica (or one tensor, one replica's value) combined into
one tensor."""
from .replica import _reduce_op, _reduce_values
from .values import PerReplica


class CrossDeviceOps:
    """Base of the reduction algorithms."""

    def reduce(self, reduce_op, per_replica_value, destinations,
               options=None):
        """per_replica_value's components summed (or averaged) into one
        tensor; destinations (a device, variable or distributed value)
        must not be empty."""
        _check_destinations(destinations)
        values = list(per_replica_value) if isinstance(
            per_replica_value, PerReplica) else [per_replica_value]
        return _reduce_values(_reduce_op(reduce_op), values)

    def batch_reduce(self, reduce_op, value_destination_pairs, options=None):
        if not isinstance(value_destination_pairs, (list, tuple)):
            raise ValueError("`value_destination_pairs` should be a list or "
                             "tuple")
        for pair in value_destination_pairs:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError("Each element of `value_destination_pairs` "
                                 "should be a tuple of size 2.")
        return [self.reduce(reduce_op, v, d, options)
                for v, d in value_destination_pairs]

    def broadcast(self, tensor, destinations):
        """The tensor, readable on every destination (one memory)."""
        import tfmini as tf
        _check_destinations(destinations)
        return tf.convert_to_tensor(tensor)


def _check_destinations(destinations):
    if destinations is None or (isinstance(destinations, (str, tuple, list))
                                and not destinations):
        raise ValueError("destinations can not be empty")


class ReductionToOneDevice(CrossDeviceOps):
    """Values copied to one device (reduce_to_device, default the first
    destination), summed there with accumulation_fn (default tf.add_n),
    and broadcast back."""

    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn

    def reduce(self, reduce_op, per_replica_value, destinations,
               options=None):
        if self.accumulation_fn is None:
            return super().reduce(reduce_op, per_replica_value,
                                  destinations, options)
        import tfmini as tf
        from .values import ReduceOp
        _check_destinations(destinations)
        values = [tf.convert_to_tensor(v) for v in (
            per_replica_value if isinstance(per_replica_value, PerReplica)
            else [per_replica_value])]
        total = self.accumulation_fn(values)
        if _reduce_op(reduce_op) == ReduceOp.MEAN:
            total = total / tf.cast(len(values), total.dtype)
        return total


class _AllReduce(CrossDeviceOps):
    _what = ""

    def __init__(self, num_packs=1):
        if num_packs < 0:
            raise ValueError(f"{self._what} requires num_packs >= 0, but "
                             f"{num_packs} is specified")
        self.num_packs = num_packs


class NcclAllReduce(_AllReduce):
    """NCCL's all-reduce (tfmini's for values on distinct GPUs)."""
    _what = "NCCL all-reduce"


class HierarchicalCopyAllReduce(_AllReduce):
    """TF's reduce-along-a-GPU-hierarchy; here the same sums."""
    _what = "HierarchicalCopy"


__all__ = ["CrossDeviceOps", "ReductionToOneDevice", "NcclAllReduce",
           "HierarchicalCopyAllReduce"]
