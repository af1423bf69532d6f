"""The C runtime (include/tfmini/tfmini.h, libtfmini_rt): models saved
from Python, loaded and run by C programs with no Python in them.
examples/c/predict.c must print what the Python model computes; several
threads running one model agree with one thread; bad files and misuse
are error statuses, never crashes (also under ASan + UBSan)."""
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import tfmini as tf
import tfmini.rt

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = ROOT / "include" / "tfmini" / "tfmini.h"
CC = os.environ.get("CC", "cc")


def _env():
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def _compile(src, out):
    try:
        tfmini.rt.get_library()
    except FileNotFoundError as e:
        pytest.fail(str(e))
    lib = tfmini.rt.get_lib()
    cmd = [CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", str(src),
           "-I" + tfmini.rt.get_include(), "-L" + lib, "-ltfmini_rt",
           "-lpthread", "-Wl,-rpath," + lib, "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
    return out


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt_bin")
    return {name: _compile(src, d / name) for name, src in [
        ("predict", ROOT / "examples" / "c" / "predict.c"),
        ("threads", ROOT / "tests" / "rt" / "threads.c"),
        ("errors", ROOT / "tests" / "rt" / "errors.c"),
        ("strings", ROOT / "tests" / "rt" / "strings.c")]}


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    tf.random.set_seed(3)
    model = tf.keras.Sequential([
        tf.keras.layers.Input((4,)),
        tf.keras.layers.Dense(8, activation="relu"),
        tf.keras.layers.Dense(3)])
    path = tmp_path_factory.mktemp("rt_mlp") / "1"
    tf.saved_model.save(model, str(path))
    return model, path


def _run(argv, **kw):
    r = subprocess.run([str(a) for a in argv], capture_output=True,
                       text=True, env=_env(), timeout=300, **kw)
    assert r.returncode >= 0, (f"{argv[0]} died of signal {-r.returncode}:"
                               f"\n{r.stdout}\n{r.stderr}")
    return r


def _outputs(stdout):
    """predict's outputs: {name: array}, from its header and row lines."""
    out, name, rows = {}, None, []
    for line in stdout.splitlines():
        if line.startswith("function "):
            continue
        if line.startswith("output"):
            if name:
                out[name] = np.array(rows)
            name, rows = line.split()[0], []
        else:
            rows.append([float(v) for v in line.split()])
    if name:
        out[name] = np.array(rows)
    return out


def test_packaged_header_is_the_source_header():
    packaged = pathlib.Path(tfmini.rt.get_include()) / "tfmini" / "tfmini.h"
    assert packaged.read_text() == HEADER.read_text(), (
        "tfmini/rt/include is stale: rebuild (setup.py build_ext)")


def test_predict_prints_the_python_models_predictions(progs, mlp):
    model, path = mlp
    x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
    r = _run([progs["predict"], path] + [repr(float(v)) for v in x.ravel()])
    assert r.returncode == 0, r.stderr
    assert ("function serving_default: in inputs float32 [?,4] out "
            "output_0 float32 [?,3]") in r.stdout
    got = _outputs(r.stdout)
    np.testing.assert_allclose(got["output_0"], model(x).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_predict_reads_stdin_and_names_signatures(progs, tmp_path):
    class M(tf.Module):
        def __init__(self):
            self.w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32),
                                      tf.TensorSpec([None, 2], tf.float32)])
        def f(self, a, b):
            return {"sum": a @ self.w + b, "prod": a * b}

    m = M()
    tf.saved_model.save(m, str(tmp_path), signatures={"other": m.f})
    a = np.array([[1, 2], [0.5, -1]], np.float32)
    b = np.array([[3, 4], [2, 2]], np.float32)
    r = _run([progs["predict"], tmp_path, "-s", "other"],
             input=" ".join(map(str, np.concatenate([a.ravel(),
                                                     b.ravel()]))))
    assert r.returncode == 0, r.stderr
    assert "function other: in a float32 [?,2] in b float32 [?,2]" in r.stdout
    got = _outputs(r.stdout)
    want = m.f(a, b)
    # Outputs come in the signature's key order, which the meta lists.
    np.testing.assert_allclose(got["output_0"], want["prod"].numpy())
    np.testing.assert_allclose(got["output_1"], want["sum"].numpy())
    r = _run([progs["predict"], tmp_path, "-s", "other", "1", "2", "3"])
    assert r.returncode == 1 and "rows of 4 values" in r.stderr, r.stderr
    r = _run([progs["predict"], tmp_path, "-s", "nope", "1"])
    assert r.returncode == 1 and "no function 'nope'" in r.stderr


