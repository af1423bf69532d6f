#!/usr/bin/env python3
"""Run the code cells of TensorFlow's guides under real TF and under
tfmini, and compare what each cell prints.

    python3 tools/guide_check.py [--store tests/data/guides] NB.ipynb ...

With no notebooks it reads the guides from the local git mirrors of
tensorflow/docs and tensorflow/text (see GUIDES). Each guide runs in a
subprocess of its own (`--worker`), in a scratch directory, once with
TF's interpreter (--tf-python, twice, so that cells whose output is not
deterministic under TF itself are known and left uncompared) and once
with this interpreter importing tfmini. The cells run in order in one
namespace, the way a notebook runs them; a cell that raises is recorded
and the next one still runs.

What a cell "prints" is its stdout plus the repr of its last expression
(what Jupyter shows), or the exception it raised. Comparison ignores
addresses, timings, whitespace runs and float digits past 6 significant
ones, since those change from run to run or from one float formatting to
the next without the numbers differing.
"""
import argparse
import ast
import contextlib
import io
import json
import linecache
import os
import re
import signal
import subprocess
import sys
import tempfile

DOCS = "/work/.mirror/tensorflow+docs/repo"
TEXT = "/work/.mirror/tensorflow+text/repo"
GUIDES = [
    ("ragged_tensor", DOCS, "site/en/guide/ragged_tensor.ipynb"),
    ("sparse_tensor", DOCS, "site/en/guide/sparse_tensor.ipynb"),
    ("tensor_slicing", DOCS, "site/en/guide/tensor_slicing.ipynb"),
    ("random_numbers", DOCS, "site/en/guide/random_numbers.ipynb"),
    ("tf_numpy", DOCS, "site/en/guide/tf_numpy.ipynb"),
    ("tf_numpy_type_promotion", DOCS,
     "site/en/guide/tf_numpy_type_promotion.ipynb"),
    ("checkpoint", DOCS, "site/en/guide/checkpoint.ipynb"),
    ("data", DOCS, "site/en/guide/data.ipynb"),
    ("saved_model", DOCS, "site/en/guide/saved_model.ipynb"),
    ("mixed_precision", DOCS, "site/en/guide/mixed_precision.ipynb"),
    ("effective_tf2", DOCS, "site/en/guide/effective_tf2.ipynb"),
    ("tensor", DOCS, "site/en/guide/tensor.ipynb"),
    ("variable", DOCS, "site/en/guide/variable.ipynb"),
    ("autodiff", DOCS, "site/en/guide/autodiff.ipynb"),
    ("advanced_autodiff", DOCS, "site/en/guide/advanced_autodiff.ipynb"),
    ("basics", DOCS, "site/en/guide/basics.ipynb"),
    ("intro_to_modules", DOCS, "site/en/guide/intro_to_modules.ipynb"),
    ("intro_to_graphs", DOCS, "site/en/guide/intro_to_graphs.ipynb"),
    ("function", DOCS, "site/en/guide/function.ipynb"),
    ("basic_training_loops", DOCS,
     "site/en/guide/basic_training_loops.ipynb"),
    ("quickstart_core", DOCS, "site/en/guide/core/quickstart_core.ipynb"),
    ("logistic_regression_core", DOCS,
     "site/en/guide/core/logistic_regression_core.ipynb"),
    ("mlp_core", DOCS, "site/en/guide/core/mlp_core.ipynb"),
    ("optimizers_core", DOCS, "site/en/guide/core/optimizers_core.ipynb"),
    ("matrix_core", DOCS, "site/en/guide/core/matrix_core.ipynb"),
    ("gpu", DOCS, "site/en/guide/gpu.ipynb"),
    ("graph_optimization", DOCS, "site/en/guide/graph_optimization.ipynb"),
    ("customization_basics", DOCS,
     "site/en/tutorials/customization/basics.ipynb"),
    ("custom_layers", DOCS,
     "site/en/tutorials/customization/custom_layers.ipynb"),
    ("distributed_training", DOCS,
     "site/en/guide/distributed_training.ipynb"),
    ("distributed_input", DOCS, "site/en/tutorials/distribute/input.ipynb"),
    ("tfrecord", DOCS, "site/en/tutorials/load_data/tfrecord.ipynb"),
    # The TF2 unicode tutorial lives in tensorflow/text now.
    ("unicode", TEXT, "docs/guide/unicode.ipynb"),
    ("extension_type", DOCS, "site/en/guide/extension_type.ipynb"),
    ("data_performance", DOCS, "site/en/guide/data_performance.ipynb"),
    # The migration guides' TF2 halves (their tf.compat.v1 and estimator
    # cells are out of scope: KNOWN says which).
    ("migrate_saved_model", DOCS, "site/en/guide/migrate/saved_model.ipynb"),
    ("migrate_metrics_optimizers", DOCS,
     "site/en/guide/migrate/metrics_optimizers.ipynb"),
    ("migrate_sessionrunhook_callback", DOCS,
     "site/en/guide/migrate/sessionrunhook_callback.ipynb"),
    ("migrate_logging_stop_hook", DOCS,
     "site/en/guide/migrate/logging_stop_hook.ipynb"),
    ("migrate_mirrored_strategy", DOCS,
     "site/en/guide/migrate/mirrored_strategy.ipynb"),
    ("migrate_early_stopping", DOCS,
     "site/en/guide/migrate/early_stopping.ipynb"),
    ("distribute_custom_training", DOCS,
     "site/en/tutorials/distribute/custom_training.ipynb"),
    ("migrate_tf1_vs_tf2", DOCS, "site/en/guide/migrate/tf1_vs_tf2.ipynb"),
    ("migrate_fault_tolerance", DOCS,
     "site/en/guide/migrate/fault_tolerance.ipynb"),
    ("migration_debugging", DOCS,
     "site/en/guide/migrate/migration_debugging.ipynb"),
    ("distribution_core", DOCS, "site/en/guide/core/distribution.ipynb"),
    ("migrate_estimator", DOCS,
     "site/en/guide/migrate/migrating_estimator.ipynb"),
    ("migrate_feature_columns", DOCS,
     "site/en/guide/migrate/migrating_feature_columns.ipynb"),
    ("multi_worker_with_ctl", DOCS,
     "site/en/tutorials/distribute/multi_worker_with_ctl.ipynb"),
    ("compression", DOCS, "site/en/tutorials/optimization/compression.ipynb"),
    ("multi_worker_with_keras", DOCS,
     "site/en/tutorials/distribute/multi_worker_with_keras.ipynb"),
]
TF_PYTHON = "/work/tfvenv/bin/python"
CELL_TIMEOUT_S = 60

