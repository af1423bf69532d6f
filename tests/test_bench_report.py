"""benchmarks/report.py's table logic: which interpreter runs each
framework, which rows a tfmini row is compared with, and how times
print (no benchmark is run here)."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent /
                       "benchmarks"))
import report  # noqa: E402


def test_interpreters_from_flags_over_the_environment():
    got = report.interpreters(["tensorflow=/venv/bin/python"],
                              env="torch=/t/python, jax=/j/python")
    assert got["tensorflow"] == "/venv/bin/python"
    assert got["torch"] == "/t/python"
    assert got["jax"] == "/j/python"
    assert got["tfmini"] == got["numpy"] == sys.executable
    # the flag wins over the environment
    assert report.interpreters(["jax=/a"], env="jax=/b")["jax"] == "/a"


@pytest.mark.parametrize("bad", ["tensorflow", "tf=/x", "jax="])
def test_bad_interpreter_pair_is_a_clear_error(bad):
    with pytest.raises(SystemExit, match="bad interpreter"):
        report.interpreters([bad], env="")


def _group(**medians):
    return {impl.replace("_", "-"): {"stats": {"median": t}}
            for impl, t in medians.items()}


def test_best_peer_is_the_fastest_other_framework():
    g = _group(tfmini=2.0, numpy=4.0, jax=1.0, torch=3.0)
    assert report.best_peers(g, "tfmini") == {"numpy": 4.0, "jax": 1.0,
                                              "torch": 3.0}
    assert report.best_peers(g, "jax") == {}


def test_best_peer_of_a_variant_is_the_same_variant():
    # tfmini-forward against numpy-forward; tfmini-backward against the
    # rows that are no other tfmini row's variant (numpy, not
    # numpy-forward); a bandwidth floor is never a peer.
    g = _group(tfmini_forward=1.0, tfmini_backward=2.0, numpy_forward=1.5,
               numpy=3.0, numpy_add_floor=0.1)
    assert report.best_peers(g, "tfmini-forward") == {"numpy-forward": 1.5}
    assert report.best_peers(g, "tfmini-backward") == {"numpy": 3.0}
    g = _group(tfmini_traced=1.0, tfmini=2.0, tensorflow_function=5.0,
               jax_jit=4.0, numpy=3.0)
    assert set(report.best_peers(g, "tfmini-traced")) == {
        "tensorflow-function", "jax-jit", "numpy"}


def test_table_names_the_best_peer():
    data = {"benchmarks": [
        {"group": "g", "params": {"impl": impl},
         "stats": {"median": t}} for impl, t in
        [("tfmini", 1e-6), ("numpy", 2e-6), ("jax", 4e-6)]]}
    rows = report.table(data).splitlines()
    assert "| g | tfmini | 1 us | **2.00** | **2.00** (numpy) |" in rows
    assert "| g | jax | 4 us | **0.50** | - |" in rows


def test_rows_without_an_impl_are_left_out():
    # bench_mixed_precision.py's rows compare dtypes (params "policy",
    # "dtype"): a --json file of a plain pytest run holds them too.
    data = {"benchmarks": [
        {"group": "g", "params": {"impl": "tfmini"}, "stats": {"median": 1e-6}},
        {"group": "mp", "params": {"policy": "float32"},
         "stats": {"median": 2e-6}}]}
    rows = report.table(data).splitlines()
    assert any(r.startswith("| g | tfmini |") for r in rows)
    assert not any(r.startswith("| mp |") for r in rows)


@pytest.mark.parametrize("t,text", [(0.0009997, "1 ms"), (1.13e-3, "1.13 ms"),
                                    (4.11e-7, "411 ns"), (2.5, "2.5 s")])
def test_times_print_in_the_unit_that_fits(t, text):
    assert report._fmt_time(t) == text
