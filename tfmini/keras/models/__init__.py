"""keras.models: Model, Sequential, load_model, save_model,
clone_model."""
from .functional import Functional  # noqa: F401
from .model import Model  # noqa: F401
from .sequential import Sequential  # noqa: F401
from .cloning import clone_model  # noqa: F401
from ..saving.keras_file import load_model, save_model  # noqa: F401
