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
