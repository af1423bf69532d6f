"""Keras 3 fidelity: what tf.keras prints and names in TF 2.21.

The expected strings are TF 2.21's (Keras 3.15) output for the same
code, captured with the output not a terminal (COLUMNS=80)."""
import numpy as np
import pytest

import tfmini as tf
from tfmini import keras

L = keras.layers


@pytest.fixture(autouse=True)
def _fresh_names(monkeypatch):
    # Keras sizes the summary from the terminal: pin it as a pipe's.
    monkeypatch.setenv("COLUMNS", "80")
    keras.backend.clear_session()


def summary_text(model, **kw):
    out = []
    model.summary(print_fn=out.append, **kw)
    assert len(out) == 1            # Keras 3 hands over the whole table
    return out[0]


def _sequential():
    m = keras.Sequential([keras.Input((10,)), L.Dense(6, activation="relu"),
                          L.BatchNormalization(), L.Dropout(0.2),
                          L.Dense(3, name="scores")], name="tabular")
    return summary_text(m)


def test_summary_sequential():
    # TF 2.21's output.
    expected = """\
Model: "tabular"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ dense (Dense)                   │ (None, 6)              │            66 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ batch_normalization             │ (None, 6)              │            24 │
│ (BatchNormalization)            │                        │               │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dropout (Dropout)               │ (None, 6)              │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ scores (Dense)                  │ (None, 3)              │            21 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 111 (444.00 B)
 Trainable params: 99 (396.00 B)
 Non-trainable params: 12 (48.00 B)
"""
    assert _sequential() == expected


def _unbuilt():
    m = keras.Sequential([L.Dense(5, name="first"), L.Dense(1, name="second")], name="lazy")
    before = summary_text(m)
    m(np.ones((3, 2), "float32"))
    return before + summary_text(m)


def test_summary_unbuilt():
    # TF 2.21's output.
    expected = """\
Model: "lazy"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ first (Dense)                   │ ?                      │   0 (unbuilt) │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ second (Dense)                  │ ?                      │   0 (unbuilt) │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 0 (0.00 B)
 Trainable params: 0 (0.00 B)
 Non-trainable params: 0 (0.00 B)
Model: "lazy"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ first (Dense)                   │ (3, 5)                 │            15 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ second (Dense)                  │ (3, 1)                 │             6 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 21 (84.00 B)
 Trainable params: 21 (84.00 B)
 Non-trainable params: 0 (0.00 B)
"""
    assert _unbuilt() == expected


def _two_inputs():
    left = keras.Input((5,), name="left")
    right = keras.Input((2,), name="right")
    h1 = L.Dense(4, name="left_proj")(left)
    h2 = L.Dense(4, name="right_proj")(right)
    joined = L.Concatenate(name="joined")([h1, h2])
    out = L.Dense(1, name="score")(joined)
    return summary_text(keras.Model([left, right], out, name="ranker"))


def test_summary_two_inputs():
    # TF 2.21's output.
    expected = """\
Model: "ranker"
┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃
┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ left (InputLayer)   │ (None, 5)         │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ right (InputLayer)  │ (None, 2)         │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ left_proj (Dense)   │ (None, 4)         │         24 │ left[0][0]        │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ right_proj (Dense)  │ (None, 4)         │         12 │ right[0][0]       │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ joined              │ (None, 8)         │          0 │ left_proj[0][0],  │
│ (Concatenate)       │                   │            │ right_proj[0][0]  │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ score (Dense)       │ (None, 1)         │          9 │ joined[0][0]      │
└─────────────────────┴───────────────────┴────────────┴───────────────────┘
 Total params: 45 (180.00 B)
 Trainable params: 45 (180.00 B)
 Non-trainable params: 0 (0.00 B)
"""
    assert _two_inputs() == expected


def _nested():
    block = keras.Sequential([keras.Input((6,)), L.Dense(4, name="b1"), L.Dense(4, name="b2")], name="block")
    block.layers[1].trainable = False
    m = keras.Sequential([keras.Input((6,)), block, L.Dropout(0.1, name="drop"), L.Dense(2, name="head")], name="wrapper")
    return summary_text(m, expand_nested=True, show_trainable=True) + summary_text(m)


