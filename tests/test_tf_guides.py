"""TF's guides, run unchanged under tfmini, print what TF 2.21 prints.

tests/data/guides/<guide>.json holds a guide's code cells and what each
printed under TF 2.21 (written by `tools/guide_check.py --store`). Each
guide runs once here, in a subprocess (cells change global state such as
NumPy behaviour), and each cell is one test. Known differences are
xfail(strict=True), so fixing one shows up as an XPASS failure.
"""
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data", "guides")
TOOL = os.path.join(ROOT, "tools", "guide_check.py")

_spec = importlib.util.spec_from_file_location("guide_check", TOOL)
guide_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(guide_check)

# (guide, cell) -> why tfmini prints something else. Cell numbers count
# the cells that guide_check runs (see the JSON's "cells").
KNOWN = {
    ("random_numbers", 10): "tf.function retraces for each new Variable "
                            "argument, as ../shared/TF_SEMANTICS.md's cache "
                            "key says (Variables by identity); TF 2.21 "
                            "shares one trace",
    ("tf_numpy", 0): "tf.__version__ is tfmini's own",
    ("tf_numpy", 10): "the tensor class is tfmini._tensor.EagerTensor, "
                      "not tensorflow.python.framework.ops.EagerTensor",
    ("tf_numpy", 12): "tensor class module (as cell 10)",
    ("tf_numpy_type_promotion", 0): "tf.__version__ is tfmini's own",
    ("tf_numpy_type_promotion", 13): "legacy tf.add(int8 array, int32 "
                                     "tensor): TF's first operand fixes the "
                                     "dtype (InvalidArgumentError); tfmini "
                                     "converts the array to the tensor's "
                                     "dtype (int32 3); and the error class "
                                     "prints tfmini's module",
    ("data", 10): "value_type is tfmini.sparse.sparse_tensor.SparseTensor, "
                  "not tensorflow.python.framework.sparse_tensor's",
    ("data", 24): "an error raised in a from_generator generator: TF wraps "
                  "it in UnknownError with its {{function_node}} prefix; "
                  "tfmini raises it as it is",
    ("data", 25): "tf.keras.preprocessing (ImageDataGenerator) is not "
                  "built (Keras 3 keeps it as a legacy API)",
    ("data", 26): "follows cell 25 (img_gen undefined)",
    ("data", 29): "follows cell 25; and TF's {{function_node}} prefix",
    ("data", 46): "TF's {{function_node}} prefix on the missing file's "
                  "NotFoundError",
    ("data", 48): "TF's error prefix (as cell 46)",
    ("saved_model", 2): "tf.keras.applications is not built (and "
                        "MobileNet's weights are a download: TF fails "
                        "fetching them)",
    ("saved_model", 4): "the missing saved model's file is named as "
                        "tfmini's (saved_model.tfm), not TF's "
                        "{saved_model.pbtxt|saved_model.pb}",
    ("saved_model", 8): "TF's first save retraces every trace of every "
                        "tf.function (its cache key holds the save "
                        "context: the print runs again, the tracing count "
                        "grows; a second save reuses those); tfmini saves "
                        "the traces it ran",
    ("saved_model", 12): "saved model file name (as cell 4)",
    ("saved_model", 15): "TensorSpec(None) is traced once per rank "
                         "(tfmini's graphs know their rank): the trace's "
                         "print shows shape=(None,), and saving traces "
                         "ranks 0-4 (five prints, TF's two)",
    ("checkpoint", 3): "Keras 3 (TF 2.21) refuses save_weights without "
                       ".weights.h5; tfmini writes a TF checkpoint",
    ("checkpoint", 12): "CheckpointLoadStatus repr names tfmini's module",
    ("checkpoint", 13): "Keras 3 Dense tracks its kernel as `_kernel`, so "
                        "TF never restores `fake_layer.kernel`; tfmini does",
    ("checkpoint", 14): "checkpoint keys: Keras 3 has `_kernel` and "
                        "optimizer/_trainable_variables",
    ("checkpoint", 15): "key `net/l1/kernel` exists in tfmini (cell 14)",
    ("checkpoint", 16): "key `net/l1/kernel` exists in tfmini (cell 14)",
    # The core guides: tensor, variable, autodiff, advanced_autodiff,
    # basics, intro_to_modules.
    ("tensor", 31): "TF's eager error text starts with its "
                    "{{function_node __wrapped__Reshape_device_...}} "
                    "prefix; tfmini names the op and input shape instead",
    ("autodiff", 29): "TF has no gradient for AdjustContrastv2 "
                      "(LookupError); tfmini's adjust_contrast is built of "
                      "differentiable ops, so the gradient exists",
    ("intro_to_modules", 20): "Keras 3 refuses a Python list as a "
                              "positional layer input; tfmini converts it, "
                              "as Keras 2 did",
    ("intro_to_modules", 24): "Keras 3 layers do not track tf.Variables "
                              "set as attributes (TF prints []); tfmini's "
                              "track them, as the guide's text expects",
    ("intro_to_modules", 25): "Keras 3 wraps an error raised in call() "
                              "with the layer's arguments, and TF's text "
                              "names _MklMatMul; tfmini's is the bare "
                              "BatchMatMulV2 error",
    ("intro_to_modules", 27): "tf.Variables tracked on layers (as cell 24)",
    ("intro_to_modules", 29): "summary() counts the tracked tf.Variables "
                              "(as cell 24): 20 params, TF 0",
    ("intro_to_graphs", 4): "tf.autograph.to_code shows tfmini's "
                            "converted code, not TF's (no FunctionScope, "
                            "ld(), do_return)",
    ("intro_to_graphs", 5): "as_graph_def() lists nodes and inputs only: "
                            "no attrs, no function library, tfmini's node "
                            "names (Const, If)",
    ("intro_to_graphs", 20): "eager op errors start `GatherV2: `, not TF's "
                             "`{{function_node __wrapped__...}}` prefix",
    ("function", 18): "the error class is tfmini.errors.InvalidArgumentError,"
                      " not tensorflow.python.framework.errors_impl's",
    ("function", 24): "tf.autograph.to_code (as intro_to_graphs cell 4)",
    ("basic_training_loops", 11): "Keras 3 (TF 2.21) refuses save_weights "
                                  "without .weights.h5; tfmini writes a TF "
                                  "checkpoint",
    ("basic_training_loops", 12): "TF 2.21's tf.keras.losses lacks "
                                  "mean_squared_error (only mse/MSE); "
                                  "tfmini has it",
    ("basic_training_loops", 13): "TF never compiled the model (cell 12); "
                                  "tfmini trains it",
    ("quickstart_core", 14): "the missing saved model's file is named as "
                             "tfmini's (saved_model.tfm), not TF's "
                             "saved_model.pb (the data is a download, so "
                             "nothing was saved)",
    ("optimizers_core", 1): "tf.__version__ is tfmini's own",
    ("matrix_core", 1): "tf.__version__ is tfmini's own",
    ("extension_type", 14): "the tensor class is tfmini's Tensor, not "
                            "tensorflow.python.framework.ops.EagerTensor, "
                            "and the message adds a hint",
}

