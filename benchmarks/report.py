"""Run the benchmarks and write their ratio table to RESULTS.md.

    python3 benchmarks/report.py                 run, then write the table
    python3 benchmarks/report.py -k "tiny or rnn"   only some rows
    python3 benchmarks/report.py --python tensorflow=/work/tfvenv/bin/python
                                                 TF's rows from its own venv
    python3 benchmarks/report.py --json F.json   table from an earlier
                                                 --benchmark-json run

Ratio = NumPy's median time / the other's median time, from one run on
one machine: above 1 is faster than NumPy; "best peer / it" = the
fastest other framework's median over a tfmini row's. One run is a
pytest process per framework, one after the other (tfmini, NumPy,
TensorFlow, PyTorch, JAX), so that no framework's idle threads slow
another's.

Each process runs under its own interpreter: `--python FW=PATH`
(repeatable) or the environment variable TFMINI_BENCH_PYTHON, a
comma-separated list of FW=PATH (`--python` wins). TensorFlow, for one,
may live in a venv of its own; that interpreter needs pytest and
pytest-benchmark, and imports tfmini from this tree (same Python ABI),
as every process gets the repository root on PYTHONPATH. The others
default to this interpreter."""
import argparse
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
ORDER = ["tfmini", "numpy", "tensorflow", "jax", "torch"]
# One pytest process per framework (pytest -k expressions over the impl
# ids), in this order: XLA's thread pool spins like the others, so JAX
# runs last.
PROCESSES = {"tfmini": "not (numpy or tensorflow or torch or jax)",
             "numpy": "numpy", "tensorflow": "tensorflow",
             "torch": "torch", "jax": "jax"}
NAMES = {"tfmini": "tfmini", "numpy": "NumPy", "tensorflow": "TensorFlow",
         "jax": "JAX", "torch": "PyTorch"}
# Rows that are not the group's work done another way (a bandwidth
# floor): never a "best peer".
NOT_PEERS = ("numpy-add-floor",)
ENV_PYTHON = "TFMINI_BENCH_PYTHON"


def interpreters(pairs, env=None):
    """{framework: interpreter} from FW=PATH pairs, over the
    TFMINI_BENCH_PYTHON list, over this interpreter."""
    env = os.environ.get(ENV_PYTHON, "") if env is None else env
    out = {fw: sys.executable for fw in PROCESSES}
    given = [p for p in env.split(",") if p.strip()] + list(pairs or [])
    for pair in given:
        fw, sep, path = pair.strip().partition("=")
        if not sep or fw not in PROCESSES or not path:
            raise SystemExit(f"report.py: bad interpreter {pair!r}: want "
                             f"FW=PATH with FW one of "
                             f"{', '.join(PROCESSES)}")
        out[fw] = path
    return out


def check_interpreter(fw, python):
    r = subprocess.run([python, "-c", "import pytest_benchmark"],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"report.py: {python} (for {fw}) cannot import "
                         f"pytest_benchmark: {python} -m pip install pytest "
                         f"pytest-benchmark\n{r.stderr.strip()[-300:]}")


def run(python, json_path, extra):
    # bench_mixed_precision.py compares dtypes, not frameworks: its
    # own command writes RESULTS.md's "Mixed precision" section.
    cmd = [python, "-m", "pytest", str(HERE), "-p",
           "no:cacheprovider", "--benchmark-enable",
           f"--ignore={HERE / 'bench_mixed_precision.py'}",
           # A warm-up, and rounds of at least 100 us: pytest-benchmark
           # otherwise sizes a round from the first call, and when that
           # one is slow (first use of a pool) a sub-microsecond op gets
           # one call per round, whose median is mostly the timer's
           # (tiny a + b: 792 ns that way, 320 ns with these).
           "--benchmark-warmup=on", "--benchmark-warmup-iterations=1000",
           "--benchmark-min-time=0.0001",
           f"--benchmark-json={json_path}", "-q"] + extra
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(
            os.pathsep) if p])
    print("running:", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=ROOT, env=env)
    if r.returncode not in (0, 5):
        sys.exit(r.returncode)


def machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy as np
    blas = "?"
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]["name"]
    except Exception:
        pass
    return (f"{cpu}, {os.cpu_count()} logical cores; Python "
            f"{platform.python_version()}, NumPy {np.__version__} ({blas})")


def framework_rows(data):
    """The benchmarks with an `impl` parameter: a --json file from a
    plain pytest run also holds rows that compare something else
    (dtypes), which have their own sections."""
    return [b for b in data["benchmarks"]
            if "impl" in (b.get("params") or {})]


def table(data):
    """One row per (benchmark, implementation or variant): its median,
    and NumPy's median over it (NumPy's own row of the group, or for a
    variant like "numpy-forward" the plain "numpy" row); for tfmini's
    rows, the best peer's median over it."""
    groups = {}
    for b in framework_rows(data):
        groups.setdefault(b["group"], {})[b["params"]["impl"]] = b
    head = ["benchmark", "implementation", "median (throughput)",
            "NumPy / it", "best peer / it"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in sorted(groups, key=_group_order):
        g = groups[name]
        ref = g.get("numpy")
        for impl in sorted(g, key=_impl_order):
            b = g[impl]
            ratio = "-" if ref is None or impl == "numpy" else \
                f"**{ref['stats']['median'] / b['stats']['median']:.2f}**"
            peers = best_peers(g, impl)
            top = min(peers, key=peers.get) if peers else None
            best = "-" if top is None else \
                f"**{peers[top] / b['stats']['median']:.2f}** ({top})"
            rows.append(f"| {name} | {impl} | {_cell(b, None)} | {ratio} "
                        f"| {best} |")
    return "\n".join(rows)


def _variant(impl):
    return impl.partition("-")[2]


def best_peers(g, impl):
    """{peer impl: median} that tfmini row impl of group g is compared
    with: the other frameworks' rows of its own variant ("numpy-forward"
    for "tfmini-forward") when there are some, else those whose variant
    is no other tfmini row's (a traced or jitted form of the same work);
    {} for a row that is not tfmini's."""
    if not impl.startswith("tfmini"):
        return {}
    others = {i: b["stats"]["median"] for i, b in g.items()
              if not i.startswith("tfmini") and i not in NOT_PEERS}
    same = {i: t for i, t in others.items()
            if _variant(i) and _variant(i) == _variant(impl)}
    if same:
        return same
    mine = {_variant(i) for i in g if i.startswith("tfmini")}
    mine.discard(_variant(impl))
    return {i: t for i, t in others.items()
            if not _variant(i) or _variant(i) not in mine}


def _impl_order(impl):
    base = impl.split("-")[0]
    return (ORDER.index(base) if base in ORDER else len(ORDER), impl)


def _group_order(name):
    for k, prefix in enumerate(["tiny a", "tiny m", "matmul", "add",
                                "reduce"]):
        if name.startswith(prefix):
            return (k, len(name), name)
    return (9, 0, name)


def _cell(b, ref):
    if b is None:
        return "-"
    t = b["stats"]["median"]
    text = _fmt_time(t)
    info = b.get("extra_info", {})
    if info.get("work"):
        scale = 1e9
        text += f", {info['work'] / t / scale:.1f} {info['unit']}"
    if ref is not None:
        text = f"**{ref['stats']['median'] / t:.2f}** ({text})"
    return text


def _fmt_time(t):
    # 999.7 us shows as "1 ms", not "1e+03 us"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if float(f"{t / scale:.3g}") >= 1:
            return f"{float(f'{t / scale:.3g}'):g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def frameworks_line(data, pythons, ran):
    """Which version of each framework made its rows, and under which
    interpreter (from conftest.py's machine_info), and which had none."""
    versions = dict(data.get("machine_info", {}).get("frameworks", {}))
    for part in data.get("parts", []):
        versions.update(part.get("frameworks", {}))
    have = {b["params"]["impl"].split("-")[0] for b in framework_rows(data)}
    said, missing = [], []
    for fw in ran:
        if fw not in have:
            missing.append(NAMES[fw])
            continue
        text = f"{NAMES[fw]} {versions.get(fw, '?')}"
        if pythons.get(fw, sys.executable) != sys.executable:
            text += f" (`{pythons[fw]}`)"
        said.append(text)
    line = "Frameworks: " + ", ".join(said) + "."
    if missing:
        line += (f" No rows from {', '.join(missing)} (not importable in "
                 f"its interpreter, or not selected).")
    return line


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="use this pytest-benchmark JSON file")
    p.add_argument("--out", default=str(HERE / "RESULTS.md"))
    p.add_argument("--python", action="append", metavar="FW=PATH",
                   help="run framework FW's process under interpreter "
                        "PATH (also: TFMINI_BENCH_PYTHON=FW=PATH,...)")
    p.add_argument("-k", dest="select", metavar="EXPR",
                   help="only the benchmarks pytest -k EXPR selects")
    p.add_argument("pytest_args", nargs="*",
                   help="more pytest arguments (after --)")
    args, unknown = p.parse_known_args()
    pytest_args = list(args.pytest_args) + unknown
    user_k = args.select
    pythons = interpreters(args.python)
    if args.json:
        path = args.json
        command = f"python3 -m pytest benchmarks --benchmark-enable " \
                  f"--benchmark-json={path}; python3 benchmarks/report.py " \
                  f"--json {path}"
        with open(path) as f:
            data = json.load(f)
        ran = list(PROCESSES)
    else:
        # A process per framework: OpenBLAS's (NumPy's), TensorFlow's,
        # PyTorch's and XLA's thread pools, and ours, keep spinning after
        # their work, and in one process they take the cores from
        # whichever framework runs next (a traced Keras fit after NumPy's
        # matmuls: 14 ms instead of 8).
        data = {"benchmarks": [], "parts": []}
        extra = list(pytest_args)
        ran = list(PROCESSES)
        for python in dict.fromkeys(pythons.values()):
            check_interpreter([f for f in ran if pythons[f] == python][0],
                              python)
        for fw, select in PROCESSES.items():
            if user_k:
                select = f"({user_k}) and ({select})"
            fd, path = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            run(pythons[fw], path, extra + ["-k", select])
            with open(path) as f:
                text = f.read()
            os.unlink(path)
            if not text.strip():
                continue    # every benchmark skipped (not installed)
            part = json.loads(text)
            data["benchmarks"] += part["benchmarks"]
            data["parts"].append(part.get("machine_info", {}))
        command = "python3 benchmarks/report.py " + " ".join(
            [f"--python {fw}={pythons[fw]}" for fw in PROCESSES
             if pythons[fw] != sys.executable] +
            ([f"-k '{user_k}'"] if user_k else []) + pytest_args)
    threads = os.environ.get("OMP_NUM_THREADS", "all")
    text = f"""# Benchmark results

Latest run: {datetime.date.today()}, on {machine()}; threads: {threads}.
{frameworks_line(data, pythons, ran)}

Command: `{command.strip()}`

Median time per call; **ratio** = NumPy's median / the other's (above 1:
faster than NumPy), throughput in GB/s (memory traffic) or GFLOP/s. One
run on one machine: compare ratios within this table only. **best peer / it**
(tfmini's rows): the fastest other framework's median over tfmini's,
above 1 when tfmini is the fastest, and which row that was (the rows of
tfmini's own variant when the group has them: "numpy-forward" for
"tfmini-forward").

{table(data)}
"""
    out = pathlib.Path(args.out)
    out.write_text(text + kept_sections(out))
    print(text)


def kept_sections(path):
    """The '## ' sections other scripts wrote into RESULTS.md (GPU,
    serving, distributed, quantization figures, each with its own
    command): this table replaces only what comes before them."""
    try:
        old = path.read_text()
    except OSError:
        return ""
    at = old.find("\n## ")
    return old[at:] if at >= 0 else ""


if __name__ == "__main__":
    main()
