"""keras.datasets: loaders that read Keras's local cache (no network
here): mnist, fashion_mnist, cifar10, imdb, and scikit-learn's digits."""
from . import cifar10, digits, fashion_mnist, imdb, mnist  # noqa: F401
