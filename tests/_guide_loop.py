"""TF's guide "Custom training with tf.distribute.Strategy", once: run in
process by test_distribute.py and under mpirun by test_distribute_mpi.py
(its scripts find this module on PYTHONPATH); only the strategy
differs."""
import os

import numpy as np

import tfmini as tf


def guide_data():
    rng = np.random.default_rng(3)
    train_images = rng.normal(size=(48, 8, 8, 1)).astype(np.float32)
    train_labels = rng.integers(0, 3, size=(48,)).astype(np.int64)
    return train_images, train_labels


def run_guide(strategy, ckpt_dir, on_epoch=None, epochs=3):
    """The guide's loop; on_epoch(metrics) sees each epoch's metrics
    before they are reset. Returns the losses, the model, the optimizer
    and the traced train step."""
    train_images, train_labels = guide_data()
    test_images, test_labels = train_images[:16], train_labels[:16]
    BUFFER_SIZE = len(train_images)
    BATCH_SIZE_PER_REPLICA = 8
    GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * \
        strategy.num_replicas_in_sync
    train_dataset = tf.data.Dataset.from_tensor_slices(
        (train_images, train_labels)).shuffle(BUFFER_SIZE).batch(
            GLOBAL_BATCH_SIZE)
    test_dataset = tf.data.Dataset.from_tensor_slices(
        (test_images, test_labels)).batch(GLOBAL_BATCH_SIZE)
    train_dist_dataset = strategy.experimental_distribute_dataset(
        train_dataset)
    test_dist_dataset = strategy.experimental_distribute_dataset(
        test_dataset)

    def create_model():
        regularizer = tf.keras.regularizers.L2(1e-5)
        return tf.keras.Sequential([
            tf.keras.layers.Conv2D(4, 3, activation='relu',
                                   kernel_regularizer=regularizer),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(8, activation='relu',
                                  kernel_regularizer=regularizer),
            tf.keras.layers.Dense(3, kernel_regularizer=regularizer)])

    checkpoint_prefix = os.path.join(str(ckpt_dir), "ckpt")
    with strategy.scope():
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

        def compute_loss(labels, predictions, model_losses):
            per_example_loss = loss_object(labels, predictions)
            loss = tf.nn.compute_average_loss(per_example_loss)
            if model_losses:
                loss += tf.nn.scale_regularization_loss(
                    tf.add_n(model_losses))
            return loss
        test_loss = tf.keras.metrics.Mean(name='test_loss')
        train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
            name='train_accuracy')
        test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(
            name='test_accuracy')
    with strategy.scope():
        model = create_model()
        optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
        checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)

    def train_step(inputs):
        images, labels = inputs
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = compute_loss(labels, predictions, model.losses)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_accuracy.update_state(labels, predictions)
        return loss

    def test_step(inputs):
        images, labels = inputs
        predictions = model(images, training=False)
        t_loss = loss_object(labels, predictions)
        test_loss.update_state(t_loss)
        test_accuracy.update_state(labels, predictions)

    @tf.function
    def distributed_train_step(dataset_inputs):
        per_replica_losses = strategy.run(train_step,
                                          args=(dataset_inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM,
                               per_replica_losses, axis=None)

    @tf.function
    def distributed_test_step(dataset_inputs):
        return strategy.run(test_step, args=(dataset_inputs,))

    losses = []
    for epoch in range(epochs):
        total_loss = 0.0
        num_batches = 0
        for x in train_dist_dataset:
            total_loss += distributed_train_step(x)
            num_batches += 1
        train_loss = total_loss / num_batches
        for x in test_dist_dataset:
            distributed_test_step(x)
        if epoch % 2 == 0:
            checkpoint.save(checkpoint_prefix)
        losses.append(float(train_loss))
        if on_epoch is not None:
            on_epoch(train_accuracy=train_accuracy, test_loss=test_loss,
                     test_accuracy=test_accuracy)
        test_loss.reset_state()
        train_accuracy.reset_state()
        test_accuracy.reset_state()
    return losses, model, optimizer, distributed_train_step
