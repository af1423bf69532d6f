"""The API fuzzer (tests/api_fuzz.py) over tf.data pipelines, Keras
layers, tf.cond / tf.while_loop, WeakTensor promotion, the eager fast
paths, unknown-rank signatures, extension types, Optional,
from_generator and py_function, in worker processes: no crash, no hang,
no leak, only clear errors, and results that match their oracle. The default run is a few seconds per
family; `python3 tests/fuzz_all.py --minutes 10` runs every fuzzer
longer."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_fuzz  # noqa: E402


@pytest.mark.parametrize("family", api_fuzz.FAMILIES)
def test_fuzz_api_family(family):
    problems, outcomes = api_fuzz.drive(family, 1, 60)
    assert not problems, "\n".join(problems)
    # Both kinds of outcome show up: the cases are neither all rejected
    # up front nor all harmless.
    assert outcomes.get("ok", 0) >= 3, outcomes
    assert sum(v for k, v in outcomes.items() if k != "ok") >= 3, outcomes


# ---- what the fuzzer found ------------------------------------------------

def test_empty_dataset_repeated_forever_is_empty():
    # Hung (api_fuzz data seed 2 case 40): TF ends a repetition whose
    # pass gave nothing.
    import tfmini as tf
    assert list(tf.data.Dataset.range(0).repeat()) == []
    assert list(tf.data.Dataset.range(0).repeat(-1).take(5)) == []
    ds = tf.data.Dataset.zip((tf.data.Dataset.range(3),
                              tf.data.Dataset.range(0))).repeat()
    assert list(ds.take(4)) == []
    assert [int(x) for x in tf.data.Dataset.range(2).repeat().take(5)] == \
        [0, 1, 0, 1, 0]


def test_dataset_map_must_return_tensors():
    # Were AttributeErrors ('str' object has no attribute 'numpy') when
    # the element was used (api_fuzz data seed 2, cases 57 and 134).
    import tfmini as tf
    with pytest.raises(TypeError, match="returned None"):
        list(tf.data.Dataset.range(2).map(lambda x: None))
    # A str is a tf.string element now, as in TF.
    out = list(tf.data.Dataset.range(2).map(lambda x: "text"))
    assert [t.numpy() for t in out] == [b"text", b"text"]
    out = list(tf.data.Dataset.range(2).map(lambda x: (x, [1, 2])))
    assert out[1][1].numpy().tolist() == [1, 2]


def test_batch_normalization_rejects_a_bad_axis():
    # Was ZeroDivisionError for a scalar input (api_fuzz keras seed 2
    # case 151), and an axis past the rank wrapped around.
    import tfmini as tf
    with pytest.raises(ValueError, match="Invalid axis"):
        tf.keras.layers.BatchNormalization()(tf.constant(1.0))
    with pytest.raises(ValueError, match="Invalid axis: 7"):
        tf.keras.layers.BatchNormalization(axis=7)(tf.ones([2, 3]))


def test_while_loop_negative_maximum_iterations_runs_no_iteration():
    # Hung inside tf.function: the While step took -1 for "no limit"
    # (api_fuzz control seed 2 case 313).
    import tfmini as tf

    def loop(m):
        return tf.while_loop(lambda v: tf.constant(True), lambda v: v + 1,
                             [tf.constant(3)], maximum_iterations=m)
    traced = tf.function(loop, autograph=False)
    assert traced(-1)[0].numpy() == 3
    assert traced(tf.constant(-5))[0].numpy() == 3
    assert traced(tf.constant(2))[0].numpy() == 5
    assert loop(-1)[0].numpy() == 3
