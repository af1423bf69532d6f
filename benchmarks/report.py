"""Run the benchmarks and write their ratio table to RESULTS.md.

    python3 benchmarks/report.py                 run, then write the table
    python3 benchmarks/report.py --json F.json   table from an earlier
                                                 --benchmark-json run

Ratio = NumPy's median time / the other's median time, from one run on
one machine: above 1 is faster than NumPy. One run is four pytest
processes, one after the other: tfmini's rows, NumPy's, TensorFlow's
and PyTorch's, then JAX's, so that no framework's idle threads slow
another's."""
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
# ids): tfmini's rows, NumPy's, TensorFlow's and PyTorch's, then JAX's
# (XLA's thread pool spins like the others).
PROCESSES = ["not (numpy or tensorflow or torch or jax)", "numpy",
             "tensorflow or torch", "jax"]


def run(json_path, extra):
    cmd = [sys.executable, "-m", "pytest", str(HERE), "-p",
           "no:cacheprovider", "--benchmark-enable",
           f"--benchmark-json={json_path}", "-q"] + extra
    print("running:", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=ROOT)
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


def table(data):
    """One row per (benchmark, implementation or variant): its median,
    and NumPy's median over it (NumPy's own row of the group, or for a
    variant like "numpy-forward" the plain "numpy" row)."""
    groups = {}
    for b in data["benchmarks"]:
        groups.setdefault(b["group"], {})[b["params"]["impl"]] = b
    head = ["benchmark", "implementation", "median (throughput)",
            "NumPy / it", "best peer / it"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in sorted(groups, key=_group_order):
        g = groups[name]
        ref = g.get("numpy")
        peers = [b["stats"]["median"] for i, b in g.items()
                 if not i.startswith("tfmini")]
        for impl in sorted(g, key=_impl_order):
            b = g[impl]
            ratio = "-" if ref is None or impl == "numpy" else \
                f"**{ref['stats']['median'] / b['stats']['median']:.2f}**"
            best = "-" if not peers or not impl.startswith("tfmini") else \
                f"**{min(peers) / b['stats']['median']:.2f}**"
            rows.append(f"| {name} | {impl} | {_cell(b, None)} | {ratio} "
                        f"| {best} |")
    return "\n".join(rows)


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
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="use this pytest-benchmark JSON file")
    p.add_argument("--out", default=str(HERE / "RESULTS.md"))
    p.add_argument("pytest_args", nargs="*",
                   help="more pytest arguments (e.g. -k matmul)")
    args = p.parse_args()
    if args.json:
        path = args.json
        command = f"python3 -m pytest benchmarks --benchmark-enable " \
                  f"--benchmark-json={path}; python3 benchmarks/report.py " \
                  f"--json {path}"
        with open(path) as f:
            data = json.load(f)
    else:
        # A process per framework: OpenBLAS's (NumPy's), TensorFlow's and
        # PyTorch's thread pools, and ours, keep spinning after their
        # work, and in one process they take the cores from whichever
        # framework runs next (a traced Keras fit after NumPy's matmuls:
        # 14 ms instead of 8).
        data = None
        extra, user_k = list(args.pytest_args), None
        if "-k" in extra:
            i = extra.index("-k")
            user_k = extra[i + 1]
            del extra[i:i + 2]
        for select in PROCESSES:
            if user_k:
                select = f"({user_k}) and ({select})"
            fd, path = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            run(path, extra + ["-k", select])
            with open(path) as f:
                text = f.read()
            os.unlink(path)
            if not text.strip():
                continue    # every benchmark skipped (TF, PyTorch absent)
            part = json.loads(text)
            if data is None:
                data = part
            else:
                data["benchmarks"] += part["benchmarks"]
        command = "python3 benchmarks/report.py " + " ".join(args.pytest_args)
    text = f"""# Benchmark results

Latest run: {datetime.date.today()}, on {machine()}.

Command: `{command.strip()}`

Median time per call; **ratio** = NumPy's median / the other's (above 1:
faster than NumPy), throughput in GB/s (memory traffic) or GFLOP/s. One
run on one machine: compare ratios within this table only. **best peer / it**
(tfmini's rows): the fastest other framework's median over tfmini's,
above 1 when tfmini is the fastest.

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
