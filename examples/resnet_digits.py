"""A small ResNet on the handwritten digits that ship with scikit-learn
(tf.keras.datasets.digits: 1,797 8x8 images, no download), upsampled to
16x16: a stem convolution, two residual stages (the second halves the
resolution, with a 1x1 projection on its shortcut), global average
pooling and a softmax.

    python3 examples/resnet_digits.py [--eager]

Reaches >= 95% test accuracy in 15 epochs, in under a minute on two
cores, eagerly (run_eagerly=True) and traced (the default).

On a machine shared with other jobs, run it with OMP_NUM_THREADS=1:
with every core's team, each join waits for threads the other jobs
have descheduled (the Transformer example at load 3.5 on 2 cores: 84 s
with both threads, 5 s with one)."""
import tfmini as tf

import _train

keras = tf.keras
L = keras.layers
TARGET = 0.95


def residual(x, filters, stride=1):
    shortcut = x
    y = L.Conv2D(filters, 3, strides=stride, padding="same")(x)
    y = L.ReLU()(L.BatchNormalization()(y))
    y = L.Conv2D(filters, 3, padding="same")(y)
    y = L.BatchNormalization()(y)
    if stride != 1 or x.shape[-1] != filters:
        shortcut = L.Conv2D(filters, 1, strides=stride)(x)
    return L.ReLU()(L.Add()([y, shortcut]))


def build_model():
    inp = keras.Input((8, 8, 1))
    x = L.UpSampling2D(2)(inp)
    x = L.ReLU()(L.Conv2D(16, 3, padding="same")(x))
    x = residual(x, 16)
    x = residual(x, 32, stride=2)
    x = L.GlobalAveragePooling2D()(x)
    return keras.Model(inp, L.Dense(10)(x))


def train(eager=False, epochs=15, seed=0, verbose=0):
    """(test accuracy, seconds) of one training run."""
    keras.utils.set_random_seed(seed)
    (x, y), (xt, yt) = keras.datasets.digits.load_data()
    x, xt = x[..., None], xt[..., None]
    return _train.fit_and_score(build_model(), (x, y), (xt, yt), 3e-3,
                                32, epochs, eager, verbose)


if __name__ == "__main__":
    _train.main(__doc__, train, 15, TARGET)
