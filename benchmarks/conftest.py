"""Shared pieces of the benchmarks: which implementations are here, and
inputs made once per size. Every benchmark runs the same work through
tfmini, NumPy (the reference of every ratio) and, when importable,
TensorFlow and PyTorch; report.py turns the timings into RESULTS.md."""
import os

import numpy as np
import pytest

from _common import AVAILABLE


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(0)


def pytest_report_header(config):
    threads = os.environ.get("OMP_NUM_THREADS", "all")
    have = ", ".join(k for k, v in AVAILABLE.items() if v)
    return f"benchmarks: {have}; NumPy {np.__version__}; threads {threads}"
