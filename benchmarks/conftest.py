"""Shared pieces of the benchmarks: which implementations are here, and
inputs made once per size. Every benchmark runs the same work through
tfmini, NumPy (the reference of every ratio) and, when importable,
TensorFlow, JAX and PyTorch; report.py turns the timings into RESULTS.md."""
import os

import numpy as np
import pytest

from _common import AVAILABLE


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(0)


def pytest_benchmark_update_machine_info(config, machine_info):
    """The version of each framework this process has, for report.py's
    "Frameworks:" line (each framework may run under its own
    interpreter)."""
    import importlib
    versions = {}
    for name, have in AVAILABLE.items():
        if have:
            mod = importlib.import_module(name)
            versions[name] = getattr(mod, "__version__", "?")
    machine_info["frameworks"] = versions


def pytest_report_header(config):
    threads = os.environ.get("OMP_NUM_THREADS", "all")
    have = ", ".join(k for k, v in AVAILABLE.items() if v)
    return f"benchmarks: {have}; NumPy {np.__version__}; threads {threads}"
