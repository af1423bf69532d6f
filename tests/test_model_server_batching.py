"""tfmini_model_server's server-side batching (--enable_batching,
tools/serving/batch.c): concurrent predicts give the predictions they
give unbatched, a full batch runs at once and a partial one when its
timeout expires, and requests that cannot share a run (bad shapes,
outputs without a batch dimension) still get their own answer."""
import json
import threading
import time

import numpy as np
import pytest

import tfmini as tf
from test_model_server import (Server, _mlp, exported_mlp,  # noqa: F401
                               server_bin)

RNG = np.random.RandomState(3)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return exported_mlp(tmp_path_factory, "batching", 11)


def _concurrently(server, bodies):
    """Send bodies at once from one thread each; [(code, reply, secs)]."""
    results = [None] * len(bodies)
    gate = threading.Barrier(len(bodies))

    def send(i):
        gate.wait()
        t0 = time.time()
        code, reply = server.predict(bodies[i])
        results[i] = (code, reply, time.time() - t0)

    threads = [threading.Thread(target=send, args=(i,))
               for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_rows_match_unbatched(server_bin, base):
    path, model = base
    x = RNG.randn(24, 4).astype(np.float32)
    want = model(x).numpy()
    plain = Server(server_bin, "mlp", path)
    try:
        unbatched = [plain.predict({"instances": [r]})[1]["predictions"][0]
                     for r in x.tolist()]
    finally:
        plain.stop()
    s = Server(server_bin, "mlp", path, "--enable_batching",
               "--max_batch_size=8", "--batch_timeout_micros=20000",
               "--num_batch_threads=2")
    try:
        # Row and columnar bodies, one row or several, in one stream.
        bodies = [{"instances": [r]} for r in x[:16].tolist()]
        bodies += [{"inputs": x[16:19].tolist()},
                   {"inputs": x[19:24].tolist()}]
        got = _concurrently(s, bodies)
    finally:
        s.stop()
    for i, (code, reply, _) in enumerate(got[:16]):
        assert code == 200, reply
        np.testing.assert_allclose(reply["predictions"][0], unbatched[i],
                                   rtol=1e-5, atol=1e-6)
    assert got[16][0] == 200 and got[17][0] == 200
    np.testing.assert_allclose(
        np.concatenate([got[16][1]["outputs"], got[17][1]["outputs"]]),
        want[16:], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(unbatched, want, rtol=1e-5, atol=1e-6)


def test_full_batch_runs_at_once_and_timeout_flushes_a_partial_one(
        server_bin, base):
    path, model = base
    s = Server(server_bin, "mlp", path, "--enable_batching",
               "--max_batch_size=4", "--batch_timeout_micros=2000000",
               "--num_batch_threads=1")
    try:
        x = RNG.randn(4, 4).astype(np.float32)
        # Alone, a request waits out the timeout for company, then runs.
        t0 = time.time()
        code, reply = s.predict({"instances": x[:1].tolist()})
        waited = time.time() - t0
        assert code == 200 and 1.9 < waited < 10, (code, waited)
        np.testing.assert_allclose(reply["predictions"], model(x[:1]),
                                   rtol=1e-5, atol=1e-6)
        # Four rows fill the batch: one run, long before the timeout
        # (run one by one they would take 4 timeouts).
        got = _concurrently(s, [{"instances": [r]} for r in x.tolist()])
        assert all(code == 200 for code, _, _ in got), got
        assert max(secs for _, _, secs in got) < 1.5, got
        np.testing.assert_allclose([r["predictions"][0] for _, r, _ in got],
                                   model(x), rtol=1e-5, atol=1e-6)
    finally:
        s.stop()


def test_bad_shape_in_a_batch_fails_alone(server_bin, base):
    path, model = base
    s = Server(server_bin, "mlp", path, "--enable_batching",
               "--max_batch_size=16", "--batch_timeout_micros=200000")
    try:
        x = RNG.randn(6, 4).astype(np.float32)
        bodies = [{"instances": [r]} for r in x.tolist()]
        bodies.insert(2, {"instances": [[1.0, 2.0, 3.0]]})
        bodies.insert(4, {"instances": [[1.0, 2.0, 3.0]]})
        got = _concurrently(s, bodies)
        bad = [got.pop(4), got.pop(2)]
        for code, reply, _ in bad:
            assert code == 400 and "shape [?,4]" in reply["error"], reply
        assert all(code == 200 for code, _, _ in got), got
        np.testing.assert_allclose([r["predictions"][0] for _, r, _ in got],
                                   model(x), rtol=1e-5, atol=1e-6)
    finally:
        s.stop()


def test_outputs_without_a_batch_dimension_are_not_mixed(server_bin,
                                                         tmp_path):
    class Total(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def f(self, x):
            return {"total": tf.reduce_sum(x)}

    tf.saved_model.save(Total(), str(tmp_path / "base" / "1"))
    s = Server(server_bin, "total", tmp_path / "base", "--enable_batching",
               "--batch_timeout_micros=200000")
    try:
        xs = [RNG.randn(k, 2).astype(np.float32) for k in (1, 2, 3, 1)]
        got = _concurrently(s, [{"inputs": x.tolist()} for x in xs])
        for (code, reply, _), x in zip(got, xs):
            assert code == 200, reply
            np.testing.assert_allclose(reply["outputs"], x.sum(), rtol=1e-5)
    finally:
        s.stop()


def test_batching_parameters_file(server_bin, base, tmp_path):
    path, model = base
    params = tmp_path / "batching.config"
    params.write_text("# TF Serving's BatchingParameters\n"
                      "max_batch_size { value: 2 }\n"
                      "batch_timeout_micros { value: 1000 }\n"
                      "num_batch_threads { value: 1 }\n"
                      "max_enqueued_batches { value: 100 }\n"
                      "pad_variable_length_inputs: false\n")
    s = Server(server_bin, "mlp", path, "--enable_batching",
               f"--batching_parameters_file={params}",
               "--tensorflow_intra_op_parallelism=1")
    try:
        x = RNG.randn(5, 4).astype(np.float32)
        got = _concurrently(s, [{"instances": [r]} for r in x.tolist()])
        assert all(code == 200 for code, _, _ in got), got
        np.testing.assert_allclose([r["predictions"][0] for _, r, _ in got],
                                   model(x), rtol=1e-5, atol=1e-6)
        # More rows than max_batch_size run on their own.
        code, reply = s.predict({"instances": x.tolist()})
        assert code == 200, reply
        np.testing.assert_allclose(reply["predictions"], model(x),
                                   rtol=1e-5, atol=1e-6)
    finally:
        s.stop()
    params.write_text("max_batch_size { value: many }\n")
    import subprocess
    from test_model_server import _env
    r = subprocess.run([str(server_bin), "--rest_api_port=1",
                        "--model_name=m", f"--model_base_path={path}",
                        "--enable_batching",
                        f"--batching_parameters_file={params}"],
                       capture_output=True, text=True, timeout=30,
                       env=_env())
    assert r.returncode == 2 and "max_batch_size { value: N }" in r.stderr, \
        r.stderr


def test_batching_under_asan_has_no_leak_or_error(server_bin, tmp_path):
    """Merged, split and fallen-back batches, clients that hang up while
    queued, and the drain at exit, under ASan + UBSan with the leak
    check."""
    import socket
    from test_model_server import assert_sanitizers_quiet, build_asan_server
    exe, env = build_asan_server(tmp_path)
    model = _mlp(13)
    tf.saved_model.save(model, str(tmp_path / "models" / "1"))
    s = Server(exe, "m", tmp_path / "models", "--enable_batching",
               "--max_batch_size=4", "--batch_timeout_micros=100000",
               env=env)
    try:
        x = RNG.randn(8, 4).astype(np.float32)
        bodies = [{"instances": [r]} for r in x.tolist()]
        bodies += [{"instances": [[1.0, 2.0]]}, {"inputs": x[:3].tolist()}]
        got = _concurrently(s, bodies)
        assert [c for c, _, _ in got] == [200] * 8 + [400, 200], got
        np.testing.assert_allclose([r["predictions"][0] for _, r, _
                                    in got[:8]], model(x), rtol=1e-5,
                                   atol=1e-6)
        body = json.dumps({"instances": x[:1].tolist()}).encode()
        for _ in range(4):
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            c.close()
        time.sleep(0.3)
        assert s.predict({"instances": x[:2].tolist()})[0] == 200
        # Replies racing the batch thread's resumes (a request's state is
        # freed once its reply is sent, perhaps before the resume that
        # led to it has returned).
        got = _concurrently(s, [{"instances": [r]} for r in x.tolist()]
                            * 6)
        assert all(code == 200 for code, _, _ in got), got
    finally:
        s.stop()
    assert_sanitizers_quiet(s.output())


def test_full_queue_is_503(server_bin, base, tmp_path):
    path, model = base
    params = tmp_path / "batching.config"
    params.write_text("max_batch_size { value: 2 }\n"
                      "batch_timeout_micros { value: 2000000 }\n"
                      "num_batch_threads { value: 1 }\n"
                      "max_enqueued_batches { value: 1 }\n")
    s = Server(server_bin, "mlp", path, "--enable_batching",
               f"--batching_parameters_file={params}")
    try:
        x = RNG.randn(1, 4).astype(np.float32)
        results = {}

        def send(key, body):
            results[key] = s.predict(body)

        # a waits 2 s for a second row; b (another row shape) cannot join
        # it and waits behind it: the queue (2 requests) is then full.
        a = threading.Thread(target=send, args=("a", {"instances":
                                                      x.tolist()}))
        b = threading.Thread(target=send, args=("b", {"instances":
                                                      [[1.0, 2.0]]}))
        a.start()
        time.sleep(0.3)
        b.start()
        time.sleep(0.3)
        code, reply = s.predict({"instances": x.tolist()})
        assert code == 503 and "queue is full" in reply["error"], reply
        a.join()
        b.join()
        assert results["a"][0] == 200, results
        np.testing.assert_allclose(results["a"][1]["predictions"], model(x),
                                   rtol=1e-5, atol=1e-6)
        assert results["b"][0] == 400, results
    finally:
        s.stop()
