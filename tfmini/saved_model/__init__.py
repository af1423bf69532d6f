"""tf.saved_model: save an object's traced functions and variables in the
C core's checksummed format, and load them back, with no Python source
and no pickle (see csrc/graph/saved_model.h for the file)."""
from .load import load
from .options import LoadOptions, SaveOptions
from .save import save
from .signature_constants import *  # noqa: F401,F403

__all__ = ["save", "load", "SaveOptions", "LoadOptions"]
