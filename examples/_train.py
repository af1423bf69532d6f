"""What the training examples share: compile, time the fit and score on
held-out data, and the command line. Imported by name, so it works both
as `python3 examples/x.py` (examples/ is sys.path[0]) and from a test
that puts examples/ on the path."""
import argparse
import time

import tfmini as tf

keras = tf.keras


def fit_and_score(model, train_data, test_data, lr, batch_size, epochs,
                  eager, verbose):
    """(test accuracy, seconds spent in fit) of a logits classifier."""
    (x, y), (xt, yt) = train_data, test_data
    model.compile(optimizer=keras.optimizers.Adam(lr),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True),
                  metrics=["accuracy"], run_eagerly=eager)
    t = time.perf_counter()
    model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=verbose)
    seconds = time.perf_counter() - t
    _, acc = model.evaluate(xt, yt, verbose=0)
    return float(acc), seconds


def main(doc, train, epochs, target):
    """The examples' command line: --eager, --epochs; prints the score."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--eager", action="store_true")
    p.add_argument("--epochs", type=int, default=epochs)
    a = p.parse_args()
    acc, s = train(a.eager, a.epochs, verbose=2)
    print(f"test accuracy {acc:.3f} (target {target}) in {s:.1f} s "
          f"({'eager' if a.eager else 'traced'})")
