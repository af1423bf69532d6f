"""Memory of a function that retraces without end stays bounded: the
trace cache keeps the _MAX_TRACES most recently called traces, and idle
plans' arenas are released past a budget (Note [Arena budget] in
csrc/graph/exec.c). RSS is measured in a fresh process, with generous
bounds; nothing here asserts a time."""
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np

import tfmini as tf
from tfmini import _C

# tfmini.function the module (the attribute is tf.function itself).
tf_function = importlib.import_module("tfmini.function")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(body):
    code = textwrap.dedent("""
        import logging
        import numpy as np
        import tfmini as tf
        from tfmini import _C
        logging.disable(logging.WARNING)
        def rss():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        @tf.function(autograph=False)
        def f(x):
            return tf.reduce_sum(tf.tanh(x * 2.0 + 1.0) * x)
    """) + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


def test_big_retraces_release_their_arenas():
    # Before: each of these traces kept a 4 MB arena and its heap holes
    # (100 traces: +750 MB).
    grew, held, budget = map(float, _run("""
        for i in range(5):
            f(tf.ones([1000000 + i]))
        r0 = rss()
        for i in range(5, 60):
            f(tf.ones([1000000 + i]))
        budget, held = _C.plan_arena_budget()
        print(rss() - r0, held, budget)
    """))
    assert held <= budget
    assert grew < 150, f"RSS grew {grew:.0f} MB over 55 big retraces"


def test_many_small_retraces_keep_a_bounded_cache():
    grew, traces, live = map(float, _run("""
        import tfmini.function as F
        for i in range(300):
            f(tf.ones([i + 1]))
        r0 = rss()
        for i in range(300, 1500):
            f(tf.ones([i + 1]))
        import gc; gc.collect()
        print(rss() - r0, len(f._traces), _C.function_live_counts()[1])
    """))
    assert traces == tf_function._MAX_TRACES
    assert live <= tf_function._MAX_TRACES + 8
    assert grew < 40, f"RSS grew {grew:.0f} MB over 1200 small retraces"


def test_serving_loop_over_varying_shapes_is_bounded():
    grew, traces = map(float, _run("""
        rng = np.random.default_rng(0)
        sizes = rng.integers(1, 300000, size=1500)
        for n in sizes[:300]:
            f(tf.ones([int(n)]))
        r0 = rss()
        for n in sizes[300:]:
            f(tf.ones([int(n)]))
        print(rss() - r0, len(f._traces))
    """))
    assert traces <= tf_function._MAX_TRACES
    assert grew < 120, f"RSS grew {grew:.0f} MB in the serving loop"


def test_eviction_drops_the_least_recently_called(monkeypatch):
    monkeypatch.setattr(tf_function, "_MAX_TRACES", 3)

    @tf.function
    def g(x):
        return x * 2

    for n in (1, 2, 3):
        g(tf.ones([n]))
    g(tf.ones([1]))                      # [1] is now the most recent
    g(tf.ones([4]))                      # evicts [2]
    assert g.experimental_get_tracing_count() == 4
    assert g._cache_size() == 3
    g(tf.ones([1]))
    g(tf.ones([3]))
    g(tf.ones([4]))
    assert g.experimental_get_tracing_count() == 4
    np.testing.assert_allclose(g(tf.ones([2])).numpy(), [2, 2])
    assert g.experimental_get_tracing_count() == 5
    assert len(g._traces) == 3


def test_an_evicted_trace_held_by_the_caller_still_runs(monkeypatch):
    monkeypatch.setattr(tf_function, "_MAX_TRACES", 1)

    @tf.function
    def g(x):
        return x + 1

    c = g.get_concrete_function(tf.TensorSpec([2], tf.float32))
    g(tf.ones([3]))
    assert g._traces == [g._traces[-1]] and c not in g._traces
    np.testing.assert_allclose(c(tf.ones([2])).numpy(), [2, 2])


def test_idle_arenas_are_released_past_the_budget():
    @tf.function
    def a(x):
        return tf.reduce_sum(tf.exp(x) * x)

    @tf.function
    def b(x):
        return tf.reduce_sum(tf.sin(x) * x)

    x = tf.ones([300000])
    old = _C.plan_arena_budget()[0]
    try:
        _C.plan_arena_budget(0)
        a(x)
        ca = a.get_concrete_function(x)
        if not ca._memory_plan["arena_bytes"]:
            return                        # nothing planned: nothing held
        assert ca._memory_plan["arena_held"]      # the last run keeps it
        b(x)
        assert not ca._memory_plan["arena_held"]
        cb = b.get_concrete_function(x)
        assert cb._memory_plan["arena_held"]
        np.testing.assert_allclose(a(x).numpy(), np.e * 300000, rtol=1e-4)
        _C.plan_arena_budget(1 << 40)
        b(x)
        assert ca._memory_plan["arena_held"] and cb._memory_plan["arena_held"]
    finally:
        _C.plan_arena_budget(old)
