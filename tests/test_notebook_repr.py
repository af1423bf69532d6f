"""Rich notebook reprs (_repr_html_, _repr_pretty_) of datasets,
tf.functions and Keras models: what they show, escaped, no addresses."""
import numpy as np

import tfmini as tf


class _Printer:
    """The part of IPython's pretty printer that _repr_pretty_ uses."""

    def __init__(self):
        self.out = []

    def text(self, s):
        self.out.append(s)


def _pretty(obj, cycle=False):
    p = _Printer()
    obj._repr_pretty_(p, cycle)
    return "".join(p.out)


def test_dataset_shows_element_spec():
    ds = tf.data.Dataset.from_tensor_slices(
        (np.zeros((10, 3), "float32"), np.arange(10))).batch(4)
    text = _pretty(ds)
    assert "element_spec" in text and "cardinality: 3" in text
    # batch() without drop_remainder: the batch dim is unknown, as TF's
    assert "TensorSpec(shape=(None, 3), dtype=tf.float32" in text
    assert "int64" in text
    h = ds._repr_html_()
    assert "<table" in h and "TensorSpec" in h and " at 0x" not in h
    assert "infinite" in _pretty(ds.repeat())
    empty = tf.data.Dataset.from_tensor_slices(np.zeros((0,), "float32"))
    # an empty dataset still knows its spec, as in TF
    assert ("element_spec: TensorSpec(shape=(), dtype=tf.float32"
            in _pretty(empty))


def test_function_shows_signature_and_traces():
    @tf.function
    def f(x, y=2):
        return x * y

    assert "traces: 0" in _pretty(f)
    f(tf.constant([1.0, 2.0]))
    f(tf.constant(3))
    text = _pretty(f)
    assert "traces: 2" in text
    assert "concrete function 0" in text and "concrete function 1" in text
    assert "TensorSpec(shape=(2,), dtype=tf.float32" in text
    assert "input_signature: None" in text

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def g(x):
        return x + 1
    h = g._repr_html_()
    assert "TensorSpec(shape=(None,)" in h and "<b>tf.function g</b>" in h
    assert _pretty(g, cycle=True) == "tf.function g"


def test_model_shows_summary_escaped():
    m = tf.keras.Sequential([tf.keras.Input((4,)),
                             tf.keras.layers.Dense(3, name="d<1>")])
    text = _pretty(m)
    assert "Total params: 15" in text and "Dense" in text
    h = m._repr_html_()
    assert "d&lt;1&gt;" in h and "d<1>" not in h
    unbuilt = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    assert "Sequential" in _pretty(unbuilt)
