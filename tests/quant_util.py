"""Helpers shared by the tf.lite and quantized-op tests: calling a C op
by its TF name, past the Python API (the quantized ops have no public
wrapper), and running a case on the int8 GEMM's portable loops."""
import os
import subprocess
import sys

import numpy as np

import tfmini as tf
from tfmini import _C

OPS = {row[0]: k for k, row in enumerate(_C.op_table())}
TESTS = os.path.dirname(os.path.abspath(__file__))


def call(op, inputs, **kw):
    """Runs op `op` (its TF name) on `inputs`, NumPy arrays made
    constants first, with the attributes in `kw` (ints, i, f, dtype);
    returns its first output as a NumPy array."""
    r = _C.call(OPS[op], tuple(tf.constant(x) if isinstance(x, np.ndarray)
                               else x for x in inputs), **kw)
    return np.asarray(r[0] if isinstance(r, (tuple, list)) else r)


def on_portable_gemm(module, case):
    """tests/<module>.py's case() in a child process with
    TFMINI_QGEMM_REF=1, the GEMM's plain loops (what a CPU without
    AVX512-VNNI and the wasm build run); it must print "ok"."""
    code = ("import sys; sys.path.insert(0, %r); import %s as t; "
            "print(t.%s())" % (TESTS, module, case))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=300,
                       env=dict(os.environ, TFMINI_QGEMM_REF="1"))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr


def lite_predict(content, x):
    """Run a converted model's first signature on x through the
    tf.lite.Interpreter API (resized to x's shape)."""
    it = tf.lite.Interpreter(model_content=content)
    d = it.get_input_details()[0]
    it.resize_tensor_input(d["index"], x.shape)
    it.allocate_tensors()
    it.set_tensor(d["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def build_c_predict(tmp_path):
    """examples/c/predict.c compiled against libtfmini_rt into tmp_path;
    returns the executable's path."""
    import tfmini.rt
    lib = tfmini.rt.get_lib()
    exe = os.path.join(str(tmp_path), "predict")
    r = subprocess.run(
        [os.environ.get("CC", "cc"), "-std=c11", "-O1",
         os.path.join(TESTS, "..", "examples", "c", "predict.c"),
         "-I" + tfmini.rt.get_include(), "-L" + lib, "-ltfmini_rt",
         "-lpthread", "-Wl,-rpath," + lib, "-o", exe],
        capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


def c_predict(exe, model_dir, x):
    """The rows the C example prints for the saved model in model_dir
    on input x (its values as arguments), as an array."""
    r = subprocess.run([exe, str(model_dir)] + [repr(float(v))
                                                 for v in x.ravel()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return np.array([[float(v) for v in line.split()]
                     for line in r.stdout.splitlines()
                     if line and not line.startswith(("function", "output"))])
