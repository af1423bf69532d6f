"""tfmini_model_server against clients that misbehave on the wire: more
stalled connections than worker threads, a body trickled in a byte at a
time, clients that hang up while their predict waits in a batch. Each
gets a 4xx or is dropped; no worker is held and the server keeps
answering others and exits cleanly (Server.stop checks its exit code)."""
import json
import os
import socket
import time

import numpy as np
import pytest

from test_model_server import (Server, exported_mlp,  # noqa: F401
                               server_bin)

X = np.random.RandomState(4).randn(2, 4).astype(np.float32)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return exported_mlp(tmp_path_factory, "limits", 12)


def _connect(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.settimeout(10)
    return s


def _read_all(s):
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    return data


def test_stalled_clients_do_not_hold_the_workers(server_bin, base):
    path, model = base
    s = Server(server_bin, "mlp", path, "--rest_api_num_threads=2",
               "--rest_api_timeout_in_ms=1000")
    try:
        stalled = []
        for i in range(8):
            c = _connect(s)
            # Half the headers, or the headers and half the body.
            c.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                      if i % 2 else
                      b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 100\r\n\r\n{\"inst")
            stalled.append(c)
        t0 = time.time()
        code, reply = s.predict({"instances": X.tolist()})
        assert code == 200 and time.time() - t0 < 3, (code, reply)
        np.testing.assert_allclose(reply["predictions"], model(X),
                                   rtol=1e-5, atol=1e-6)
        for c in stalled:           # each closed after about 1 s
            assert _read_all(c) == b""
            c.close()
        assert time.time() - t0 < 9
    finally:
        s.stop()


def test_trickled_body_is_cut_off(server_bin, base):
    """A byte every 0.2 s never leaves the connection idle for the 1 s
    timeout, so the total request time is what stops it: libmicrohttpd
    cannot queue a reply while a body is arriving, so the connection is
    closed once the time is up."""
    path, _ = base
    s = Server(server_bin, "mlp", path, "--rest_api_timeout_in_ms=1000")
    try:
        body = json.dumps({"instances": X.tolist()}).encode()
        c = _connect(s)
        c.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        t0 = time.time()
        cut = None
        try:
            for b in body:
                c.sendall(bytes([b]))
                time.sleep(0.2)
                if time.time() - t0 > 10:
                    break
        except (BrokenPipeError, ConnectionResetError):
            cut = time.time() - t0
        reply = _read_all(c)
        c.close()
        assert reply == b"" or reply.startswith(b"HTTP/1.1 408"), reply
        assert cut is not None and cut < 4, cut
        assert s.predict({"instances": X.tolist()})[0] == 200
    finally:
        s.stop()


def test_clients_gone_while_batched(server_bin, base):
    path, model = base
    s = Server(server_bin, "mlp", path, "--enable_batching",
               "--batch_timeout_micros=500000")
    try:
        body = json.dumps({"instances": X[:1].tolist()}).encode()
        request = (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body)) + body
        for _ in range(6):          # queued, then the client hangs up
            c = _connect(s)
            c.sendall(request)
            c.close()
        code, reply = s.predict({"instances": X.tolist()})
        assert code == 200, reply
        np.testing.assert_allclose(reply["predictions"], model(X),
                                   rtol=1e-5, atol=1e-6)
        time.sleep(0.6)             # the abandoned batch has run
        assert s.get("")[0] == 200
    finally:
        s.stop()


def test_idle_server_with_polling_off_uses_no_cpu(server_bin, base):
    """--file_system_poll_wait_seconds=0 (load once, as TF Serving) once
    left the main loop spinning on a core."""
    path, _ = base
    s = Server(server_bin, "mlp", path, "--file_system_poll_wait_seconds=0")
    try:
        def cpu_seconds():
            fields = open(f"/proc/{s.proc.pid}/stat").read().rsplit(
                ")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf(
                "SC_CLK_TCK")
        before = cpu_seconds()
        time.sleep(1.5)
        assert cpu_seconds() - before < 0.3
    finally:
        s.stop()
