"""tf.summary and keras.callbacks.TensorBoard: the event files are read
back with tensorboard's own EventAccumulator and served by a real
`tensorboard` process."""
import io
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
import pytest

import tfmini as tf

pytest.importorskip("tensorboard")
pytest.importorskip("google.protobuf")

from tensorboard.backend.event_processing.event_accumulator import (  # noqa
    EventAccumulator)
from tensorboard.compat.proto import config_pb2  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402


def _read(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def _values(acc, tag):
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto))
            for e in acc.Tensors(tag)]


def _plugin(acc, tag):
    return acc.SummaryMetadata(tag).plugin_data.plugin_name


@pytest.fixture
def writer(tmp_path):
    w = tf.summary.create_file_writer(str(tmp_path / "run"))
    yield w
    w.close()


# ---- scalars and steps ----------------------------------------------------

def test_scalars_steps_and_plugin(tmp_path, writer):
    with writer.as_default(step=5):
        assert tf.summary.scalar("a", 1.5)
        assert tf.summary.scalar("a", tf.constant(2.5), step=7)
        with tf.name_scope("block"):
            tf.summary.scalar("b", np.float64(0.25), step=1)
        step = tf.Variable(3, dtype=tf.int64)
        tf.summary.scalar("c", 4, step=step)
        step.assign(4)
        tf.summary.scalar("c", 5, step=step)
    acc = _read(tmp_path / "run")
    assert [(s, float(v)) for s, v in _values(acc, "a")] == [(5, 1.5),
                                                             (7, 2.5)]
    assert _values(acc, "a")[0][1].dtype == np.float32
    assert [(s, float(v)) for s, v in _values(acc, "block/b")] == [(1, .25)]
    assert [(s, float(v)) for s, v in _values(acc, "c")] == [(3, 4.),
                                                             (4, 5.)]
    assert _plugin(acc, "a") == "scalars"


def test_as_default_restores_writer_and_step(tmp_path, writer):
    tf.summary.experimental.set_step(None)
    with writer.as_default(step=2):
        assert tf.summary.experimental.get_step() == 2
        assert tf.summary.should_record_summaries()
    assert tf.summary.experimental.get_step() is None
    assert not tf.summary.should_record_summaries()
    tf.summary.experimental.set_step(9)
    try:
        with writer.as_default():
            tf.summary.scalar("s", 1.0)
    finally:
        tf.summary.experimental.set_step(None)
    assert _values(_read(tmp_path / "run"), "s")[0][0] == 9


def test_no_default_writer_writes_nothing(tmp_path):
    assert tf.summary.scalar("x", 1.0, step=0) is False
    assert tf.summary.histogram("x", [1.0], step=0) is False
    assert tf.summary.text("x", "hi") is False  # no step needed either
    assert tf.summary.write("x", 1.0) is False
    noop = tf.summary.create_noop_writer()
    with noop.as_default(step=1):
        assert tf.summary.scalar("x", 1.0) is False


def test_step_errors(writer):
    with writer.as_default():
        with pytest.raises(ValueError, match="No step set"):
            tf.summary.scalar("x", 1.0)
        with pytest.raises(ValueError, match="step must be a scalar"):
            tf.summary.scalar("x", 1.0, step=[1, 2])
        with pytest.raises(TypeError, match="step must be an integer"):
            tf.summary.scalar("x", 1.0, step=1.5)
        with pytest.raises(ValueError, match=r"'x'.*scalar, got shape \[3\]"):
            tf.summary.scalar("x", [1.0, 2.0, 3.0], step=0)
        with tf.summary.record_if(False):   # not recorded: no step needed
            assert tf.summary.scalar("x", 1.0) is False


def test_record_if(tmp_path, writer):
    calls = []

    def every_other():
        calls.append(1)
        return len(calls) % 2 == 1

    with writer.as_default():
        with tf.summary.record_if(False):
            assert not tf.summary.should_record_summaries()
            assert tf.summary.scalar("a", 1.0, step=0) is False
            with tf.summary.record_if(tf.constant(True)):
                assert tf.summary.scalar("a", 2.0, step=1)
            assert tf.summary.scalar("a", 3.0, step=2) is False
        with tf.summary.record_if(every_other):
            for i in range(4):
                tf.summary.scalar("b", float(i), step=i)
        # A deferred tensor is only computed when it is recorded.
        with tf.summary.record_if(False):
            tf.summary.write("c", lambda: 1 / 0, step=0)
    acc = _read(tmp_path / "run")
    assert [s for s, _ in _values(acc, "a")] == [1]
    assert [s for s, _ in _values(acc, "b")] == [0, 2]
    assert "c" not in acc.Tags()["tensors"]