# Cells left out: they need downloads (get_file, Keras' load_data, tfds,
# or data sets downloaded), time
# things (their output is a timing by design), or draw scikit-learn
# confusion matrices (plots; TF's venv has no scikit-learn).
_SKIP_CELL = re.compile(r"get_file\(|tfds\.|timeit\.|benchmark\(|"
                        r"requests\.get\(|read_csv\(|sk_metrics\.|"
                        r"datasets\.\w+\.load_data\(|"
                        r"\b(?:fashion_)?mnist\.load_data\(")
# Lines dropped from a cell that is otherwise run: shell and magics, and
# the plotting imports (plotting goes to _NoPlot instead).
_DROP_LINE = re.compile(r"^\s*([!%]|import matplotlib|from matplotlib |"
                        r"import seaborn)")


class _NoPlot:
    """matplotlib and seaborn as the cells see them (neither is needed
    here): every call does nothing, so a plotting cell still computes
    the tensors it plots (the data, a training loop the next cells use),
    and prints what it prints."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self

    def __setitem__(self, key, value):
        pass

    def __iter__(self):
        # Two of itself: `fig, ax = plt.subplots()` and
        # `fig, (a, b) = plt.subplots(1, 2)` unpack, and loops end.
        return iter((self, self))

    def __lt__(self, other):
        return False          # max(plt.ylim()) and the like

    __gt__ = __le__ = __ge__ = __lt__

    def __repr__(self):
        return "<plot>"


_PLOT_NAMES = ("plt", "matplotlib", "sns")


def _kept_lines(src):
    """The cell's lines less those _DROP_LINE drops; a dropped shell
    line ending in a backslash takes its continuation lines with it
    (`!saved_model_cli run ... \\` and the flags on the next line)."""
    continued = False
    for line in src.splitlines():
        if continued or _DROP_LINE.match(line):
            continued = line.rstrip().endswith("\\")
            continue
        yield line


def cells_of(notebook):
    """The notebook's runnable code cells, as [source]."""
    out = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        if _SKIP_CELL.search(src):
            continue
        src = "\n".join(_kept_lines(src))
        if src.strip() and not all(
                l.strip().startswith("#") or not l.strip()
                for l in src.splitlines()):
            out.append(src)
    return out


