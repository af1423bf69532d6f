"""tfmini/trackable.py: the base class of what tf.train.Checkpoint saves.
Checkpoint and tf.Module walk objects through its protocol, not by
their classes, so they work with Keras unimportable."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfmini as tf
from tfmini.trackable import AutoTrackable, Trackable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_stateful_objects_are_trackable():
    layer = tf.keras.layers.Dense(2)
    objs = [tf.Module(), layer, tf.keras.Sequential([layer]),
            tf.keras.optimizers.SGD(), tf.keras.metrics.Mean(),
            tf.train.Checkpoint(),
            iter(tf.data.Dataset.from_tensor_slices(np.arange(3)))]
    assert all(isinstance(o, Trackable) for o in objs)
    assert isinstance(tf.Module(), AutoTrackable)


def test_checkpoint_rejects_an_untrackable_object():
    with pytest.raises(ValueError, match="trackable"):
        tf.train.Checkpoint(x=object())


def test_checkpoint_of_an_iterator_keeps_its_position(tmp_path):
    # (tests/test_checkpoint_more.py has the rest.)
    it = iter(tf.data.Dataset.from_tensor_slices(np.arange(3)))
    next(it)
    path = tf.train.Checkpoint(it=it).write(str(tmp_path / "ck"))
    it2 = iter(tf.data.Dataset.from_tensor_slices(np.arange(3)))
    tf.train.Checkpoint(it=it2).read(path).assert_consumed()
    assert [int(x) for x in it2] == [1, 2]


def test_module_attribute_set_after_restore_gets_its_value(tmp_path):
    m = tf.Module()
    m.v = tf.Variable([1.0, 2.0])
    m.d = {"b": [tf.Variable(3.0)]}
    path = tf.train.Checkpoint(m=m).write(str(tmp_path / "ck"))
    fresh = tf.Module()
    status = tf.train.Checkpoint(m=fresh).read(path)
    fresh.v = tf.Variable([0.0, 0.0])       # made after the restore
    fresh.d = {"b": [tf.Variable(0.0)]}
    np.testing.assert_allclose(fresh.v.numpy(), [1.0, 2.0])
    assert float(fresh.d["b"][0]) == 3.0
    status.assert_consumed()


def test_checkpoint_and_module_walk_without_keras():
    # Keras poisoned after import: the object walks of checkpoint.py and
    # module.py must not reach for it.
    code = textwrap.dedent("""
        import sys
        import tfmini as tf
        for name in [n for n in sys.modules if n.startswith("tfmini.keras")]:
            sys.modules[name] = None
        for name in ("tfmini.train.checkpoint", "tfmini.module"):
            del sys.modules[name]
        from tfmini.module import Module
        from tfmini.train import checkpoint as ck

        class Net(Module):
            def __init__(self):
                super().__init__()
                self.w = tf.Variable([1.0, 2.0])
                self.parts = {"b": [tf.Variable(3.0)], "a": Module()}
                self.parts["a"].u = tf.Variable(4.0)

        net = Net()
        assert [float(tf.reduce_sum(v)) for v in net.variables] == \\
            [3.0, 3.0, 4.0], net.variables
        keys = [k for k, _ in ck.Checkpoint(net=net)._records()]
        assert keys == [
            "_CHECKPOINTABLE_OBJECT_GRAPH",
            "net/parts/a/u/.ATTRIBUTES/VARIABLE_VALUE",
            "net/parts/b/0/.ATTRIBUTES/VARIABLE_VALUE",
            "net/w/.ATTRIBUTES/VARIABLE_VALUE"], keys
        records = [r for r in ck.Checkpoint(net=net)._records()
                   if r[0] != ck.GRAPH_KEY]
        fresh = Net()
        fresh.w.assign([0.0, 0.0])
        tree = {tuple(k[:-len(ck._SUFFIX)].split("/")): (k, v)
                for k, v in records}
        status = ck.CheckpointLoadStatus(k for k, _ in records)
        ck._restore(ck.Checkpoint(net=fresh), tree, status)
        status.assert_consumed()
        assert list(fresh.w.numpy()) == [1.0, 2.0]
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_module_and_checkpoint_sources_name_no_keras_class():
    for rel in ("tfmini/module.py", "tfmini/trackable.py"):
        with open(os.path.join(ROOT, rel)) as f:
            text = f.read()
        assert "import" not in "".join(
            line for line in text.splitlines() if "keras" in line), rel
    with open(os.path.join(ROOT, "tfmini/train/checkpoint.py")) as f:
        lines = [ln for ln in f if "keras" in ln and "import" in ln]
    # Only the file format (keras/saving/weights_format.py) remains.
    assert lines and all("weights_format" in ln for ln in lines), lines
