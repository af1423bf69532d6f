"""h5py, imported when a Keras file is first read or written (tfmini
itself imports without it)."""


def h5py():
    try:
        import h5py as mod
    except ImportError as e:
        raise ImportError("Keras '.keras' and '.weights.h5' files need "
                          "h5py: pip install h5py") from e
    return mod