# TF's venv has no scipy: the cell fails there, and here where scipy is
# also missing.
if importlib.util.find_spec("scipy") is not None:
    KNOWN[("data", 71)] = "TF's venv has no scipy (ModuleNotFoundError); " \
                          "this one has"

# The gpu, graph_optimization, customization, distribute and tfrecord
# guides' differences, in a block of their own.
KNOWN.update({
    ("custom_layers", 7): "Keras 3 (TF 2.21) refuses add_weight's name "
                          "given positionally (Keras 2's order, which the "
                          "tutorial was written for); tfmini takes it",
    ("custom_layers", 8): "TF never built the layer (cell 7), so it has no "
                          "variables; tfmini's has its kernel",
    ("distributed_input", 0): "tf.__version__ is tfmini's own",
    ("tfrecord", 6): "a bool tensor as a protobuf int: TF 2.21's "
                     "__index__ fails under NumPy 2 (AttributeError, "
                     "UnknownError from py_function); tfmini refuses a bool "
                     "index (TypeError, so InvalidArgumentError, TF's "
                     "mapping)",
    ("tfrecord", 9): "the same bool feature as cell 6",
})

# The guides5 block: data_performance, distribution_core,
# distribute_custom_training and the migration guides (guide/migrate).
# Their TF1 cells (tf.compat.v1 graphs, sessions, Savers, hooks) are out
# of tfmini's scope, and tf.compat.v1 holds only the names whose TF1
# meaning is TF2's (tfmini/compat/v1.py). Estimators are gone from TF
# 2.21 too: there both fail with an AttributeError, whose text names
# each side's own module.
_TF1 = "TF1 graph/session API (tf.compat.v1): out of tfmini's scope"
_ESTIMATOR = ("estimators: TF 2.21 has none either; both raise "
              "AttributeError, tfmini's naming tfmini.compat.v1 (or the "
              "TF1 name it meets first) and the scope")
