"""TF's guides, run unchanged under tfmini, print what TF 2.21 prints.

tests/data/guides/<guide>.json holds a guide's code cells and what each
printed under TF 2.21 (written by `tools/guide_check.py --store`). Each
guide runs once here, in a subprocess (cells change global state such as
NumPy behaviour), and each cell is one test. Known differences are
xfail(strict=True), so fixing one shows up as an XPASS failure.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

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
    ("ragged_tensor", 67): "tf.shape(ragged) gives no DynamicRaggedShape",
    ("ragged_tensor", 68): "needs DynamicRaggedShape (cell 67)",
    ("ragged_tensor", 69): "needs DynamicRaggedShape (cell 67)",
    ("ragged_tensor", 70): "needs DynamicRaggedShape (cell 67)",
    ("ragged_tensor", 71): "needs DynamicRaggedShape (cell 67)",
    ("ragged_tensor", 72): "no tf.experimental.DynamicRaggedShape",
    ("ragged_tensor", 73): "no tf.experimental.DynamicRaggedShape",
    ("ragged_tensor", 78): "ragged broadcast error text is tfmini's, not "
                           "TF's assert_equal dump",
    ("ragged_tensor", 79): "ragged broadcast error text (as cell 78)",
    ("ragged_tensor", 80): "ragged broadcast error text (as cell 78)",
    ("ragged_tensor", 19): "no tf.nn.embedding_lookup",
    ("ragged_tensor", 23): "tf.sparse.to_dense of strings: default_value "
                           "'' is not used",
    ("ragged_tensor", 36): "no tf.data.experimental.dense_to_ragged_batch",
    ("sparse_tensor", 13): "Keras Input(sparse=True): Dense on a "
                           "SparseTensor",
    ("tf_numpy", 16): "no tf.vectorized_map",
    ("tf_numpy", 19): "no tnp.copy",
    ("unicode", 27): "unicode_encode of a ragged tensor with two ragged "
                     "dimensions",
    ("random_numbers", 10): "tf.function retraces for each new Variable "
                            "argument; TF shares one trace",
    ("random_numbers", 12): "Generator under MirroredStrategy: replicas "
                            "do not get TF's split streams",
    ("random_numbers", 13): "Generator created inside strategy.run",
    ("random_numbers", 17): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 18): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 19): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 20): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 21): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 22): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 23): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 24): "Generator under MirroredStrategy (cell 12)",
    ("random_numbers", 25): "the saved Generator state follows cell 24",
    ("tf_numpy", 0): "tf.__version__ is tfmini's own",
    ("tf_numpy", 10): "the tensor class is tfmini._tensor.EagerTensor, "
                      "not tensorflow.python.framework.ops.EagerTensor",
    ("tf_numpy", 11): "tensor class module (as cell 10)",
    ("checkpoint", 3): "Keras 3 (TF 2.21) refuses save_weights without "
                       ".weights.h5; tfmini writes a TF checkpoint",
    ("checkpoint", 12): "CheckpointLoadStatus repr names tfmini's module",
    ("checkpoint", 13): "Keras 3 Dense tracks its kernel as `_kernel`, so "
                        "TF never restores `fake_layer.kernel`; tfmini does",
    ("checkpoint", 14): "checkpoint keys: Keras 3 has `_kernel` and "
                        "optimizer/_trainable_variables",
    ("checkpoint", 15): "key `net/l1/kernel` exists in tfmini (cell 14)",
    ("checkpoint", 16): "key `net/l1/kernel` exists in tfmini (cell 14)",
}


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
