"""The graph optimizer's frame: the pipeline, its switches, dead-code
elimination, and inspecting what it did (docs/GRAPH_OPTIMIZER.md). Each
other pass has its own test file (test_graph_passes.py,
test_graph_fusion.py, test_graph_memory.py)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tfmini as tf
from tfmini import _C

PASSES = sorted(_C.graph_passes())


@pytest.fixture
def passes_restored():
    before = _C.graph_passes()
    yield
    _C.set_graph_passes(before)


def op_types(graph):
    return [op.type for op in graph.get_operations()]


def concrete(fn, *args):
    return tf.function(fn).get_concrete_function(*args)


def test_every_pass_is_on_by_default():
    assert PASSES == sorted(["arithmetic", "constant_folding", "cse", "dce",
                             "epilogue", "fusion", "memory", "native"])
    assert all(_C.graph_passes().values())


def test_dce_drops_unused_ops_but_the_trace_keeps_them():
    def f(x):
        unused = tf.exp(x) * 3.0
        del unused
        return x + 1.0

    cf = concrete(f, tf.constant([1.0, 2.0]))
    assert "Exp" in op_types(cf.graph)
    assert "Exp" not in op_types(cf.optimized_graph)
    np.testing.assert_array_equal(cf(tf.constant([1.0, 2.0])).numpy(),
                                  [2.0, 3.0])


def test_dce_keeps_side_effects_and_their_order(capsys):
    v = tf.Variable(1.0)

    @tf.function
    def f(x):
        v.assign_add(x)
        tf.print("after add", v)
        v.assign(v * 10.0)
        tf.Assert(x > 0, [x])
        return tf.constant(0.0)

    f(tf.constant(2.0))
    assert v.numpy() == 30.0
    assert capsys.readouterr().err == "after add 3\n"
    types = op_types(f.get_concrete_function(tf.constant(2.0))
                     .optimized_graph)
    for t in ["AssignAddVariableOp", "PrintV2", "AssignVariableOp",
              "Assert"]:
        assert t in types
    assert types.index("AssignAddVariableOp") < types.index("PrintV2") \
        < types.index("AssignVariableOp")


def test_dce_keeps_unused_inputs():
    def f(x, y):
        return x * 2.0

    cf = concrete(f, tf.constant(1.0), tf.constant(2.0))
    assert op_types(cf.optimized_graph).count("Placeholder") == 2
    assert cf(tf.constant(1.0), tf.constant(5.0)).numpy() == 2.0


def test_dce_runs_inside_cond_branches():
    @tf.function
    def f(x):
        def yes():
            tf.sin(x)       # dead inside the branch
            return x * 2.0
        return tf.cond(x > 0, yes, lambda: x - 1.0)

    x = tf.constant(3.0)
    assert f(x).numpy() == 6.0
    assert f(tf.constant(-3.0)).numpy() == -4.0
    cf = f.get_concrete_function(x)
    assert "If" in op_types(cf.optimized_graph)
    assert f.get_concrete_function(x)._plan_steps >= 1


def test_switching_dce_off_keeps_the_dead_op(passes_restored):
    tf.config.optimizer.set_experimental_options({"dce": False})
    assert _C.graph_passes()["dce"] is False

    def f(x):
        tf.exp(x)
        return x + 1.0

    cf = concrete(f, tf.constant(1.0))
    assert "Exp" in op_types(cf.optimized_graph)


def test_tf_option_names_map_onto_passes(passes_restored):
    opts = tf.config.optimizer
    opts.set_experimental_options({"disable_model_pruning": True})
    assert _C.graph_passes()["dce"] is False
    opts.set_experimental_options({"arithmetic_optimization": False})
    got = _C.graph_passes()
    assert not got["arithmetic"] and not got["cse"]
    opts.set_experimental_options({"remapping": False})
    got = _C.graph_passes()
    assert not got["epilogue"] and not got["fusion"]
    opts.set_experimental_options({"disable_meta_optimizer": True})
    assert not any(_C.graph_passes().values())
    opts.set_experimental_options({"disable_meta_optimizer": False})
    assert all(_C.graph_passes().values())
    # TF's options with no counterpart are accepted.
    opts.set_experimental_options({"layout_optimizer": False})
    got = opts.get_experimental_options()
    assert got["layout_optimizer"] is False and got["dce"] is True


def test_unknown_option_is_a_value_error(passes_restored):
    with pytest.raises(ValueError, match="unknown option 'fuzion'"):
        tf.config.optimizer.set_experimental_options({"fuzion": False})
    with pytest.raises(ValueError, match="unknown graph pass"):
        _C.set_graph_passes({"nope": True})


def test_environment_variable_switches_passes_off():
    code = ("import tfmini as tf; from tfmini import _C; "
            "print(sorted(k for k, v in _C.graph_passes().items() "
            "if not v))")
    env = dict(os.environ, TFMINI_GRAPH_PASSES_OFF="cse, fusion")
    out = subprocess.run([sys.executable, "-c", code], env=env, text=True,
                         capture_output=True, check=True).stdout
    assert out.strip() == "['cse', 'fusion']"
    env["TFMINI_GRAPH_PASSES_OFF"] = "all"
    out = subprocess.run([sys.executable, "-c", code], env=env, text=True,
                         capture_output=True, check=True).stdout
    assert out.strip() == str(PASSES)


def test_settings_apply_to_later_traces_only(passes_restored):
    def f(x):
        tf.exp(x)
        return x + 1.0

    func = tf.function(f)
    x = tf.constant(1.0)
    before = func.get_concrete_function(x)
    tf.config.optimizer.set_experimental_options({"dce": False})
    assert func.get_concrete_function(x) is before or \
        "Exp" not in op_types(func.get_concrete_function(x)
                              .optimized_graph)
    assert "Exp" in op_types(concrete(f, x).optimized_graph)


def test_as_text_shows_before_and_after():
    def f(x):
        tf.exp(x)
        return x * 2.0

    cf = concrete(f, tf.constant([1.0]))
    before, after = cf.graph.as_text(), cf.optimized_graph.as_text()
    assert before.splitlines()[0].startswith("graph 'f' (")
    assert "= Exp(x:0) -> float32[1]" in before
    assert "Exp" not in after
    assert "test_graph_optimizer.py" in before     # the user's line


def test_gradient_under_an_outer_tape_replays_the_trace():
    @tf.function
    def f(x):
        tf.exp(x)
        return x * x * 3.0

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert y.numpy() == 12.0
    assert tape.gradient(y, x).numpy() == 12.0


def test_jit_compile_is_accepted_and_changes_nothing():
    def f(x):
        return tf.nn.relu(x * 2.0 - 1.0)

    x = tf.constant([-1.0, 0.5, 3.0])
    a = tf.function(f, jit_compile=True)(x)
    b = tf.function(f)(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("off", PASSES)
def test_train_step_same_with_each_pass_off(off, passes_restored):
    """A small traced train step (forward, tape, SGD) gives the same
    weights whichever pass is off."""
    def train(options):
        _C.set_graph_passes({name: True for name in PASSES})
        tf.config.optimizer.set_experimental_options(options)
        rng = np.random.default_rng(0)
        w = tf.Variable(rng.normal(size=(4, 3)).astype(np.float32))
        b = tf.Variable(np.zeros(3, np.float32))
        x = tf.constant(rng.normal(size=(8, 4)).astype(np.float32))
        y = tf.constant(rng.integers(0, 3, size=8).astype(np.int32))

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                logits = tf.nn.relu(tf.matmul(x, w) + b) * 1.0
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(
                        labels=y, logits=logits))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)
            return loss

        losses = [step().numpy() for _ in range(3)]
        return losses, w.numpy(), b.numpy()

    ref = train({})
    got = train({off: False})
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-6, atol=1e-7)


def test_as_text_lists_a_fused_nodes_program():
    def f(x, w, b):
        h = tf.nn.relu(tf.matmul(x, w) + b)
        return tf.sigmoid(h) * h - 1.0

    x = tf.constant(np.ones((4, 3), np.float32))
    w = tf.constant(np.ones((3, 5), np.float32))
    b = tf.constant(np.ones(5, np.float32))
    g = concrete(f, x, w, b).optimized_graph
    fused = {op.type: op for op in g.get_operations()
             if op.type.startswith("_Fused")}
    assert fused["_FusedMatMul"].program == \
        "r0 = AddV2(matmul, b:0); out0 = Relu(r0)"
    prog = fused["_FusedElementwise"].program
    assert prog.startswith("r0 = Sigmoid(Relu:0)") and \
        prog.endswith("out0 = Sub(r1, Const:0)"), prog
    assert "      { r0 = AddV2(matmul, b:0); out0 = Relu(r0) }" in \
        g.as_text()
    assert all(op.program is None for op in g.get_operations()
               if not op.type.startswith("_Fused"))
