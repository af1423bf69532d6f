"""The native code cache (Note [Native code cache] in
csrc/graph/native_cache.c): a directory or file that someone else could
have chosen is refused with a warning and the function still computes the
right numbers in the block evaluator; compiling happens on a function's
first call, never when it is traced or loaded; TFMINI_NATIVE=0 turns it
off; the directory is pruned to TFMINI_NATIVE_CACHE_MB, least recently
used first."""
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from graph_util import bits_equal, passes

BIG = (64, 1031)        # over the native threshold
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _nobody():
    import pwd
    return pwd.getpwnam("nobody").pw_uid


@pytest.fixture
def cc(tmp_path, monkeypatch):
    """A compiler of this test's own (its path is part of every program's
    key, so nothing compiled earlier in this process is found in memory)
    that logs each run."""
    log = tmp_path / "cc.log"
    script = tmp_path / "cc.sh"
    script.write_text(f'#!/bin/sh\necho run >> "{log}"\nexec cc "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("TFMINI_CC", str(script))
    return log


def _runs(log):
    return len(log.read_text().split()) if log.exists() else 0


def _check(monkeypatch, cache_dir, want_native, capfd=None):
    """A big fused function under cache_dir: compiled or not as wanted,
    and bitwise equal to the eager ops either way."""
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(cache_dir))
    x = tf.constant(np.linspace(-4, 4, np.prod(BIG), dtype=np.float32)
                    .reshape(BIG))

    def f(x):
        return tf.nn.leaky_relu(x * 1.5 - 3.0, 0.125)

    fn = tf.function(f)
    got = fn(x)
    assert fn.get_concrete_function(x)._native_steps == int(want_native)
    bits_equal(got, f(x))
    if capfd is not None:
        err = capfd.readouterr().err
        assert ("refused" in err) == (not want_native), err
        return err


def test_a_good_directory_is_used(tmp_path, monkeypatch, cc, capfd):
    _check(monkeypatch, tmp_path / "c", True, capfd)
    native = tmp_path / "c" / "native"
    assert stat.S_IMODE(native.stat().st_mode) == 0o700
    assert sorted(p.suffix for p in native.iterdir()) == [".c", ".so"]


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o757])
def test_a_writable_cache_dir_is_refused(tmp_path, monkeypatch, cc, capfd,
                                         mode):
    d = tmp_path / "c"
    d.mkdir()
    d.chmod(mode)
    err = _check(monkeypatch, d, False, capfd)
    assert "writable by group or others" in err
    assert _runs(cc) == 0


def test_a_writable_native_dir_is_refused(tmp_path, monkeypatch, cc,
                                          capfd):
    (tmp_path / "c" / "native").mkdir(parents=True)
    (tmp_path / "c" / "native").chmod(0o775)
    _check(monkeypatch, tmp_path / "c", False, capfd)
    assert _runs(cc) == 0


@pytest.mark.skipif(not IS_ROOT, reason="needs root to chown")
@pytest.mark.parametrize("which", ["cache", "native"])
def test_a_dir_of_another_user_is_refused(tmp_path, monkeypatch, cc, capfd,
                                          which):
    d = tmp_path / "c"
    (d / "native").mkdir(parents=True)
    os.chown(d if which == "cache" else d / "native", _nobody(), -1)
    err = _check(monkeypatch, d, False, capfd)
    assert "owned by another user" in err or "not owned by" in err


@pytest.mark.parametrize("where", ["cache", "parent", "native"])
def test_a_symlink_in_the_path_is_refused(tmp_path, monkeypatch, cc, capfd,
                                          where):
    real = tmp_path / "real"
    (real / "c" / "native").mkdir(parents=True, mode=0o700)
    if where == "cache":                # $TFMINI_CACHE_DIR is a link
        (tmp_path / "link").symlink_to(real / "c")
        d = tmp_path / "link"
    elif where == "parent":             # a folder above it is
        (tmp_path / "link").symlink_to(real)
        d = tmp_path / "link" / "c"
    else:                               # native/ is
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "native").symlink_to(real / "c" / "native")
        d = tmp_path / "c"
    err = _check(monkeypatch, d, False, capfd)
    assert "symlink" in err
    assert _runs(cc) == 0
    assert list((real / "c" / "native").iterdir()) == []


# ---- cached files: loaded from disk by a fresh process ----

CHILD = """
import numpy as np, tfmini as tf
x = tf.constant(np.linspace(-4, 4, 64 * 1031, dtype=np.float32)
                .reshape(64, 1031))
f = lambda x: tf.nn.leaky_relu(x * 2.5 - 1.0, 0.375)
fn = tf.function(f)
a = fn(x).numpy()
b = f(x).numpy()
print(fn.get_concrete_function(x)._native_steps,
      np.array_equal(a.view(np.uint32), b.view(np.uint32)))
"""


