"""tf.dtypes: the DType objects and their conversions (TF's names)."""
import numpy as np
import pytest

import tfmini as tf

ALL = [("bool", np.bool_, 1), ("int8", np.int8, 1), ("uint8", np.uint8, 1),
       ("int16", np.int16, 2), ("int32", np.int32, 4),
       ("int64", np.int64, 8), ("float16", np.float16, 2),
       ("float32", np.float32, 4), ("float64", np.float64, 8)]


@pytest.mark.parametrize("name,np_type,size", ALL)
def test_attributes(name, np_type, size):
    d = getattr(tf, name)
    assert isinstance(d, tf.DType)
    assert d.name == name
    assert d.as_numpy_dtype is np_type
    assert d.size == size
    kind = np.dtype(np_type).kind
    assert d.is_floating == (kind == "f")
    assert d.is_integer == (kind in "iu")
    assert d.is_unsigned == (kind == "u")
    assert d.is_bool == (kind == "b")
    assert not d.is_complex
    assert d.base_dtype is d
    assert repr(d) == f"tf.{name}"
    assert str(d) == f"<dtype: '{name}'>"


@pytest.mark.parametrize("name,np_type,size", ALL)
def test_equality_with_names_and_numpy(name, np_type, size):
    d = getattr(tf, name)
    assert d == name
    assert d == np_type
    assert d == np.dtype(np_type)
    assert d == tf.as_dtype(name)
    assert tf.as_dtype(np_type) is d
    assert tf.dtypes.as_dtype(np.dtype(np_type)) is d
    assert not (d != name)
    others = [n for n, _, _ in ALL if n != name]
    for o in others:
        assert d != o
        assert d != getattr(tf, o)
    assert d != None  # noqa: E711  (TF: comparing with None is False)
    assert d != "no_such_type"
    assert d != object()
    assert hash(d) == hash(tf.as_dtype(name))
    assert d.is_compatible_with(name)


def test_aliases_and_python_types():
    assert tf.half is tf.float16
    assert tf.double is tf.float64
    assert tf.as_dtype("float") is tf.float32
    assert tf.as_dtype("double") is tf.float64
    assert tf.as_dtype(float) is tf.float32
    assert tf.as_dtype(int) is tf.int32
    assert tf.as_dtype(bool) is tf.bool
    assert tf.dtypes.float32 is tf.float32
    assert tf.dtypes.DType is tf.DType
    # TF maps str, bytes, object and NumPy's object/bytes/str to string.
    for name in ("string", str, bytes, object, np.object_, np.bytes_):
        assert tf.as_dtype(name) is tf.string


@pytest.mark.parametrize("bad", ["complex32", np.datetime64,
                                 np.float128, [1, 2], 3.5])
def test_unknown_types_are_type_errors(bad):
    with pytest.raises(TypeError):
        tf.as_dtype(bad)


def test_min_max():
    assert tf.int8.min == -128 and tf.int8.max == 127
    assert tf.uint8.min == 0 and tf.uint8.max == 255
    assert tf.int64.max == 2**63 - 1
    assert tf.float16.max == 65504.0
    assert tf.float32.max == float(np.finfo(np.float32).max)
    assert tf.float64.min == -float(np.finfo(np.float64).max)
    with pytest.raises(TypeError):
        tf.bool.min
    with pytest.raises(TypeError):
        tf.bool.max


def test_pickle_and_hash_keys():
    import pickle
    for name, _, _ in ALL:
        d = getattr(tf, name)
        assert pickle.loads(pickle.dumps(d)) is d
    table = {tf.float32: "f", tf.int32: "i"}
    assert table[tf.as_dtype("float32")] == "f"


@pytest.mark.parametrize("name,np_type,size", ALL)
def test_tensor_dtype_round_trip(name, np_type, size):
    x = np.zeros(3, np_type)
    t = tf.constant(x)
    assert t.dtype is getattr(tf, name)
    assert t.numpy().dtype == np.dtype(np_type)
