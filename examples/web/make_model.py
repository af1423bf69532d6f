"""Train the digits CNN that examples/web/index.html runs in the browser,
and save it where the page fetches it.

    python3 examples/web/make_model.py            # -> examples/web/digits_cnn/
    python3 examples/web/make_model.py --out DIR --epochs 10

The data are scikit-learn's 8x8 digits (tf.keras.datasets.digits: no
network), ink in [0, 1] on a zero background, which is what the page's
canvas is reduced to. The model is an ordinary saved model
(tf.saved_model.save): DIR/digits_cnn/saved_model.tfm is one file, the
whole model, so the browser fetches it as it is; examples/c/predict can
run the same folder."""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def build(epochs=8, seed=0, verbose=0):
    """(model, test accuracy): a small CNN trained on the 8x8 digits."""
    import tfmini as tf
    tf.random.set_seed(seed)
    (x, y), (xt, yt) = tf.keras.datasets.digits.load_data()
    x, xt = x[..., None], xt[..., None]
    model = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)),
        tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, epochs=epochs, batch_size=32, verbose=verbose)
    pred = np.argmax(np.asarray(model(xt)), axis=1)
    return model, float(np.mean(pred == yt))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=HERE,
                   help="folder to save digits_cnn/ in (default: beside "
                        "this script, where the page looks)")
    p.add_argument("--epochs", type=int, default=8)
    a = p.parse_args(argv)
    import tfmini as tf
    model, acc = build(a.epochs, verbose=2)
    path = os.path.join(a.out, "digits_cnn")
    tf.saved_model.save(model, path)
    print(f"test accuracy {acc:.3f}; saved {path}/saved_model.tfm")
    return 0


if __name__ == "__main__":
    sys.exit(main())