KNOWN.update({
    ("migrate_saved_model", 1): _TF1,
    ("migrate_saved_model", 2): _TF1,
    ("migrate_saved_model", 3): "tf.estimator: TF 2.21 has none either; "
                                "the AttributeError names module 'tfmini'",
    ("migrate_saved_model", 6): _TF1,
    ("migrate_saved_model", 7): "loads the SavedModels that cells 1-2 "
                                "wrote through TF1's builder (none here); "
                                "the missing file is named as tfmini's "
                                "(saved_model.tfm)",
    ("migrate_saved_model", 8): "MyModel.__call__ runs only inside another "
                                "tf.function's trace, where tfmini inlines "
                                "it and keeps no trace of its own, so the "
                                "saved module has no __call__; TF's repr "
                                "names its RestoredFunction class",
    ("migrate_saved_model", 9): "load_model of a folder: both ValueError; "
                                "Keras 3's text sends the user to .h5 and "
                                "TFSMLayer, which tfmini lacks",
    ("migrate_saved_model", 10): _TF1,
    ("migrate_saved_model", 11): _TF1,
    ("migrate_saved_model", 12): _TF1 + " (wrap_function, Saver)",
    ("migrate_metrics_optimizers", 2): _ESTIMATOR,
    ("migrate_metrics_optimizers", 4): _ESTIMATOR,
    ("migrate_sessionrunhook_callback", 3): _TF1 + " (SessionRunHook)",
    ("migrate_logging_stop_hook", 2): _ESTIMATOR,
    ("migrate_mirrored_strategy", 2): _ESTIMATOR,
    ("migrate_early_stopping", 1): _ESTIMATOR,
    ("migrate_fault_tolerance", 1): _TF1 + " (SessionRunHook)",
    ("migrate_fault_tolerance", 2): _ESTIMATOR,
    ("migrate_fault_tolerance", 4): _ESTIMATOR,
    ("migrate_tf1_vs_tf2", 9): "disable_tensor_equality is TF1 behaviour "
                               "(== by identity, hashable tensors): out of "
                               "scope",
    ("migration_debugging", 3): "Keras 3 has no DeterministicRandomTestTool "
                                "(AttributeError on keras.utils); tfmini's "
                                "AttributeError is on tf.compat.v1.keras, "
                                "TF1 API",
    ("migration_debugging", 6): "as cell 3",
    ("distribute_custom_training", 0): "tf.__version__ is tfmini's own",
    ("migrate_estimator", 3): _ESTIMATOR,
    ("migrate_feature_columns", 4): "Keras 3 refuses dict_values as a "
                                    "positional layer input; tfmini takes "
                                    "it (as intro_to_modules cell 20)",
    ("migrate_feature_columns", 21): _ESTIMATOR,
    ("compression", 20): "model.save of a name with no extension: both "
                         "ValueError; Keras 3's text offers '.h5' too, a "
                         "legacy format tfmini does not write",
    ("multi_worker_with_keras", 26): "load_model of a SavedModel folder "
                                     "(as migrate_saved_model cell 9)",
})
# tf.compat.v1.feature_column is TF1 API; TF 2.21 builds the columns but
# then fails on keras.layers.DenseFeatures, which Keras 3 dropped: both
# raise AttributeError, on different names.
for _cell in (3, 5, 7, 9, 11, 13, 15, 17):
    KNOWN[("migrate_feature_columns", _cell)] = \
        "feature columns: TF 2.21 fails on Keras 3's missing DenseFeatures, " \
        "tfmini on tf.compat.v1.feature_column (TF1 API, out of scope)"