def _child(cache_dir, cc_script):
    env = dict(os.environ, TFMINI_CACHE_DIR=str(cache_dir),
               TFMINI_CC=str(cc_script), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", CHILD], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(), r.stderr


@pytest.fixture(scope="module")
def compiled_once(tmp_path_factory):
    """A cache directory holding CHILD's program, compiled by a logging
    compiler of its own."""
    base = tmp_path_factory.mktemp("golden")
    script = base / "cc.sh"
    script.write_text('#!/bin/sh\nexec cc "$@"\n')
    script.chmod(0o755)
    out, _ = _child(base / "c", script)
    assert out == ["1", "True"]
    return base / "c", script


def _copy(compiled_once, tmp_path):
    src, script = compiled_once
    d = tmp_path / "c"
    shutil.copytree(src, d)
    so = next((d / "native").glob("*.so"))
    return d, so, script


def test_a_cached_program_is_loaded_and_touched(compiled_once, tmp_path):
    d, so, script = _copy(compiled_once, tmp_path)
    os.utime(so, (1_000_000, 1_000_000))
    out, err = _child(d, script)
    assert out == ["1", "True"] and "refused" not in err
    assert so.stat().st_mtime > 1_000_000          # used: touched (LRU)


@pytest.mark.parametrize("how", ["mode", "fifo", "dir", "symlink", "owner"])
def test_a_bad_cached_file_is_refused(compiled_once, tmp_path, how):
    if how == "owner" and not IS_ROOT:
        pytest.skip("needs root to chown")
    d, so, script = _copy(compiled_once, tmp_path)
    if how == "mode":
        so.chmod(0o666)
    elif how == "owner":
        os.chown(so, _nobody(), -1)
    else:
        keep = tmp_path / "elsewhere.so"
        so.rename(keep)
        if how == "fifo":
            os.mkfifo(so, 0o600)
        elif how == "dir":
            so.mkdir(mode=0o700)
        else:
            so.symlink_to(keep)
    out, err = _child(d, script)
    assert out == ["0", "True"]
    assert "refused" in err and so.name in err


# ---- when the compiler runs ----

def test_tracing_runs_no_compiler_the_first_call_does(tmp_path, monkeypatch,
                                                       cc):
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(tmp_path))
    x = tf.constant(np.ones(BIG, np.float32))
    fn = tf.function(lambda x: tf.nn.relu(x * 2.0 - 1.0))
    cf = fn.get_concrete_function(x)
    assert _runs(cc) == 0 and cf._native_steps == 0
    fn(x)
    assert _runs(cc) == 1 and cf._native_steps == 1
    fn(x)
    assert _runs(cc) == 1


def test_small_nodes_never_compile(tmp_path, monkeypatch, cc):
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(tmp_path))
    x = tf.constant(np.ones((255, 256), np.float32))   # just under 65536
    fn = tf.function(lambda x: tf.nn.relu(x * 2.0 - 1.0))
    fn(x)
    assert _runs(cc) == 0


def test_tfmini_native_0_turns_it_off(tmp_path, monkeypatch, cc):
    monkeypatch.setenv("TFMINI_NATIVE", "0")
    _check(monkeypatch, tmp_path, False)
    assert _runs(cc) == 0
    assert not (tmp_path / "native").exists()


def test_two_threads_on_one_plan_compile_once(tmp_path, monkeypatch, cc):
    import threading
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(tmp_path))
    x = tf.constant(np.ones(BIG, np.float32))
    fn = tf.function(lambda x: tf.nn.relu(x * 3.0 - 1.0))
    cf = fn.get_concrete_function(x)
    out = []
    ts = [threading.Thread(target=lambda: out.append(fn(x).numpy()))
          for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert _runs(cc) == 1 and cf._native_steps == 1
    for o in out:
        bits_equal(o, np.full(BIG, 2.0, np.float32))


class Many(tf.Module):
    """A model of many distinct fused programs (the issue's model had
    24: one compiler run each, all at load time)."""

    @tf.function(input_signature=[tf.TensorSpec(BIG, tf.float32)])
    def __call__(self, x):
        total = tf.constant(0.0)
        for k in range(6):
            y = tf.nn.leaky_relu(x * (1.0 + k) - 0.5, 0.01 * (k + 1))
            total += tf.reduce_sum(y)
        return total


def test_loading_a_model_runs_no_compiler(tmp_path, monkeypatch, cc):
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TFMINI_NATIVE", "0")
    m = Many()
    tf.saved_model.save(m, str(tmp_path / "m"))
    x = tf.constant(np.linspace(-1, 1, np.prod(BIG), dtype=np.float32)
                    .reshape(BIG))
    want = m(x).numpy()
    # Native code off: neither loading nor calling compiles.
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded(x).numpy() == want
    assert _runs(cc) == 0
    monkeypatch.delenv("TFMINI_NATIVE")
    # The optimizer option does the same for models loaded under it.
    with passes(native=False):
        loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded(x).numpy() == want
    assert _runs(cc) == 0
    # On (the default): loading still does not; the first call compiles
    # the programs it runs.
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert _runs(cc) == 0
    np.testing.assert_allclose(loaded(x).numpy(), want, rtol=1e-6)
    assert _runs(cc) == 6


# ---- the bound ----

def test_the_cache_is_pruned_least_recently_used_first(tmp_path,
                                                       monkeypatch, cc):
    native = tmp_path / "native"
    native.mkdir(mode=0o700)
    old, new = native / "old.so", native / "new.so"
    for p, t in [(old, 1_000_000), (new, None)]:
        p.write_bytes(b"\0" * 100_000)
        if t:
            os.utime(p, (t, t))
    # Room for one of the two and the new program.
    monkeypatch.setenv("TFMINI_NATIVE_CACHE_MB", str(150_000 / 2**20))
    _check(monkeypatch, tmp_path, True)
    assert not old.exists() and new.exists()
    assert len(list(native.glob("*.so"))) == 2


def test_a_zero_bound_keeps_only_the_program_just_made(tmp_path,
                                                       monkeypatch, cc):
    monkeypatch.setenv("TFMINI_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TFMINI_NATIVE_CACHE_MB", "0")
    x = tf.constant(np.ones(BIG, np.float32))
    for k in range(3):
        fn = tf.function(lambda x, k=k: tf.nn.relu(x * (4.0 + k) - 1.0))
        fn(x)
        assert fn.get_concrete_function(x)._native_steps == 1
    assert [p.suffix for p in (tmp_path / "native").iterdir()] == [".so"]