def for_tfmini(src):
    """The cell as a tfmini user runs it: only the imports change."""
    src = re.sub(r"^(\s*)import tensorflow((?:\.\w+)+) as (\w+)",
                 r"\1import tfmini\2 as \3", src, flags=re.M)
    src = re.sub(r"^(\s*)import tensorflow as (\w+)",
                 r"\1import tfmini as \2", src, flags=re.M)
    src = re.sub(r"^(\s*)from tensorflow((?:\.\w+)*) import",
                 r"\1from tfmini\2 import", src, flags=re.M)
    # Keras 3 is its own package; tfmini carries the tf.keras it stands for.
    src = re.sub(r"^(\s*)import keras[ \t]*$",
                 r"\1import tfmini.keras as keras", src, flags=re.M)
    src = re.sub(r"^(\s*)from keras((?:\.\w+)*) import",
                 r"\1from tfmini.keras\2 import", src, flags=re.M)
    return src


def _timeout(signum, frame):
    raise TimeoutError(f"cell ran over {CELL_TIMEOUT_S} s")


def run_cells(cells):
    """Runs the cells in one namespace; per cell {stdout, result, error}."""
    ns = {"__name__": "__main__"}
    ns.update(dict.fromkeys(_PLOT_NAMES, _NoPlot()))
    results = []
    signal.signal(signal.SIGALRM, _timeout)
    for n, src in enumerate(cells):
        rec = {"stdout": "", "result": None, "error": None}
        buf = io.StringIO()
        # Jupyter keeps each cell's source in linecache, so that
        # inspect.getsource (and so AutoGraph and tf.autograph.to_code)
        # finds a function defined in a cell; a notebook user sees that.
        fname = f"<cell-{n}>"
        linecache.cache[fname] = (len(src), None, src.splitlines(True),
                                  fname)
        try:
            tree = ast.parse(src)
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            signal.alarm(CELL_TIMEOUT_S)
            with contextlib.redirect_stdout(buf):
                exec(compile(tree, fname, "exec"), ns)
                if last is not None:
                    value = eval(compile(last, fname, "eval"), ns)
                    if value is not None:
                        rec["result"] = repr(value)
        except BaseException as e:  # noqa: B036 - a cell may raise anything
            if isinstance(e, KeyboardInterrupt):
                raise
            msg = str(e).strip().splitlines()
            rec["error"] = f"{type(e).__name__}: {msg[0] if msg else ''}"
        finally:
            signal.alarm(0)
        rec["stdout"] = buf.getvalue()
        results.append(rec)
    return results


_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_TIME = re.compile(r"\d+(\.\d+)?\s*(ms|us|µs|ns|sec|seconds|s)\b")
_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d*(?:[eE][-+]?\d+)?|"
                    r"(?<![\w.])-?\d+[eE][-+]?\d+")
_WS = re.compile(r"\s+")


def _round(m):
    v = float(m.group(0))
    return "0" if v == 0 else f"{v:.6g}"


def normalise(text):
    if text is None:
        return None
    text = _ADDR.sub("0x?", text)
    text = _TIME.sub("<time>", text)
    text = _FLOAT.sub(_round, text)
    # numpy pads columns to the widest number, so spacing follows digits.
    text = re.sub(r"\s*([\[\](),])\s*", r"\1", text)
    return _WS.sub(" ", text).strip()


def same(a, b):
    """Whether two cell records print the same, as far as we compare."""
    return all(normalise(a[k]) == normalise(b[k])
               for k in ("stdout", "result", "error"))


def agrees(tf_rec, mini_rec, nondeterministic):
    """A cell whose output varies under TF itself only has to raise (or
    not) what TF raises."""
    if nondeterministic:
        return normalise(tf_rec["error"]) == normalise(mini_rec["error"])
    return same(tf_rec, mini_rec)