def test_write_with_metadata_bytes(tmp_path, writer):
    from tensorboard.plugins.scalar import metadata
    md = metadata.create_summary_metadata("shown", "a description")
    with writer.as_default(step=3):
        assert tf.summary.write("w", lambda: np.float32(2.0),
                                metadata=md.SerializeToString())
        tf.summary.write("raw", np.arange(6).reshape(2, 3))
    acc = _read(tmp_path / "run")
    assert float(_values(acc, "w")[0][1]) == 2.0
    assert acc.SummaryMetadata("w").summary_description == "a description"
    step, raw = _values(acc, "raw")[0]
    assert step == 3
    np.testing.assert_array_equal(raw, np.arange(6).reshape(2, 3))


def test_flush_close_and_file_name(tmp_path):
    w = tf.summary.create_file_writer(str(tmp_path / "run"),
                                      flush_millis=10 ** 7)
    try:
        w.set_as_default(step=0)
        tf.summary.create_noop_writer().set_as_default()   # changes nothing
        tf.summary.scalar("f", 1.0)
        tf.summary.flush()
        assert _values(_read(tmp_path / "run"), "f")
    finally:
        w.close()      # and no longer the default writer
    assert not tf.summary.should_record_summaries()
    with pytest.raises(RuntimeError, match="already closed"):
        with w.as_default():
            pass
    names = os.listdir(tmp_path / "run")
    assert len(names) == 1 and names[0].startswith("events.out.tfevents.")
    assert names[0].endswith(".v2")
    tf.summary.experimental.set_step(None)


# ---- histograms, images, text ---------------------------------------------

def test_histogram_matches_tensorboards_rule(tmp_path, writer):
    from tensorboard.plugins.histogram.summary_v2 import histogram_pb
    rng = np.random.default_rng(0)
    data = rng.normal(size=(20, 50)).astype(np.float32)
    with writer.as_default(step=4):
        tf.summary.histogram("h", tf.constant(data))
        tf.summary.histogram("h7", data, buckets=7)
        tf.summary.histogram("same", np.full(10, 3.0), buckets=4)
        tf.summary.histogram("empty", np.zeros(0), buckets=5)
    acc = _read(tmp_path / "run")
    assert _plugin(acc, "h") == "histograms"
    for tag, k in (("h", 30), ("h7", 7)):
        step, rows = _values(acc, tag)[0]
        expected = tensor_util.make_ndarray(
            histogram_pb(tag, data, buckets=k).value[0].tensor)
        assert step == 4 and rows.shape == (k, 3)
        np.testing.assert_allclose(rows, expected, rtol=1e-12)
        assert rows[:, 2].sum() == data.size
        assert rows[0, 0] == data.min() and rows[-1, 1] == data.max()
    same = _values(acc, "same")[0][1]
    np.testing.assert_array_equal(same, [[3, 3, 0]] * 3 + [[3, 3, 10]])
    np.testing.assert_array_equal(_values(acc, "empty")[0][1],
                                  np.zeros((5, 3)))


def test_histogram_bad_data(writer):
    with writer.as_default(step=0):
        with pytest.raises(ValueError, match="'bad'.*NaN or Inf"):
            tf.summary.histogram("bad", [1.0, np.nan])
        with pytest.raises(TypeError, match="numeric"):
            tf.summary.histogram("s", np.array(["a"]))


def _decode(png):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)))