def test_summary_nested():
    # TF 2.21's output.
    expected = """\
Model: "wrapper"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━┓
┃ Layer (type)                ┃ Output Shape          ┃    Param # ┃ Trai… ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━┩
│ block (Sequential)          │ (None, 4)             │         48 │   Y   │
├─────────────────────────────┼───────────────────────┼────────────┼───────┤
│    └ b1 (Dense)             │ (None, 4)             │         28 │   Y   │
├─────────────────────────────┼───────────────────────┼────────────┼───────┤
│    └ b2 (Dense)             │ (None, 4)             │         20 │   N   │
├─────────────────────────────┼───────────────────────┼────────────┼───────┤
│ drop (Dropout)              │ (None, 4)             │          0 │   -   │
├─────────────────────────────┼───────────────────────┼────────────┼───────┤
│ head (Dense)                │ (None, 2)             │         10 │   Y   │
└─────────────────────────────┴───────────────────────┴────────────┴───────┘
 Total params: 58 (232.00 B)
 Trainable params: 38 (152.00 B)
 Non-trainable params: 20 (80.00 B)
Model: "wrapper"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ block (Sequential)              │ (None, 4)              │            48 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ drop (Dropout)                  │ (None, 4)              │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ head (Dense)                    │ (None, 2)              │            10 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 58 (232.00 B)
 Trainable params: 38 (152.00 B)
 Non-trainable params: 20 (80.00 B)
"""
    assert _nested() == expected


def _fit():
    m = keras.Sequential([keras.Input((4,)), L.Dense(3, name="hidden"), L.Dense(1, name="out")], name="reg")
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    before = summary_text(m)
    m.fit(np.ones((8, 4), "float32"), np.ones((8, 1), "float32"), epochs=1, batch_size=4, verbose=0)
    return before + summary_text(m)


def test_summary_fit():
    # TF 2.21's output.
    expected = """\
Model: "reg"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ hidden (Dense)                  │ (None, 3)              │            15 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ out (Dense)                     │ (None, 1)              │             4 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 19 (76.00 B)
 Trainable params: 19 (76.00 B)
 Non-trainable params: 0 (0.00 B)
Model: "reg"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ hidden (Dense)                  │ (None, 3)              │            15 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ out (Dense)                     │ (None, 1)              │             4 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 59 (240.00 B)
 Trainable params: 19 (76.00 B)
 Non-trainable params: 0 (0.00 B)
 Optimizer params: 40 (164.00 B)
"""
    assert _fit() == expected


def _narrow():
    m = keras.Sequential([keras.Input((12, 12, 3)), L.Conv2D(8, 3, name="a_rather_long_convolution_name"),
                          L.MaxPooling2D(), L.Flatten(), L.Dense(4)], name="small_cnn")
    return summary_text(m, line_length=48) + summary_text(m, positions=[0.3, 0.6, 1.0])


def test_summary_narrow():
    # TF 2.21's output.
    expected = """\
Model: "small_cnn"
┏━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━┓
┃ Layer (type)       ┃ Output Shape  ┃ Param # ┃
┡━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━┩
│ a_rather_long_con… │ (None, 10,    │     224 │
│ (Conv2D)           │ 10, 8)        │         │
├────────────────────┼───────────────┼─────────┤
│ max_pooling2d      │ (None, 5, 5,  │       0 │
│ (MaxPooling2D)     │ 8)            │         │
├────────────────────┼───────────────┼─────────┤
│ flatten (Flatten)  │ (None, 200)   │       0 │
├────────────────────┼───────────────┼─────────┤
│ dense (Dense)      │ (None, 4)     │     804 │
└────────────────────┴───────────────┴─────────┘
 Total params: 1,028 (4.02 KB)
 Trainable params: 1,028 (4.02 KB)
 Non-trainable params: 0 (0.00 B)
Model: "small_cnn"
┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)        ┃ Output Shape        ┃                      Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ a_rather_long_conv… │ (None, 10, 10, 8)   │                          224 │
│ (Conv2D)            │                     │                              │
├─────────────────────┼─────────────────────┼──────────────────────────────┤
│ max_pooling2d       │ (None, 5, 5, 8)     │                            0 │
│ (MaxPooling2D)      │                     │                              │
├─────────────────────┼─────────────────────┼──────────────────────────────┤
│ flatten (Flatten)   │ (None, 200)         │                            0 │
├─────────────────────┼─────────────────────┼──────────────────────────────┤
│ dense (Dense)       │ (None, 4)           │                          804 │
└─────────────────────┴─────────────────────┴──────────────────────────────┘
 Total params: 1,028 (4.02 KB)
 Trainable params: 1,028 (4.02 KB)
 Non-trainable params: 0 (0.00 B)
"""
    assert _narrow() == expected


