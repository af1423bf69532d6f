"""A smoke run of benchmarks/serving_bench.py (wrk against the C server
and the Python baseline): slow, so only with -m slow."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from test_model_server import _have_libraries

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _serving_bench(args, timeout):
    """benchmarks/serving_bench.py with args, or a skip naming what is
    missing (wrk, the server's libraries)."""
    if not shutil.which("wrk"):
        pytest.skip("the serving benchmark needs wrk: apt-get install wrk")
    if not _have_libraries():
        pytest.skip("tfmini_model_server needs libmicrohttpd, jansson and "
                    "cJSON: apt-get install libmicrohttpd-dev "
                    "libjansson-dev libcjson-dev")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([sys.executable,
                           str(ROOT / "benchmarks" / "serving_bench.py")]
                          + args, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.slow
def test_serving_bench_smoke():
    r = _serving_bench(["--duration=1s", "--rounds=2", "--connections=2",
                        "--models=mlp", "--kinds=C,C+batching,python",
                        "--rss-requests=1000"], timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = [line for line in r.stdout.splitlines()
            if line.startswith("| mlp |")]
    assert len(rows) == 3 + 2, r.stdout       # 3 servers, 2 RSS rows
    for row in rows[:3]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[3]) > 0 and cells[-1] == "0", row


@pytest.mark.slow
def test_rss_stays_flat_over_1e5_requests():
    """The C server's VmRSS after 10^5 predicts (8 connections) within
    2 MiB of its size after the warm-up: a leak of 21 bytes a request
    would pass that. serving_bench.py --rss-only measures 10^6 the same
    way for RESULTS.md."""
    r = _serving_bench(["--rss-only", "--models=mlp", "--kinds=C",
                        "--rss-requests=100000", "--rss-sample=5"],
                       timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = [line for line in r.stdout.splitlines()
            if line.startswith("| mlp | C |")]
    assert len(rows) == 1, r.stdout
    cells = [c.strip().replace(",", "") for c in rows[0].strip("|").split("|")]
    requests, before, top = int(cells[2]), int(cells[4]), int(cells[6])
    assert requests >= 100000 and cells[-1] == "0", rows[0]
    assert top - before < 2048, rows[0]
