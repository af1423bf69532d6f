"""tf.dtypes: DType objects (tf.float32, ...) over the core's dtype enum."""
import builtins

import numpy as np

# The core's enum order (csrc/core/dtype.h).
_NAMES = ["bool", "int8", "uint8", "int16", "int32", "int64",
          "float16", "float32", "float64", "string",
          "bfloat16", "uint16", "uint32", "uint64", "complex64", "complex128"]


def _ml_dtypes():
    """ml_dtypes (NumPy's bfloat16, as TF and JAX use), imported on first
    need: tfmini's bfloat16 tensors work without it, their NumPy face
    does not."""
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError("tf.bfloat16's NumPy type needs the ml_dtypes "
                          "package (pip install ml_dtypes)") from None
    return ml_dtypes


class DType:
    """An element type, as TF's tf.dtypes.DType."""

    __slots__ = ("_enum", "_name", "_np")

    def __init__(self, enum, name):
        self._enum = enum
        self._name = name
        # tf.string's NumPy type is object (its elements are bytes);
        # bfloat16's comes from ml_dtypes, looked up when first asked.
        self._np = (np.object_ if name == "string" else
                    None if name == "bfloat16" else np.dtype(name).type)

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        if self._np is None:
            self._np = _ml_dtypes().bfloat16
        return self._np

    @property
    def size(self):
        if self._name == "bfloat16":
            return 2
        return np.dtype(self._np).itemsize

    @property
    def is_floating(self):
        return self._name.startswith(("float", "bfloat"))

    @property
    def is_integer(self):
        return self._name.startswith(("int", "uint"))

    @property
    def is_unsigned(self):
        return self._name.startswith("uint")

    @property
    def is_bool(self):
        return self._name == "bool"

    @property
    def is_numpy_compatible(self):
        return True

    @property
    def base_dtype(self):
        return self

    @property
    def real_dtype(self):
        """complex64 -> float32, complex128 -> float64; others: self."""
        if self._name == "complex64":
            return float32
        if self._name == "complex128":
            return float64
        return self

    @property
    def is_complex(self):
        return self._name.startswith("complex")

    @property
    def as_datatype_enum(self):
        """The core's enum value (not TF's DataType numbers)."""
        return self._enum

    @property
    def min(self):
        if self.is_complex:
            raise TypeError(f"Cannot find minimum value of {self} with "
                            f"type {self}.")
        if self._name == "string":
            raise TypeError(f"Cannot find minimum value of {self}.")
        if self._name == "bfloat16":
            return _ml_dtypes().finfo(self.as_numpy_dtype).min
        if self.is_floating:
            return np.finfo(self._np).min   # a NumPy scalar, as TF
        if self.is_bool:
            raise TypeError(f"Cannot find minimum value of {self}.")
        return int(np.iinfo(self._np).min)

    @property
    def max(self):
        if self.is_complex:
            raise TypeError(f"Cannot find maximum value of {self} with "
                            f"type {self}.")
        if self._name == "string":
            raise TypeError(f"Cannot find maximum value of {self}.")
        if self._name == "bfloat16":
            return _ml_dtypes().finfo(self.as_numpy_dtype).max
        if self.is_floating:
            return np.finfo(self._np).max
        if self.is_bool:
            raise TypeError(f"Cannot find maximum value of {self}.")
        return int(np.iinfo(self._np).max)

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __repr__(self):
        return f"tf.{self._name}"

    def __str__(self):
        return f"<dtype: '{self._name}'>"

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._enum

    def __reduce__(self):
        return as_dtype, (self._name,)


_BY_ENUM = [DType(i, n) for i, n in enumerate(_NAMES)]
_BY_NAME = {d.name: d for d in _BY_ENUM}
_BY_NAME["half"] = _BY_NAME["float16"]
_BY_NAME["float"] = _BY_NAME["float32"]
_BY_NAME["double"] = _BY_NAME["float64"]

bool = _BY_NAME["bool"]  # noqa: A001  (TF's public name)
int8 = _BY_NAME["int8"]
uint8 = _BY_NAME["uint8"]
uint16 = _BY_NAME["uint16"]
uint32 = _BY_NAME["uint32"]
uint64 = _BY_NAME["uint64"]
int16 = _BY_NAME["int16"]
int32 = _BY_NAME["int32"]
int64 = _BY_NAME["int64"]
float16 = half = _BY_NAME["float16"]
float32 = _BY_NAME["float32"]
float64 = double = _BY_NAME["float64"]
string = _BY_NAME["string"]
complex64 = _BY_NAME["complex64"]
complex128 = _BY_NAME["complex128"]
bfloat16 = _BY_NAME["bfloat16"]


def as_dtype(value):
    """DType from a DType, a name, a NumPy dtype or a Python type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"Cannot convert value {value!r} to a tfmini DType.")
    if value is float:
        return float32
    if value is int:
        return int32
    if value is complex:
        return complex128
    if value is builtins.bool:
        return _BY_NAME["bool"]
    if value in (str, bytes):
        return string
    try:
        name = np.dtype(value).name
        if np.dtype(value).kind in "OSU":
            return string
    except (TypeError, ValueError):
        raise TypeError(
            f"Cannot convert value {value!r} to a tfmini DType.") from None
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(f"Cannot convert value {value!r} to a tfmini DType: "
                    f"tfmini has no {name} dtype.")


def from_enum(enum):
    return _BY_ENUM[enum]