# TF's venv has no IPython: the tfrecord tutorial's import of
# IPython.display fails there, and its display cells then fail on
# `display` rather than on the downloaded images' names.
if importlib.util.find_spec("IPython") is not None:
    for _cell in (0, 18, 19):
        KNOWN[("tfrecord", _cell)] = "TF's venv has no IPython " \
                                     "(ModuleNotFoundError); this one has"


def _guides():
    if not os.path.isdir(DATA):
        return []
    return sorted(f[:-5] for f in os.listdir(DATA) if f.endswith(".json"))


def _load(guide):
    with open(os.path.join(DATA, guide + ".json")) as f:
        return json.load(f)


_runs = {}


def _run(guide):
    """The guide's cells under tfmini, once per session."""
    if guide not in _runs:
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.json")
            subprocess.run(
                [sys.executable, TOOL, "--worker",
                 os.path.join(DATA, guide + ".json"), "--backend", "tfmini",
                 "--out", out], env=env, timeout=600, check=True,
                stdout=subprocess.DEVNULL)
            with open(out) as f:
                _runs[guide] = json.load(f)
    return _runs[guide]


def _params():
    for guide in _guides():
        for i in range(len(_load(guide)["cells"])):
            marks = []
            if (guide, i) in KNOWN:
                marks.append(pytest.mark.xfail(reason=KNOWN[(guide, i)],
                                               strict=True))
            yield pytest.param(guide, i, marks=marks, id=f"{guide}-{i}")


@pytest.mark.parametrize("guide,cell", list(_params()))
def test_cell_prints_what_tf_prints(guide, cell):
    data = _load(guide)
    tf_rec = data["tf"][cell]
    mini_rec = _run(guide)[cell]
    nondet = data["nondeterministic"][cell]
    assert guide_check.agrees(tf_rec, mini_rec, nondet), (
        f"cell {cell}:\n{data['cells'][cell]}\n"
        f"TF:     {tf_rec}\ntfmini: {mini_rec}")


def test_known_list_names_real_cells():
    for guide, i in KNOWN:
        assert guide in _guides()
        assert i < len(_load(guide)["cells"])


def test_normalise_ignores_noise_but_not_numbers():
    n = guide_check.normalise
    assert n("<X at 0x7f00ab>") == n("<X at 0x55aa>")
    assert n("took 12.5 ms") == n("took 3 s")
    assert n("[0.43842274 1.6272374 ]") == n("[0.4384227 1.6272373]")
    assert n("[0.1 2.5]") != n("[0.1 2.6]")
    assert n("tf.Tensor(3, shape=()") != n("tf.Tensor(4, shape=()")


def test_imports_become_tfminis():
    f = guide_check.for_tfmini
    assert f("import tensorflow as tf\nimport keras\n") == \
        "import tfmini as tf\nimport tfmini.keras as keras\n"
    assert f("from keras import layers") == "from tfmini.keras import layers"
    assert f("from keras.layers import Dense") == \
        "from tfmini.keras.layers import Dense"
    assert f("import keras_tuner") == "import keras_tuner"
    assert f("from tensorflow import keras\n"
             "from tensorflow.keras import mixed_precision") == \
        "from tfmini import keras\nfrom tfmini.keras import mixed_precision"


