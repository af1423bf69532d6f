"""keras.datasets: loaders that read local files (no network here)."""
from . import digits, mnist  # noqa: F401
