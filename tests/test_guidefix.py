"""Small gaps the TF guides found (tests/test_tf_guides.py's KNOWN
table), each checked directly against what TF 2.21 gives."""
import pytest

import tfmini as tf


def test_a_python_range_converts_as_the_list_it_spells():
    t = tf.constant(range(2, 10, 3))
    assert t.dtype == tf.int32 and t.numpy().tolist() == [2, 5, 8]
    assert tf.reshape(range(6), [2, 3]).numpy().tolist() == \
        [[0, 1, 2], [3, 4, 5]]
    assert tf.constant(range(3), dtype=tf.float32).dtype == tf.float32
    # TF: an empty range is float32 like [], a big value int64.
    assert tf.constant(range(0)).dtype == tf.float32
    assert tf.constant(range(2**40, 2**40 + 2)).dtype == tf.int64
    with pytest.raises(ValueError):
        tf.constant(range(2**63, 2**63 + 2))


def test_unsupported_type_is_named_as_tf_names_it():
    class Foo:
        pass
    with pytest.raises(ValueError, match=r"unsupported type \(<class "
                       r"'test_guidefix\..*Foo'>\) to a Tensor\.$"):
        tf.ones_like(Foo())
    with pytest.raises(ValueError, match=r"\(<class 'dict'>\)"):
        tf.constant({1: 2})


def test_keras_input_has_keras3s_signature():
    spec = tf.TensorSpec([None, 2], tf.float32)
    with pytest.raises(TypeError, match="Input\\(\\) got an unexpected "
                       "keyword argument 'type_spec'"):
        tf.keras.layers.Input(type_spec=spec)
    # Keras 3's positional order: shape, batch_size, dtype.
    x = tf.keras.Input((3,), 4, "float64")
    assert tuple(x.shape) == (4, 3) and x.dtype == "float64"
    assert tf.keras.Input((2,), name="left").name == "left"