def test_plotting_runs_on_a_stand_in_and_the_rest_computes():
    src = ("x = tf.range(3)\n"
           "def show(m):\n  plt.figure()\n  plt.plot(m(x))\n"
           "for i in range(2):\n  y = x * i\n  _ = plt.xlabel('x')\n"
           "plt.ylim([0, max(plt.ylim())])\n"
           "sns.heatmap(x.numpy(), ax=plt.gca())[0]['k'] = 1\n"
           "show(lambda v: v)\n")
    nb = {"cells": [{"cell_type": "code", "source": [
        "import matplotlib.pyplot as plt\nimport seaborn as sns\n" + src]},
        {"cell_type": "code", "source": ["plt.show()"]}]}
    cells = guide_check.cells_of(nb)
    assert cells == [src.rstrip("\n"), "plt.show()"]   # only imports go
    pre = "import tfmini as tf\n"
    recs = guide_check.run_cells([pre + cells[0] + "\nprint(y.numpy())",
                                  cells[1], "plt.gca"])
    assert recs[0] == {"stdout": "[0 1 2]\n", "result": None,
                       "error": None}
    assert recs[1]["error"] is None and recs[2]["result"] == "<plot>"


# Small gaps the guides found, checked directly (values from TF 2.21).
def _tf():
    import tfmini
    return tfmini


def test_embedding_lookup_dense_sharded_ragged_and_max_norm():
    tf = _tf()
    p = tf.constant([[3., 4.], [1., 0.], [0., 2.]])
    assert tf.nn.embedding_lookup(p, [2, 0]).numpy().tolist() == \
        [[0., 2.], [3., 4.]]
    # Two shards by TF2's "div" strategy: ids 0-1, then 2.
    assert tf.nn.embedding_lookup([p[:2], p[2:]], [2, 0]).numpy() \
        .tolist() == [[0., 2.], [3., 4.]]
    got = tf.nn.embedding_lookup(p, [[2, 0]], max_norm=1.0).numpy()
    np.testing.assert_allclose(got, [[[0., 1.], [0.6, 0.8]]], rtol=1e-6)
    rt = tf.nn.embedding_lookup(p, tf.ragged.constant([[2, 0], [1]]))
    assert rt.to_list() == [[[0., 2.], [3., 4.]], [[1., 0.]]]
    with tf.GradientTape() as t:
        t.watch(p)
        y = tf.reduce_sum(tf.nn.embedding_lookup(p, [0, 0, 2]))
    g = tf.convert_to_tensor(t.gradient(y, p)).numpy()
    assert g.tolist() == [[2., 2.], [0., 0.], [1., 1.]]


def test_sparse_to_dense_of_strings_fills_default():
    tf = _tf()
    st = tf.sparse.SparseTensor([[0, 1], [1, 2]], ["a", "b"], [2, 3])
    assert tf.sparse.to_dense(st).numpy().tolist() == \
        [[b"", b"a", b""], [b"", b"", b"b"]]
    assert tf.sparse.to_dense(st, "x").numpy().tolist() == \
        [[b"x", b"a", b"x"], [b"x", b"x", b"b"]]


def test_dense_to_ragged_batch():
    tf = _tf()
    ds = tf.data.Dataset.from_tensor_slices([1, 5, 3]).map(tf.range)
    got = [b.to_list() for b in ds.apply(
        tf.data.experimental.dense_to_ragged_batch(2))]
    assert got == [[[0], [0, 1, 2, 3, 4]], [[0, 1, 2]]]
    got = [b.to_list() for b in ds.apply(
        tf.data.experimental.dense_to_ragged_batch(2, drop_remainder=True))]
    assert got == [[[0], [0, 1, 2, 3, 4]]]