def test_threads_running_one_model_agree(progs, tmp_path):
    # Big enough that the matmuls run with the runtime's lock released
    # (dispatch.c: 64Ki elements), so the runs really overlap.
    tf.random.set_seed(1)
    model = tf.keras.Sequential([
        tf.keras.layers.Input((256,)),
        tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(256, activation="tanh"),
        tf.keras.layers.Dense(4)])
    tf.saved_model.save(model, str(tmp_path))
    r = _run([progs["threads"], tmp_path, "serving_default", 4, 10, 512])
    assert r.returncode == 0 and "ok 40" in r.stdout, r.stderr
    r = _run([progs["threads"], tmp_path, "serving_default", 8, 50, 2])
    assert r.returncode == 0 and "ok 400" in r.stdout, r.stderr


def test_api_misuse_is_an_error_status(progs, mlp):
    r = _run([progs["errors"], mlp[1]])
    assert r.returncode == 0, r.stdout + r.stderr


def test_bad_model_files_are_clean_errors(progs, mlp, tmp_path):
    _, path = mlp
    data = (path / "saved_model.tfm").read_bytes()
    r = _run([progs["predict"], tmp_path / "missing"])
    assert r.returncode == 1 and "NotFoundError" in r.stderr, r.stderr
    cases = {"truncated": data[:len(data) // 2],
             "flipped": data[:100] + bytes([data[100] ^ 0x40]) + data[101:],
             "empty": b"", "text": b"not a model\n" * 10}
    for name, blob in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "saved_model.tfm").write_bytes(blob)
        r = _run([progs["predict"], d, "1", "2", "3", "4"])
        assert r.returncode == 1, (name, r.stdout, r.stderr)
        assert "DataLossError" in r.stderr, (name, r.stderr)


