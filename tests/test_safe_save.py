"""Saving files safely (Note [Atomic file write], csrc/graph/file_write.h):
a symlink planted at a temp name is never followed, concurrent savers of
one folder leave a whole file, and the temp files of a killed save are
removed by a later save once they are a minute old."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tfmini as tf
from tfmini import keras

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMP = re.compile(r"^\..+\.tfm-[a-z0-9]{12}\.tmp$")


class Holder(tf.Module):
    def __init__(self, n=4):
        super().__init__()
        self.v = tf.Variable(tf.range(n, dtype=tf.float32), name="v")

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def scaled(self, s):
        return self.v * s


def _victim(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    return victim


def _plant(folder, name, victim):
    os.makedirs(folder, exist_ok=True)
    os.symlink(victim, os.path.join(folder, name))


# Temp names the old writers used, and a guess at the new pattern.
GUESSES = [".saved_model.tfm.tfm-aaaaaaaaaaaa.tmp",
           ".saved_model.tfm.tfm-000000000000.tmp"]


def test_saved_model_save_does_not_follow_planted_symlinks(tmp_path):
    victim = _victim(tmp_path)
    export = tmp_path / "export"
    for name in ["saved_model.tfm.tmp"] + GUESSES:
        _plant(export, name, victim)
    tf.saved_model.save(Holder(), str(export))
    assert victim.read_text() == "precious"
    loaded = tf.saved_model.load(str(export))
    np.testing.assert_allclose(loaded.scaled(tf.constant(2.0)).numpy(),
                               [0, 2, 4, 6])
    # The planted links are left alone (they are not ours to remove).
    for name in ["saved_model.tfm.tmp"] + GUESSES:
        assert os.path.islink(export / name)


def test_saved_model_target_symlink_is_replaced_not_followed(tmp_path):
    victim = _victim(tmp_path)
    export = tmp_path / "export"
    _plant(export, "saved_model.tfm", victim)
    tf.saved_model.save(Holder(), str(export))
    assert victim.read_text() == "precious"
    assert not os.path.islink(export / "saved_model.tfm")
    tf.saved_model.load(str(export))


def test_weights_and_checkpoint_do_not_follow_planted_symlinks(tmp_path):
    victim = _victim(tmp_path)
    folder = tmp_path / "w"
    for name in ["checkpoint.tmp", ".m.weights.tfm-aaaaaaaaaaaa.tmp",
                 ".ckpt-1.index.tfm-aaaaaaaaaaaa.tmp"]:
        _plant(folder, name, victim)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.save_weights(str(folder / "m.weights"))
    ckpt = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0]))
    path = ckpt.save(str(folder / "ckpt"))
    assert victim.read_text() == "precious"
    assert tf.train.latest_checkpoint(str(folder)) == path
    model.load_weights(str(folder / "m.weights"))


def test_save_errors_are_tf_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(tf.errors.NotFoundError, match="saved_model.save"):
        tf.saved_model.save(Holder(), str(tmp_path / "file" / "sub"))
    from tfmini import _C
    with pytest.raises(tf.errors.NotFoundError, match="No such file"):
        _C.write_file_atomic(str(tmp_path / "no" / "f"), b"x", "test")


CONCURRENT = textwrap.dedent("""
    import sys
    import tfmini as tf
    folder, seed = sys.argv[1], int(sys.argv[2])
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(tf.fill([200000], float(seed)))
        @tf.function(input_signature=[])
        def get(self):
            return self.v
    m = M()
    for i in range(4):
        tf.saved_model.save(m, folder)
    print("ok")
""")


def test_concurrent_saves_leave_a_whole_file(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    for rnd in range(3):
        folder = str(tmp_path / f"round{rnd}")
        procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, folder,
                                   str(k + 1)], env=env,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for k in range(2)]
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0 and out.strip() == "ok", err
        loaded = tf.saved_model.load(folder)   # checks the CRC
        v = loaded.get().numpy()
        assert v.shape == (200000,) and v[0] in (1.0, 2.0)
        assert (v == v[0]).all()
        assert os.listdir(folder) == ["saved_model.tfm"]


BIG_SAVE = textwrap.dedent("""
    import sys
    import tfmini as tf
    from tfmini import keras
    kind, path = sys.argv[1], sys.argv[2]
    # 6000 x 4096 float32: about 98 MB of weights.
    model = keras.Sequential([keras.Input((6000,)), keras.layers.Dense(4096,
                              kernel_initializer="zeros")])
    print("ready", flush=True)
    if kind == "weights":
        model.save_weights(path)
    else:
        tf.train.Checkpoint(model=model).write(path)
""")


def _killed_mid_write(kind, folder, target):
    """Run a big save in a child and SIGKILL it while its temp file is
    being written; the temp file it leaves (None if the kill missed)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, "-c", BIG_SAVE, kind, target],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdout.readline().strip() == b"ready"
    before = set(os.listdir(folder))
    found = None
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline:
        temps = [n for n in os.listdir(folder)
                 if TEMP.match(n) and n not in before]
        if temps:
            p.send_signal(signal.SIGKILL)
            found = temps[0]
            break
    p.kill()
    p.wait()
    return found if found and os.path.exists(os.path.join(folder, found)) \
        else None


@pytest.mark.parametrize("kind", ["weights", "checkpoint"])
def test_killed_save_temp_files_are_removed_later(tmp_path, kind):
    folder = str(tmp_path)
    target = os.path.join(folder, "big.weights" if kind == "weights"
                          else "ckpt")
    left = []
    for _ in range(6):
        t = _killed_mid_write(kind, folder, target)
        if t:
            left.append(t)
        if len(left) == 2:
            break
    if len(left) < 2:
        pytest.skip("the kill never landed mid-write")
    # Unpredictable names: each save drew its own.
    assert left[0] != left[1]
    old, young = (os.path.join(folder, n) for n in left)
    past = time.time() - 120
    os.utime(old, (past, past))
    # Any later save in the folder removes the stale one, keeps the
    # young one (a save that may still be running).
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.save_weights(os.path.join(folder, "other.weights"))
    assert not os.path.exists(old)
    assert os.path.exists(young)