def _subclassed():
    class Scorer(keras.Model):
        def __init__(self):
            super().__init__(name="scorer")
            self.embed = L.Dense(7, name="embed")
            self.out = L.Dense(2, name="logits")
        def call(self, x):
            return self.out(self.embed(x))
    m = Scorer()
    before = summary_text(m)
    m(np.zeros((6, 3), "float32"))
    return before + summary_text(m)


def test_summary_subclassed():
    # TF 2.21's output.
    expected = """\
Model: "scorer"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ embed (Dense)                   │ ?                      │   0 (unbuilt) │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ logits (Dense)                  │ ?                      │   0 (unbuilt) │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 0 (0.00 B)
 Trainable params: 0 (0.00 B)
 Non-trainable params: 0 (0.00 B)
Model: "scorer"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ embed (Dense)                   │ (6, 7)                 │            28 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ logits (Dense)                  │ (6, 2)                 │            16 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 44 (176.00 B)
 Trainable params: 44 (176.00 B)
 Non-trainable params: 0 (0.00 B)
"""
    assert _subclassed() == expected


def _one_dense():
    return keras.Sequential([keras.Input((4,)), L.Dense(3, name="wide")],
                            name="w")


def test_summary_to_stdout_is_cropped_to_the_console(capsys):
    _one_dense().summary(line_length=100)
    # TF 2.21's output: a 100-column table cut at the console's 80.
    assert capsys.readouterr().out == """\
Model: "w"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳
┃ Layer (type)                               ┃ Output Shape                    ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇
│ wide (Dense)                               │ (None, 3)                       │
└────────────────────────────────────────────┴─────────────────────────────────┴
 Total params: 15 (60.00 B)
 Trainable params: 15 (60.00 B)
 Non-trainable params: 0 (0.00 B)
"""


def test_summary_width_follows_a_wide_terminal(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "120")
    _one_dense().summary()
    # TF 2.21's output: Keras' own 88 columns fit.
    assert capsys.readouterr().out == """\
Model: "w"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ wide (Dense)                         │ (None, 3)                   │              15 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 15 (60.00 B)
 Trainable params: 15 (60.00 B)
 Non-trainable params: 0 (0.00 B)
"""


def test_summary_too_narrow_is_an_error():
    with pytest.raises(ValueError, match="Insufficient console width"):
        _one_dense().summary(line_length=10)


# ---- variables ------------------------------------------------------
def test_weight_names_paths_and_repr():
    layer = L.Dense(2, name="proj", bias_initializer="ones")
    layer.build((None, 3))
    assert (layer.kernel.name, layer.kernel.path) == ("kernel", "proj/kernel")
    assert isinstance(layer.kernel, tf.Variable)     # still a tf.Variable
    # TF 2.21's repr.
    assert repr(layer.bias) == \
        "<Variable path=proj/bias, shape=(2,), dtype=float32, value=[1. 1.]>"
    assert str(layer.bias) == repr(layer.bias)
    grid = keras.Variable(np.ones((2, 2), "float32"), name="grid")
    assert repr(grid) == ("<Variable path=grid, shape=(2, 2), dtype=float32, "
                          "value=[[1. 1.]\n [1. 1.]]>")


def test_weight_paths_follow_the_model_that_builds_them():
    seq = keras.Sequential([keras.Input((3,)), L.Dense(2, name="h")],
                           name="outer")
    assert [w.path for w in seq.weights] == ["outer/h/kernel", "outer/h/bias"]
    inp = keras.Input((3,))
    fn = keras.Model(inp, L.Dense(1, name="lin")(inp))
    assert [w.path for w in fn.weights] == ["lin/kernel", "lin/bias"]

    class Unnamed(L.Layer):
        def build(self, shape):
            self.a = self.add_weight(shape=(2,))
            self.b = self.add_weight(shape=(2,))

    u = Unnamed(name="unnamed")
    u.build((None, 2))
    assert [w.path for w in u.weights] == ["unnamed/variable",
                                           "unnamed/variable_1"]


def test_keras_variable_writes_return_the_new_value():
    v = keras.Variable(np.array([1.0, 2.0], "float32"), name="v")
    out = v.assign_sub([1.0, 1.0])
    assert isinstance(out, tf.Tensor) and out.numpy().tolist() == [0.0, 1.0]
    assert v.assign_add([2.0, 2.0]).numpy().tolist() == [2.0, 3.0]
    assert v.assign([5.0, 5.0], read_value=False) is None
    assert v.numpy().tolist() == [5.0, 5.0]