def test_images_uint8_float_and_max_outputs(tmp_path, writer):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(4, 5, 6, 3), dtype=np.uint8)
    grey = np.linspace(-0.5, 1.5, 2 * 3 * 4).reshape(2, 3, 4, 1)
    with writer.as_default(step=2):
        tf.summary.image("rgb", rgb)           # max_outputs=3
        tf.summary.image("grey", tf.constant(grey, tf.float32),
                         max_outputs=5)
    acc = _read(tmp_path / "run")
    assert _plugin(acc, "rgb") == "images"
    step, rows = _values(acc, "rgb")[0]
    assert step == 2 and rows.shape == (2 + 3,)
    assert rows[0] == b"6" and rows[1] == b"5"     # width, height
    for i in range(3):
        np.testing.assert_array_equal(_decode(rows[2 + i]), rgb[i])
    rows = _values(acc, "grey")[0][1]
    assert rows.shape == (2 + 2,)
    # TF's float -> uint8: clip(x * 255.5) truncated.
    want = np.clip(grey.astype(np.float32) * 255.5, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(_decode(rows[2]), want[0, ..., 0])
    np.testing.assert_array_equal(_decode(rows[3]), want[1, ..., 0])


def test_image_bad_shape(writer):
    with writer.as_default(step=0):
        with pytest.raises(ValueError, match=r"'im'.*\[k, h, w, c\].*"
                                             r"\[2, 3, 4, 5\]"):
            tf.summary.image("im", np.zeros((2, 3, 4, 5)))
        with pytest.raises(ValueError, match=r"got shape \[3, 4\]"):
            tf.summary.image("im", np.zeros((3, 4)))


def test_text(tmp_path, writer):
    with writer.as_default(step=1):
        tf.summary.text("t", "hello **world**")
        tf.summary.text("table", [["a", "b"], ["c", "é"]], step=6)
        with pytest.raises(TypeError, match="'n'.*strings"):
            tf.summary.text("n", np.arange(3))
    acc = _read(tmp_path / "run")
    assert _plugin(acc, "t") == "text"
    step, v = _values(acc, "t")[0]
    assert step == 1 and v == b"hello **world**"
    step, v = _values(acc, "table")[0]
    assert step == 6 and v.tolist() == [[b"a", b"b"],
                                        [b"c", "é".encode()]]


# ---- inside tf.function -----------------------------------------------------

def test_scalars_and_histograms_inside_tf_function(tmp_path, writer):
    rng = np.random.default_rng(2)
    batches = [rng.normal(size=(5, 7)) for _ in range(3)]    # float64
    step = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def train(x):
        step.assign_add(1)
        loss = tf.reduce_mean(tf.cast(x, tf.float32) ** 2)
        tf.summary.scalar("loss", loss, step=step)
        tf.summary.histogram("x", x, step=step, buckets=6)
        with tf.name_scope("fixed"):
            tf.summary.scalar("third", 1.0 / 3.0, step=7)
        return loss

    with writer.as_default():
        losses = [train(tf.constant(b)).numpy() for b in batches]
    # Eager twins of the same summaries, for exact comparison.
    with writer.as_default():
        for i, b in enumerate(batches):
            tf.summary.histogram("x_eager", b, step=i + 1, buckets=6)
    acc = _read(tmp_path / "run")
    got = _values(acc, "loss")
    assert [s for s, _ in got] == [1, 2, 3]
    # Exact: the float32 values come back bit for bit.
    np.testing.assert_array_equal([v for _, v in got], losses)
    for (s1, h1), (s2, h2) in zip(_values(acc, "x"),
                                  _values(acc, "x_eager")):
        assert s1 == s2
        np.testing.assert_array_equal(h1, h2)
    assert [s for s, _ in _values(acc, "fixed/third")] == [7, 7, 7]
    assert float(_values(acc, "fixed/third")[0][1]) == np.float32(1 / 3)
    assert _plugin(acc, "loss") == "scalars"
    assert _plugin(acc, "x") == "histograms"


def test_tf_function_summary_limits(tmp_path, writer):
    @tf.function
    def f(x):
        tf.summary.scalar("x", x, step=0)
        return x + 1

    # No default writer at trace time: nothing is traced or written.
    assert float(f(tf.constant(1.0))) == 2.0

    @tf.function
    def g(x):
        tf.summary.scalar("x", x, step=0)
        return x + 1

    with writer.as_default(), tf.summary.record_if(False):
        g(tf.constant(1.0))        # traced not recording: never writes
    with writer.as_default():
        g(tf.constant(2.0))
    assert "x" not in _read(tmp_path / "run").Tags()["tensors"]

    @tf.function
    def image(x):
        tf.summary.image("im", x, step=0)
        return x

    @tf.function
    def vector(x):
        tf.summary.scalar("v", x, step=0)
        return x

    @tf.function
    def no_step(x):
        tf.summary.scalar("v", x)
        return x

    @tf.function
    def tensor_condition(x):
        with tf.summary.record_if(x > 0):
            tf.summary.scalar("v", x, step=0)
        return x

    with writer.as_default():
        with pytest.raises(NotImplementedError, match="inside a tf.function"):
            image(tf.zeros([1, 2, 2, 1]))
        with pytest.raises(ValueError, match=r"'v'.*scalar, got shape \[2\]"):
            vector(tf.constant([1.0, 2.0]))
        with pytest.raises(ValueError, match="No step set"):
            no_step(tf.constant(1.0))
        with pytest.raises(NotImplementedError, match="tensor condition"):
            tensor_condition(tf.constant(1.0))


# ---- graphs -----------------------------------------------------------------

def _node_names(graph_def):
    return {n.name: n.op for n in graph_def.node}


def test_trace_export_writes_traced_graphs(tmp_path, writer):
    @tf.function
    def before(x):
        return x - 1

    before(tf.constant(1.0))

    @tf.function
    def scaled(x):
        return tf.reduce_sum(x * 2.0 + 1.0)

    with pytest.raises(ValueError, match="Must enable trace"):
        tf.summary.trace_export("nothing", step=0)
    with writer.as_default():
        tf.summary.trace_on(graph=True, profiler=False)
        before(tf.constant(2.0))     # cached: not traced again
        scaled(tf.constant([1.0, 2.0]))
        tf.summary.trace_export("my_trace", step=3)
        with pytest.raises(ValueError, match="Must enable trace"):
            tf.summary.trace_export("again", step=0)
    acc = _read(tmp_path / "run")
    assert _plugin(acc, "my_trace") == "graph_run_metadata_graph"
    step, blob = _values(acc, "my_trace")[0]
    assert step == 3
    run_metadata = config_pb2.RunMetadata.FromString(blob.item())
    assert len(run_metadata.function_graphs) == 1
    nodes = _node_names(run_metadata.function_graphs[0].pre_optimization_graph)
    assert nodes["x"] == "Placeholder"
    assert {"Mul", "AddV2", "Sum"} <= set(nodes.values())
    assert run_metadata.function_graphs[0].post_optimization_graph.node
    with pytest.raises(NotImplementedError, match="profiler"):
        tf.summary.trace_on(profiler=True)


def test_graph_summary(tmp_path, writer):
    @tf.function
    def f(x):
        return tf.nn.relu(x) * 3.0

    concrete = f.get_concrete_function(tf.TensorSpec([None, 2], tf.float32))
    with writer.as_default():
        assert tf.summary.graph(concrete.graph)
    graph = _read(tmp_path / "run").Graph()
    nodes = _node_names(graph)
    assert "Relu" in nodes.values() and "Mul" in nodes.values()
    mul = [n for n in graph.node if n.op == "Mul"][0]
    relu = [n for n in graph.node if n.op == "Relu"][0]
    assert relu.name in mul.input
    shape = mul.attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [-1, 2]
    with pytest.raises(TypeError, match="graph_data"):
        with writer.as_default():
            tf.summary.graph("not a graph")


# ---- keras.callbacks.TensorBoard -------------------------------------------

def _fit(log_dir, epochs=2, **kwargs):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile("adam", "mse", metrics=["mae"])
    cb = tf.keras.callbacks.TensorBoard(str(log_dir), **kwargs)
    history = model.fit(x, y, batch_size=16, epochs=epochs,
                        validation_split=0.25, callbacks=[cb], verbose=0)
    return model, history


def test_keras_callback_epoch_batch_histograms_graph(tmp_path):
    model, history = _fit(tmp_path, histogram_freq=1, update_freq=2)
    assert sorted(os.listdir(tmp_path)) == ["train", "validation"]
    train, val = _read(tmp_path / "train"), _read(tmp_path / "validation")
    for acc, prefix in ((train, ""), (val, "val_")):
        for name in ("loss", "mae"):
            got = _values(acc, "epoch_" + name)
            assert [s for s, _ in got] == [0, 1]
            np.testing.assert_allclose(
                [float(v) for _, v in got], history.history[prefix + name],
                rtol=1e-6)
    # 3 training batches per epoch (48 examples / 16): global batches 1..6,
    # written every 2.
    assert [s for s, _ in _values(train, "batch_loss")] == [2, 4, 6]
    assert "batch_loss" not in val.Tags()["tensors"]
    assert [s for s, _ in _values(train, "epoch_learning_rate")] == [0, 1]
    kernels = [t for t in train.Tags()["tensors"]
               if t.endswith("kernel/histogram")]
    assert len(kernels) == 2
    step, rows = _values(train, kernels[-1])[-1]
    assert step == 1 and rows[:, 2].sum() == 4   # the 4x1 kernel
    assert _plugin(train, kernels[0]) == "histograms"
    nodes = _node_names(train.Graph())
    assert {"BatchMatMulV2", "Relu",
            "AssignAddVariableOp"} <= set(nodes.values())
    iters = _values(val, "evaluation_loss_vs_iterations")
    assert [s for s, _ in iters] == [3, 6]


def test_keras_callback_epoch_only(tmp_path):
    _fit(tmp_path, epochs=1, write_graph=False)
    train = _read(tmp_path / "train")
    tags = train.Tags()
    assert "epoch_loss" in tags["tensors"]
    assert not any(t.startswith("batch_") for t in tags["tensors"])
    assert not any(t.endswith("/histogram") for t in tags["tensors"])
    assert not tags["graph"]
    with pytest.raises(ValueError, match="update_freq"):
        tf.keras.callbacks.TensorBoard(str(tmp_path), update_freq="often")


# ---- without the optional packages -----------------------------------------

def test_without_tensorboard_or_protobuf(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        for name in ("tensorboard", "google.protobuf"):
            sys.modules[name] = None
        import tfmini as tf
        assert float(tf.reduce_sum(tf.constant([1.0, 2.0]))) == 3.0
        assert tf.summary.scalar("x", 1.0, step=0) is False
        with tf.summary.create_noop_writer().as_default():
            pass
        logdir = {str(tmp_path)!r}
        for make in (lambda: tf.summary.create_file_writer(logdir),
                     lambda: tf.keras.callbacks.TensorBoard(logdir)):
            try:
                make()
            except ImportError as e:
                assert "'protobuf'" in str(e) and "pip install" in str(e), e
            else:
                raise SystemExit("no ImportError")
        del sys.modules["google.protobuf"]
        import google.protobuf  # noqa: F401
        try:
            tf.summary.create_file_writer(logdir)
        except ImportError as e:
            assert "'tensorboard' package is not installed" in str(e), e
        else:
            raise SystemExit("no ImportError")
        print("ok")
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")
    assert not os.listdir(tmp_path)


# ---- a real TensorBoard server --------------------------------------------

def _get(port, path, timeout=5):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                timeout=timeout) as r:
        return r.read()


def test_tensorboard_server_reads_scalars_and_graph(tmp_path):
    w = tf.summary.create_file_writer(str(tmp_path / "run1"))
    with w.as_default():
        for i in range(3):
            tf.summary.scalar("loss", 1.0 / (i + 1), step=i)
        tf.summary.trace_on(graph=True)

        @tf.function
        def served(x):
            return tf.nn.relu(x) + 1.0

        served(tf.constant([1.0, -1.0]))
        tf.summary.trace_export("served_trace", step=0)
    w.close()

    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir",
         str(tmp_path), "--port", "0", "--host", "127.0.0.1",
         "--reload_interval", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    deadline = time.monotonic() + 60
    try:
        port, seen = None, []
        while port is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else None
        assert port, "".join(seen)
        query = urllib.parse.urlencode({"run": "run1", "tag": "loss"})
        points = None
        while time.monotonic() < deadline:
            try:
                points = __import__("json").loads(
                    _get(port, "/data/plugin/scalars/scalars?" + query))
                if len(points) == 3:
                    break
            except (urllib.error.URLError, ConnectionError, ValueError):
                pass
            time.sleep(0.3)
        assert points is not None and len(points) == 3, points
        assert [p[1] for p in points] == [0, 1, 2]
        np.testing.assert_allclose([p[2] for p in points],
                                   [1.0, 0.5, 1 / 3], rtol=1e-6)
        query = urllib.parse.urlencode({"run": "run1",
                                        "tag": "served_trace"})
        graph = _get(port, "/data/plugin/graphs/graph?" + query).decode()
        assert 'op: "Relu"' in graph and 'op: "Placeholder"' in graph
        assert 'op: "AddV2"' in graph
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        proc.stdout.close()