def test_tnp_copy_is_a_new_tensor_on_the_current_device():
    tf = _tf()
    import tfmini.experimental.numpy as tnp
    a = tf.constant([1., 2.])
    with tf.device("/device:CPU:0"):
        b = tnp.copy(a)
    assert b is not a and b.numpy().tolist() == [1., 2.]
    assert b.device.endswith("device:CPU:0")
    assert tnp.copy([1, 2]).numpy().tolist() == [1, 2]


def test_vectorized_map_equals_the_loop():
    tf = _tf()
    x = tf.constant([[1, 2], [3, 4]])
    doubled, sums = tf.vectorized_map(lambda r: (r * 2, tf.reduce_sum(r)), x)
    assert doubled.numpy().tolist() == [[2, 4], [6, 8]]
    assert sums.numpy().tolist() == [3, 7]

    @tf.function
    def f(a, b):
        return tf.vectorized_map(lambda e: e[0] * e[1], (a, b))
    assert f(tf.constant([1., 2.]), tf.constant([3., 4.])).numpy() \
        .tolist() == [3., 8.]


def test_unicode_encode_of_two_ragged_dimensions():
    tf = _tf()
    rt = tf.ragged.constant([[[72, 101], [44]], [[19990]]])
    got = tf.strings.unicode_encode(rt, "UTF-8")
    assert got.to_list() == [[b"He", b","], ["世".encode()]]


def test_per_replica_str_shows_values_str_and_repr_their_repr():
    tf = _tf()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    try:
        strat = tf.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
        v = strat.run(lambda: tf.constant([1.5, 2.]))
    finally:
        tf.config.set_logical_device_configuration(cpu, None)
    # TF 2.21's print() and repr() of this value:
    assert str(v) == (
        "PerReplica:{\n"
        "  0: tf.Tensor([1.5 2. ], shape=(2,), dtype=float32),\n"
        "  1: tf.Tensor([1.5 2. ], shape=(2,), dtype=float32)\n}")
    assert repr(v) == (
        "PerReplica:{\n"
        "  0: <tf.Tensor: shape=(2,), dtype=float32, numpy=array([1.5, 2. ]"
        ", dtype=float32)>,\n"
        "  1: <tf.Tensor: shape=(2,), dtype=float32, numpy=array([1.5, 2. ]"
        ", dtype=float32)>\n}")


def test_dynamic_ragged_shape_matches_tf():
    tf = _tf()
    DRS = tf.experimental.DynamicRaggedShape
    rt = tf.ragged.constant([[[1]], [[3, 4], [5]]])
    # TF 2.21's reprs for these shapes:
    assert repr(tf.shape(rt)) == ("<DynamicRaggedShape lengths=[2, (1, 2), "
                                  "(1, 2, 1)] num_row_partitions=2>")
    dense_inner = tf.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]],
                                     ragged_rank=1)
    assert repr(tf.shape(dense_inner)) == (
        "<DynamicRaggedShape lengths=[2, (1, 2), 2] num_row_partitions=1>")
    uniform = tf.RaggedTensor.from_uniform_row_length(tf.range(6), 2)
    assert repr(tf.shape(uniform)) == (
        "<DynamicRaggedShape lengths=[3, 2] num_row_partitions=1>")
    s = DRS.from_lengths([2, (1, 2), 2])
    assert (s.rank, s.num_row_partitions, s.dtype) == (3, 1, tf.int64)
    assert int(s[2]) == 2 and s[2].dtype == tf.int64
    with pytest.raises(ValueError, match="Index 1 is not uniform"):
        s[1]
    assert tf.zeros(s, tf.int32).to_list() == [[[0, 0]], [[0, 0], [0, 0]]]
    assert tf.reshape(tf.range(6), s).to_list() == \
        [[[0, 1]], [[2, 3], [4, 5]]]
    with pytest.raises(ValueError):
        DRS.from_lengths([3, (1, 2)])        # 2 row lengths for 3 rows
    with pytest.raises(ValueError):
        DRS([tf.experimental.RowPartition.from_row_lengths([1, 2])], [4])
    # Dense tensors keep the dense tf.shape.
    assert tf.shape(tf.constant([[1, 2]])).numpy().tolist() == [1, 2]


