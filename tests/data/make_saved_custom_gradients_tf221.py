"""Prints TF 2.21's gradients through loaded functions that used
@tf.custom_gradient when saved, for tests/test_guidefix2.py's
TF_SAVED_CUSTOM_GRADIENTS literal. Run with TF's interpreter:
/work/tfvenv/bin/python tests/data/make_saved_custom_gradients_tf221.py

Saving and loading run in two processes (TF keeps custom gradients in
a process-wide registry, which would hide what the file holds); the
test runs the same SAVE and LOAD code with tfmini through run()."""
import json
import subprocess
import sys
import tempfile

SAVE = """
import sys
@tf.custom_gradient
def clip_gradients(y):
  def backward(dy):
    return tf.clip_by_norm(dy, 0.5)
  return y, backward
w = tf.Variable(3.0)
@tf.custom_gradient
def scaled(x):
  y = x * w
  def grad(dy, variables=None):
    return dy * 10.0, [dy * 100.0]
  return y, grad
class M(tf.Module):
  def __init__(self):
    self.w = w
  @tf.function(input_signature=[tf.TensorSpec(None)])
  def clip(self, x):
    return clip_gradients(x)
  @tf.function(input_signature=[tf.TensorSpec([])])
  def scaled(self, x):
    return scaled(x) * 2.0
  @tf.function
  def pair(self, x, n):
    return clip_gradients(x) * 3.0, n + 1
m = M()
m.pair(tf.constant([1.0, 2.0]), 1)
tf.saved_model.save(m, sys.argv[1], options=tf.saved_model.SaveOptions(
    experimental_custom_gradients=sys.argv[2] == "1"))
"""

LOAD = """
import json, sys
l = tf.saved_model.load(sys.argv[1])
x = tf.constant([3.0, 4.0])
with tf.GradientTape(persistent=True) as t:
  t.watch(x)
  a = l.clip(x * x)
  s = l.scaled(x[0])
  p, n = l.pair(x[:2] * 1.0, 1)
def safe(f):
  try:
    return f()
  except Exception as e:
    return type(e).__name__
print(json.dumps([
    safe(lambda: t.gradient(a, x).numpy().tolist()),
    safe(lambda: [g.numpy().tolist() for g in t.gradient(s, [x, l.w])]),
    safe(lambda: t.gradient(p, x).numpy().tolist()), int(n), float(s)]))
"""


def run(python, header, custom_gradients, env=None):
    """SAVE in one process and LOAD's printed result from another;
    header imports tf."""
    with tempfile.TemporaryDirectory() as d:
        flag = "1" if custom_gradients else "0"
        for code, args in ((SAVE, [d + "/m", flag]), (LOAD, [d + "/m"])):
            out = subprocess.run([python, "-c", header + code] + args,
                                 env=env, capture_output=True, text=True,
                                 timeout=600)
            if out.returncode:       # the exception's type
                last = (out.stderr.strip().splitlines() or [""])[-1]
                return "failed: " + last.split(":")[0]
    return json.loads(out.stdout.splitlines()[-1])


if __name__ == "__main__":
    tf_header = "import tensorflow as tf\n"
    print({flag: run(sys.executable, tf_header, flag)
           for flag in (True, False)})
