"""The 8x8 handwritten digits that ship with scikit-learn (1,797 images):
a real dataset available without a network, used by the demo and the
convergence tests."""
import numpy as np


def load_data(test_split=0.2, seed=0):
    """((x_train, y_train), (x_test, y_test)): float32 images in [0, 1] of
    shape (n, 8, 8) and int32 labels, split reproducibly."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise ImportError("the digits dataset comes from scikit-learn: "
                          "pip install scikit-learn") from e
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)
    y = d.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_split))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])
