"""An LSTM sequence model on a synthetic memory task, generated here (no
download): read 10 random tokens out of 8, then answer with the first
one. The answer is 9 steps back when the last token is read, so the
cell state has to carry it through the distractors.

    python3 examples/lstm_recall.py [--eager]

Reaches >= 95% test accuracy in 10 epochs, in under a minute on two
cores, eagerly (run_eagerly=True) and traced (the default). Chance is
12.5%.

On a machine shared with other jobs, run it with OMP_NUM_THREADS=1:
with every core's team, each join waits for threads the other jobs
have descheduled (the Transformer example at load 3.5 on 2 cores: 84 s
with both threads, 5 s with one)."""
import numpy as np

import tfmini as tf

import _train

keras = tf.keras
L = keras.layers
SEQ, VOCAB = 10, 8
TARGET = 0.95


def make_data(n, seed):
    r = np.random.default_rng(seed)
    x = r.integers(0, VOCAB, (n, SEQ)).astype(np.int32)
    return x, x[:, 0].copy()


def build_model():
    return keras.Sequential([keras.Input((SEQ,), dtype="int32"),
                             L.Embedding(VOCAB, 16), L.LSTM(64),
                             L.Dense(VOCAB)])


def train(eager=False, epochs=10, seed=0, verbose=0):
    """(test accuracy, seconds) of one training run."""
    keras.utils.set_random_seed(seed)
    (x, y), (xt, yt) = make_data(4000, seed), make_data(1000, seed + 1)
    return _train.fit_and_score(build_model(), (x, y), (xt, yt), 1e-2,
                                64, epochs, eager, verbose)


if __name__ == "__main__":
    _train.main(__doc__, train, 10, TARGET)