def _asan_build(tmp):
    """errors.c and threads.c linked with the runtime under ASan+UBSan,
    reusing tests/c's sanitized core library."""
    tests_c = ROOT / "tests" / "c"
    r = subprocess.run(["make", "-C", str(tests_c), f"-j{os.cpu_count()}",
                        "build/sanitize/libtfmini.a", "SANITIZE=1"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-fopenmp",
             "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    rt = sorted((ROOT / "csrc" / "rt").glob("*.c"))
    out = {}
    for prog in ["errors", "threads", "strings"]:
        exe = tmp / prog
        cmd = (["gcc", "-std=c11", "-D_GNU_SOURCE", "-I" + str(ROOT / "csrc"),
                "-I" + str(ROOT / "include")] + flags
               + [str(s) for s in rt] + [str(ROOT / "tests" / "rt" /
                                         f"{prog}.c"), "-x", "none",
                                         str(tests_c / "build" / "sanitize" /
                                             "libtfmini.a"),
                                         "-o", str(exe), "-lstdc++", "-lm",
                                         "-lpthread"])
        r = subprocess.run(cmd, capture_output=True, text=True, env=_env())
        assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr[-3000:]
        out[prog] = exe
    return out


def test_runtime_under_asan(mlp, tmp_path):
    exes = _asan_build(tmp_path)
    env = _env()
    env["ASAN_OPTIONS"] = "detect_leaks=1:halt_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    strings_model = tmp_path / "strings_model"
    _string_model(strings_model, regex=False)  # tests/c builds no PCRE2
    for argv in [[exes["errors"], mlp[1]],
                 [exes["threads"], mlp[1], "serving_default", 4, 20, 3],
                 [exes["strings"], strings_model, "f", "héllo", "", "a b"]]:
        r = subprocess.run([str(a) for a in argv], capture_output=True,
                           text=True, env=env, timeout=300)
        out = r.stdout + r.stderr
        if "LeakSanitizer has encountered a fatal error" in out:
            env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1"
            r = subprocess.run([str(a) for a in argv], capture_output=True,
                               text=True, env=env, timeout=300)
            out = r.stdout + r.stderr
        assert r.returncode == 0, out[-6000:]


@pytest.mark.slow
def test_make_rt_builds_the_library_alone(tmp_path):
    r = subprocess.run(["make", "-C", str(ROOT / "csrc"), "rt",
                        f"-j{os.cpu_count()}", f"BUILD={tmp_path}"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr[-3000:]
    nm = subprocess.run(["nm", "-D", "--defined-only",
                         str(tmp_path / "libtfmini_rt.so")],
                        capture_output=True, text=True).stdout
    names = {l.split()[-1] for l in nm.splitlines() if " T " in l}
    assert "tfmini_model_run" in names
    assert not [n for n in names if n.startswith("tfm_")], names


def test_keras_export_writes_what_predict_runs(progs, tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Input((4,)),
                                 tf.keras.layers.Dense(2)])
    model.export(str(tmp_path / "1"), verbose=False)
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    r = _run([progs["predict"], tmp_path / "1"] + [str(v) for v in x.ravel()])
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(_outputs(r.stdout)["output_0"],
                               model(x).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not built"):
        tf.keras.Sequential([tf.keras.layers.Dense(2)]).export(
            str(tmp_path / "2"))
    with pytest.raises(ValueError, match="format 'onnx'"):
        model.export(str(tmp_path / "3"), format="onnx")


# ---- string inputs and outputs (TFMINI_STRING, since 1.1) -------------

def _string_model(path, regex=True):
    class S(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def f(self, x):
            words = tf.strings.regex_replace(x, " ", "_") if regex else x
            return {"n": tf.strings.length(x, unit="UTF8_CHAR"),
                    "up": tf.strings.upper(x) + "!",
                    "words": tf.strings.reduce_join(words, separator="|")}

    tf.saved_model.save(S(), str(path))


def _string_outputs(stdout):
    """strings' outputs: [(dtype, [elements])]; strings as bytes."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("output "):
            out.append((line.split()[2], []))
        elif out:
            if out[-1][0] == "string":
                n, hexed = line.split(":")
                b = bytes.fromhex(hexed)
                assert len(b) == int(n)
                out[-1][1].append(b)
            else:
                out[-1][1].append(int(line))
    return out


def test_string_model_runs_from_c(progs, tmp_path):
    _string_model(tmp_path)
    args = ["héllo", "", "a b"]
    r = _run([progs["strings"], tmp_path, "f"] + args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAILED" not in r.stdout
    got = _string_outputs(r.stdout)
    ld = tf.saved_model.load(str(tmp_path))
    want = ld.f(tf.constant(args))
    # Outputs in the order of the traced function's (sorted) keys.
    by_dtype = {d: v for d, v in got}
    assert by_dtype["int32"] == want["n"].numpy().tolist() == [5, 0, 3]
    strs = [v for d, v in got if d == "string"]
    assert [b"H\xc3\xa9LLO!", b"!", b"A B!"] in strs
    assert want["up"].numpy().tolist() in strs
    assert [want["words"].numpy()] in strs
    assert want["words"].numpy() == "héllo||a_b".encode()


def test_string_input_to_a_float_model_is_an_error(progs, mlp):
    # A float32 [?, 4] model fed a string tensor: a dtype error naming
    # both, not a crash.
    r = _run([progs["strings"], mlp[1], "serving_default", "x"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED" not in r.stdout
    assert "InvalidArgumentError" in r.stderr
    assert "string" in r.stderr and "float32" in r.stderr


def test_header_version_is_1_1():
    text = HEADER.read_text()
    assert "#define TFMINI_RT_VERSION_MINOR 1" in text
    assert "TFMINI_STRING = 9" in text
