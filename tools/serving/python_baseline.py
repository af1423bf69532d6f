"""The Python baseline that benchmarks/serving_bench.py measures the C
server against: the same saved model, loaded with tfmini, called from
a standard-library http.server handler (one thread per connection, as
ThreadingHTTPServer does), answering TF Serving's row-format predict.

    python3 tools/serving/python_baseline.py --port=8600 --name=mlp \\
        --model=DIR/1

Only POST /v1/models/{name}:predict with {"instances": [...]} on the
serving_default signature: what the benchmark sends. Kept minimal on
purpose: it is what a user would write without a model server."""
import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

import tfmini as tf


def make_handler(name, fn):
    path = f"/v1/models/{name}:predict"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"       # keep-alive, as wrk expects
        # Headers and body go out in two writes: with Nagle on, the body
        # waits for the client's delayed ACK (40 ms a request).
        disable_nagle_algorithm = True

        def _reply(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            n = int(self.headers.get("Content-Length", 0))
            data = self.rfile.read(n)
            if self.path != path:
                return self._reply(404, {"error": f"no {self.path}"})
            try:
                x = np.asarray(json.loads(data)["instances"], np.float32)
                out = fn(tf.constant(x))
                y = next(iter(out.values())) if isinstance(out, dict) \
                    else out
                self._reply(200, {"predictions": y.numpy().tolist()})
            except Exception as e:          # a bad request: 400, go on
                self._reply(400, {"error": str(e)})

        def log_message(self, *args):
            pass

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--model", required=True, help="a saved-model folder")
    p.add_argument("--host", default="127.0.0.1")
    args = p.parse_args()
    fn = tf.saved_model.load(args.model).signatures["serving_default"]
    # socketserver's listen backlog of 5 would drop connections at 64
    # clients (SYN retried after 1 s): a deployment would raise it.
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer((args.host, args.port),
                                 make_handler(args.name, fn))
    server.daemon_threads = True
    print(f"python baseline: serving {args.name} on {args.host}:"
          f"{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