def test_optimizer_variables_named_as_keras3():
    opt = keras.optimizers.SGD(learning_rate=0.5)
    assert opt.name == "sgd" and keras.optimizers.SGD().name == "sgd_1"
    layer = L.Dense(1, name="d")
    layer.build((None, 2))
    adam = keras.optimizers.Adam()
    adam.build(layer.trainable_variables)
    assert [v.path for v in adam.variables] == [
        "adam/iteration", "adam/learning_rate", "adam/d_kernel_momentum",
        "adam/d_kernel_velocity", "adam/d_bias_momentum",
        "adam/d_bias_velocity"]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.ones((1, 2))))
    grads = tape.gradient(loss, layer.trainable_variables)
    for _ in range(3):
        opt.apply_gradients(zip(grads, layer.trainable_variables))
    # TF 2.21's reprs.
    assert repr(opt.iterations) == \
        "<Variable path=sgd/iteration, shape=(), dtype=int64, value=3>"
    assert repr(opt.learning_rate) == ("<Variable path=sgd/learning_rate, "
                                       "shape=(), dtype=float32, value=0.5>")


# ---- training logs --------------------------------------------------
def _trained(capsys=None, verbose=0):
    rng = np.random.RandomState(1)
    x = rng.rand(16, 3).astype("float32")
    y = (x.sum(1, keepdims=True) > 1.5).astype("float32")
    m = keras.Sequential([keras.Input((3,)), L.Dense(1, activation="sigmoid")])
    m.compile("sgd", "binary_crossentropy",
              metrics=[keras.metrics.BinaryAccuracy(name="zz"),
                       keras.metrics.MeanSquaredError(name="aa")])
    hist = m.fit(x, y, epochs=1, batch_size=8, verbose=verbose,
                 validation_split=0.25)
    return m, hist, x, y


def test_metrics_names_group_the_compiled_metrics():
    m, _, x, y = _trained()
    assert m.metrics_names == ["loss", "compile_metrics"]
    plain = keras.Sequential([keras.Input((3,)), L.Dense(1)])
    plain.compile("sgd", "mse")
    assert plain.metrics_names == ["loss"]


def test_logs_are_in_name_order(capsys):
    m, hist, x, y = _trained(verbose=2)
    # TF 2.21 sorts the logs; 'val_zz' comes before 'zz'.
    assert list(hist.history) == ["aa", "loss", "val_aa", "val_loss",
                                  "val_zz", "zz"]
    line = capsys.readouterr().out.splitlines()[-1]
    assert [p.split(":")[0] for p in line.split(" - ")[3:]] == \
        ["aa", "loss", "val_aa", "val_loss", "val_zz", "zz"]
    as_dict = m.evaluate(x, y, verbose=0, return_dict=True)
    assert list(as_dict) == ["aa", "loss", "zz"]
    # The list keeps the compiled order: loss, then the metrics.
    as_list = m.evaluate(x, y, verbose=0)
    assert as_list == [as_dict["loss"], as_dict["zz"], as_dict["aa"]]


# ---- weights files --------------------------------------------------
def test_weights_files_key_by_path_and_old_names_still_load(tmp_path):
    from tfmini.keras.saving import weights_format
    m = keras.Sequential([keras.Input((2,)), L.Dense(1, name="lin")],
                         name="net")
    path = str(tmp_path / "w.weights")
    m.save_weights(path)
    assert [n for n, _ in weights_format.read(path)] == ["net/lin/kernel",
                                                         "net/lin/bias"]
    # A file written before weights had paths: 'layer/weight:0' names.
    old = str(tmp_path / "old.weights")
    weights_format.write(old, [("lin/bias:0", np.array([7.0], "float32")),
                               ("lin/kernel:0",
                                np.array([[1.0], [2.0]], "float32"))])
    m.load_weights(old, by_name=True)
    assert m.layers[0].bias.numpy().tolist() == [7.0]
    assert m.layers[0].kernel.numpy().ravel().tolist() == [1.0, 2.0]


def test_metrics_have_no_reset_states_and_model_init_takes_keywords():
    # TF 2.21: AttributeError, and Layer.__init__'s positional TypeError
    # (effective_tf2 guide: super().__init__(self)).
    m = keras.metrics.Mean(name="m")
    m.update_state(3.0)
    with pytest.raises(AttributeError,
                       match="'Mean' object has no attribute 'reset_states'"):
        m.reset_states()
    m.reset_state()
    assert float(m.result()) == 0.0

    class Sub(keras.Model):
        def __init__(self):
            super().__init__(self)

    with pytest.raises(TypeError, match=r"^Layer.__init__\(\) takes 1 "
                       r"positional argument but 2 were given$"):
        Sub()