@contextlib.contextmanager
def _three_cpu_strategy(tf):
    """MirroredStrategy over 3 logical CPUs, the CPU split undone after."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
    try:
        strat = tf.distribute.MirroredStrategy(["cpu:0", "cpu:1", "cpu:2"])
        with strat.scope():
            yield strat
    finally:
        tf.config.set_logical_device_configuration(cpu, None)


def _assert_tf_replica_draws(first, second, state):
    """TF 2.21's numbers for two runs of g.normal([]) on 3 replicas from
    Generator.from_seed(1): each replica its own stream; the saved state
    (replica 0's) moves one draw per run."""
    np.testing.assert_allclose([float(v) for v in first],
                               [-0.87930447, 0.020661574, -2.397752],
                               atol=1e-6)
    np.testing.assert_allclose([float(v) for v in second],
                               [-1.5822568, 0.77539235, 0.6851049],
                               atol=1e-6)
    assert state == [513, 0, 0]


def test_generator_on_replicas_hashes_its_key_as_tf():
    tf = _tf()
    with _three_cpu_strategy(tf) as strat:
        g = tf.random.Generator.from_seed(1)
        first = strat.run(lambda: g.normal([]))
        second = strat.run(lambda: g.normal([]))
        state = g.state.numpy().tolist()
    _assert_tf_replica_draws(first, second, state)
    # Outside a strategy the same seed gives the plain stream.
    assert tf.random.Generator.from_seed(1).normal([2]).numpy() == \
        pytest.approx([0.43842274, -0.53439844])


def test_traced_generator_draws_on_replicas_as_eager_ones(tmp_path):
    """A Generator drawn inside a tf.function under strategy.run gives
    each replica TF's stream (the key hashed by replica id), and the
    state moves one draw per run, exactly as the eager draws above. A
    saved model holds a trace made outside the replicas (the plain
    stream from the saved state), and the replicas keep theirs."""
    tf = _tf()
    with _three_cpu_strategy(tf) as strat:
        g = tf.random.Generator.from_seed(1)
        draw = tf.function(lambda: g.normal([]))
        first = strat.run(draw)
        second = strat.run(draw)
        state = g.state.numpy().tolist()
        module = tf.Module()
        module.g, module.draw = g, draw
        tf.saved_model.save(module, str(tmp_path / "m"))
        third = [float(v) for v in strat.run(draw)]
        after = g.state.numpy().tolist()
    _assert_tf_replica_draws(first, second, state)
    assert len(set(third)) == 3 and after == [769, 0, 0]
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    # The file holds the state as saved (after two runs): the plain
    # stream goes on from there.
    want = tf.random.Generator.from_seed(1)
    want.skip(2)
    assert float(loaded.draw()) == pytest.approx(float(want.normal([])))


def test_generator_state_with_a_key_past_2_63():
    tf = _tf()
    # A Python list mixing small ints and a key >= 2**63 (TF 2.21 values).
    g = tf.random.Generator(state=[1, 0, 16242730742183356629])
    assert g.normal([2]).numpy() == pytest.approx([-0.87930447, 1.4680789])


def test_dense_on_a_sparse_input_equals_dense_input():
    tf = _tf()
    x = tf.keras.Input(shape=(4,), sparse=True)
    model = tf.keras.Model(x, tf.keras.layers.Dense(3)(x))
    st = tf.sparse.SparseTensor([[0, 0], [0, 2], [2, 3]], [1, 2, 3], [3, 4])
    got = model(st).numpy()
    dense = tf.cast(tf.sparse.to_dense(st), tf.float32)
    want = (tf.matmul(dense, model.layers[-1].kernel)
            + model.layers[-1].bias).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError, match="rank 2"):
        model.layers[-1](tf.sparse.SparseTensor([[0, 0, 0]], [1.], [1, 1, 4]))
