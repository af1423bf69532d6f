"""The custom training loop that test_distribute.py runs under
MirroredStrategy and test_distribute_mpi.py under mpirun (its scripts
find this module on PYTHONPATH), so that both train the same way and
their results can be compared."""
import tfmini as tf


def train(s, model, opt, x, y, traced):
    """Three epochs over (x, y) in global batches of 16 under strategy
    s: squared error per example, averaged over the global batch, and
    opt's update; the step in a tf.function when traced. Returns each
    step's loss, summed over the replicas."""
    def step(xb, yb):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_sum((model(xb, training=True) - yb) ** 2,
                                        axis=1)
            loss = tf.nn.compute_average_loss(per_example,
                                              global_batch_size=16)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def dist_step(batch):
        return s.reduce("SUM", s.run(step, args=batch), axis=None)
    if traced:
        dist_step = tf.function(dist_step)
    ds = s.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(16))
    return [float(dist_step(b)) for _ in range(3) for b in ds]
