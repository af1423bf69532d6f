"""tf.nn: gathered from the op families (tfmini/ops/__init__.py)."""
from .ops import namespace as _namespace

globals().update(_namespace("nn"))


def compute_average_loss(per_example_loss, sample_weight=None,
                         global_batch_size=None):
    """The sum of the (weighted) per-example losses over the global batch
    size: summed over replicas, the mean over the whole batch. Without
    global_batch_size it is this replica's batch times the number of
    replicas in sync (tf.nn.compute_average_loss)."""
    import tfmini as tf
    per_example_loss = tf.convert_to_tensor(per_example_loss)
    if per_example_loss.shape.rank == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. "
                         "Expected a tensor with at least rank 1, got "
                         f"shape {per_example_loss.shape}")
    if sample_weight is not None:
        sample_weight = tf.cast(tf.convert_to_tensor(sample_weight),
                                per_example_loss.dtype)
        per_example_loss = per_example_loss * sample_weight
    if global_batch_size is None:
        ctx = tf.distribute.get_replica_context()
        n = 1 if ctx is None else ctx.num_replicas_in_sync
        global_batch_size = tf.shape(per_example_loss)[0] * n
    if isinstance(global_batch_size, (int, float)) and \
            global_batch_size <= 0:
        raise ValueError(f"global_batch_size must be positive, got "
                         f"{global_batch_size}")
    total = tf.reduce_sum(per_example_loss)
    return total / tf.cast(global_batch_size, per_example_loss.dtype)


def scale_regularization_loss(regularization_loss):
    """A regularization loss (or a list of them, summed) divided by the
    number of replicas in sync, so that summed over replicas it counts
    once (tf.nn.scale_regularization_loss)."""
    import tfmini as tf
    if isinstance(regularization_loss, (list, tuple)):
        regularization_loss = tf.add_n(list(regularization_loss))
    ctx = tf.distribute.get_replica_context()
    n = 1 if ctx is None else ctx.num_replicas_in_sync
    regularization_loss = tf.convert_to_tensor(regularization_loss)
    return regularization_loss / tf.cast(n, regularization_loss.dtype)


def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of params at ids (tf.nn.embedding_lookup; ids may be ragged).
    A list of params is a table sharded by TF2's "div" strategy:
    contiguous id ranges in order, so the shards joined are the table.
    max_norm clips each looked-up embedding to that L2 norm."""
    # tf.gather, not the dense op: it dispatches ragged ids.
    from . import gather
    from .ops import array_ops, norm_ops
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("embedding_lookup: params must not be empty")
        params = (params[0] if len(params) == 1
                  else array_ops.concat(list(params), axis=0))
    out = gather(params, ids)
    if max_norm is not None:
        emb_rank = len(params.shape) - 1

        def clip(t):
            rank = len(t.shape)
            return norm_ops.clip_by_norm(
                t, max_norm, axes=list(range(rank - emb_rank, rank)))
        out = (out.with_flat_values(clip(out.flat_values))
               if hasattr(out, "with_flat_values") else clip(out))
    return out
