"""The digits CNN's speed (examples/web/make_model.py's shapes,
untrained weights: the time does not depend on their values) in float,
dynamic-range and full-int8 form, batch 1 and 64, 1 OpenMP thread.

    python3 benchmarks/quant_cnn_speed.py [ROUNDS [FORM]]

Medians of 300 / 100 calls; with ROUNDS > 1 the forms take turns and
each figure is the median of its rounds. PROFILE=64 (a batch size)
instead runs the last form for 15 s, for perf record.
TFMINI_QCONV_IM2COL=1 turns the direct int8 conv off."""
import os, sys, pathlib, tempfile, time
import numpy as np
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tfmini as tf
from tfmini import _C
_C.set_num_threads(1)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
only = sys.argv[2] if len(sys.argv) > 2 else None

def med(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))

tf.random.set_seed(0)
m = tf.keras.Sequential([
    tf.keras.layers.Input((8, 8, 1)),
    tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
    tf.keras.layers.MaxPooling2D(2),
    tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(10, activation="softmax")])
rng = np.random.default_rng(0)
x = rng.uniform(0, 16, (1000, 8, 8, 1)).astype(np.float32)
tmp = tempfile.mkdtemp()
p = os.path.join(tmp, "cnn"); tf.saved_model.save(m, p)
c = tf.lite.TFLiteConverter.from_saved_model(p)
forms = [("float32", pathlib.Path(p, "saved_model.tfm").read_bytes())]
c.optimizations = [tf.lite.Optimize.DEFAULT]
forms.append(("dynamic", c.convert()))
c.representative_dataset = lambda: ([x[i:i+1]] for i in range(0, 1000, 5))
c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
forms.append(("int8", c.convert()))
calls = []
for form, content in forms:
    if only and form != only: continue
    d = os.path.join(tmp, form); os.makedirs(d)
    pathlib.Path(d, "saved_model.tfm").write_bytes(content)
    fn = tf.saved_model.load(d).signatures["serving_default"]
    calls.append((form, fn))
if os.environ.get("PROFILE"):
    fn = calls[-1][1]
    xb = x[:int(os.environ["PROFILE"])]
    t = time.time()
    while time.time() - t < 15: fn(inputs=xb)
    sys.exit()
times = {f: ([], []) for f, _ in calls}
for _ in range(rounds):
    for f, fn in calls:
        times[f][0].append(med(lambda: fn(inputs=x[:1]), 300))
        times[f][1].append(med(lambda: fn(inputs=x[:64]), 100))
for f, _ in calls:
    print(f"{f:10s} b1 {np.median(times[f][0]):.4f} ms  b64 {np.median(times[f][1]):.4f} ms")
