"""Writes to shared state from replica threads: an optimizer's step and
variable assignments (Note [Shared variables] in strategy.py)."""
import threading

from .replica import _in_multi_replica, current_replica
from .values import PerReplica, ReduceOp, _select

_write_lock = threading.Lock()


def in_replica_update():
    """True in a replica thread of a multi-replica strategy."""
    return _in_multi_replica()


def apply_gradients(optimizer, pairs, name, skip_gradients_aggregation):
    """optimizer.apply_gradients called on every replica: the gradients
    are summed over the replicas (unless the caller already did), then
    the optimizer steps once, in a merge_call; as TF, the losses are
    scaled by the global batch size so that the sum is the mean."""
    ctx = current_replica()
    keep = [i for i, (g, _) in enumerate(pairs) if g is not None]
    grads = [pairs[i][0] for i in keep]
    if not skip_gradients_aggregation and grads:
        grads = ctx.all_reduce(ReduceOp.SUM, grads)
    merged = list(pairs)
    for i, g in zip(keep, grads):
        merged[i] = (g, pairs[i][1])

    def step(strategy, per_replica):
        # Every replica holds the same sums; the first one's are applied.
        return optimizer.apply_gradients(_select(per_replica, 0), name=name)
    return ctx.merge_call(step, args=(merged,))


def replica_write(var, value, kind):
    """var.assign*(value) in any thread while replica threads run: True
    when handled here (on a replica of a multi-replica strategy).

    A variable with a SUM, MEAN or ONLY_FIRST_REPLICA aggregation takes
    the replicas' values combined that way, written once (TF's mirrored
    variables). Other variables (aggregation NONE, or ON_READ metric
    state) are written by each replica in turn under a lock, so the
    replicas' assign_adds all count (what TF's sum-on-read variables
    give when read)."""
    if not _in_multi_replica():
        return False
    from ..variables import VariableAggregation, VariableSynchronization
    import tfmini as tf
    agg = var.aggregation
    if agg == VariableAggregation.NONE or \
            var.synchronization == VariableSynchronization.ON_READ:
        with _write_lock:
            var._assign(value, kind)
        return True
    ctx = current_replica()
    value = tf.convert_to_tensor(value, dtype=var.dtype)
    if agg == VariableAggregation.ONLY_FIRST_REPLICA:
        combined = ctx.all_gather(tf.expand_dims(value, 0), axis=0)[0]
    else:
        combined = ctx.all_reduce(
            ReduceOp.from_variable_aggregation(agg), value)

    def write(strategy, v):
        var._assign(v[0] if isinstance(v, PerReplica) else v, kind)
    ctx.merge_call(write, args=(combined,))
    return True