def worker(args):
    with open(args.worker) as f:
        cells = json.load(f)["cells"]
    if args.backend == "tfmini":
        cells = [for_tfmini(c) for c in cells]
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        results = run_cells(cells)
    out = json.dumps(results)
    # Cells print to fd 1 too (TF's C++ logging goes to 2), so the answer
    # goes to a file.
    with open(args.out, "w") as f:
        f.write(out)


def run_guide(python, cells_file, backend, env=None, timeout=900):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as t:
        out = t.name
    try:
        env = dict(os.environ if env is None else env)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        subprocess.run([python, os.path.abspath(__file__), "--worker",
                        cells_file, "--backend", backend, "--out", out],
                       env=env, timeout=timeout, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(out) as f:
            text = f.read()
        return json.loads(text) if text else None
    finally:
        os.unlink(out)


def load_notebook(spec):
    name, repo, path = spec
    text = subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"],
                          capture_output=True, text=True, check=True).stdout
    return name, json.loads(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="*")
    ap.add_argument("--worker")
    ap.add_argument("--backend", choices=("tf", "tfmini"), default="tfmini")
    ap.add_argument("--out")
    ap.add_argument("--tf-python", default=TF_PYTHON)
    ap.add_argument("--store", help="write TF's outputs here, per guide")
    ap.add_argument("--diff", action="store_true",
                    help="print each differing cell")
    ap.add_argument("--guide", action="append", default=[],
                    help="only this guide of GUIDES (by name; repeatable)")
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    if args.notebooks:
        books = []
        for p in args.notebooks:
            with open(p) as f:
                books.append((os.path.basename(p).rsplit(".", 1)[0],
                              json.load(f)))
    else:
        unknown = set(args.guide) - {g[0] for g in GUIDES}
        if unknown:
            ap.error(f"no such guide: {', '.join(sorted(unknown))}")
        books = [load_notebook(g) for g in GUIDES
                 if not args.guide or g[0] in args.guide]

    rows = []
    for name, nb in books:
        cells = cells_of(nb)
        with tempfile.NamedTemporaryFile("w", suffix=".json",
                                         delete=False) as t:
            json.dump({"cells": cells}, t)
        try:
            tf1 = run_guide(args.tf_python, t.name, "tf")
            tf2 = run_guide(args.tf_python, t.name, "tf")
            mini = run_guide(sys.executable, t.name, "tfmini")
        finally:
            os.unlink(t.name)
        if tf1 is None or mini is None:
            print(f"{name}: a run died", file=sys.stderr)
            continue
        nondet = [not same(a, b) for a, b in zip(tf1, tf2)]
        ok_tf = sum(r["error"] is None for r in tf1)
        ok_mini = sum(r["error"] is None for r in mini)
        eq = sum(agrees(a, b, n) for a, b, n in zip(tf1, mini, nondet))
        rows.append((name, len(cells), ok_tf, ok_mini, eq))
        if args.diff:
            for i, (a, b, n) in enumerate(zip(tf1, mini, nondet)):
                if not agrees(a, b, n):
                    print(f"--- {name} cell {i}\n{cells[i]}")
                    for k in ("stdout", "result", "error"):
                        if normalise(a[k]) != normalise(b[k]):
                            print(f"  TF     {k}: {a[k]!r}"[:1500])
                            print(f"  tfmini {k}: {b[k]!r}"[:1500])
        if args.store:
            os.makedirs(args.store, exist_ok=True)
            with open(os.path.join(args.store, name + ".json"), "w") as f:
                json.dump({"guide": name, "cells": cells, "tf": tf1,
                           "nondeterministic": nondet}, f, indent=1)
    print(f"{'guide':16} {'cells':>5} {'TF ok':>6} {'tfmini ok':>9} "
          f"{'equal':>6}")
    for r in rows:
        print(f"{r[0]:16} {r[1]:5} {r[2]:6} {r[3]:9} {r[4]:6}")
    tot = [sum(r[i] for r in rows) for i in range(1, 5)]
    print(f"{'total':16} {tot[0]:5} {tot[1]:6} {tot[2]:9} {tot[3]:6}")


if __name__ == "__main__":
    main()
