"""tfmini_model_server under wrk, against a Python http.server baseline.

    python3 benchmarks/serving_bench.py [--duration 5] [--rounds 3]
                                        [--pin auto|off|S:W]
                                        [--rss-requests N] [--rss-only]
                                        [--write-results]

Saves an MLP and a small CNN from Python (model.export), serves each with
tools/serving's C server (without and with --enable_batching) and with
tools/serving/python_baseline.py, and drives each with wrk on loopback
(POST of a one-row {"instances": ...} body) at 1, 8 and 64 connections:
requests/s and p50/p99 latency, as a markdown table. Each point runs
--rounds times, the servers taking turns, and reports its median round
(on a shared machine the load moves; interleaving puts the C server and
the baseline under the same load). Each point also gives the server's
CPU time per request (utime + stime from /proc over wrk's request
count): on a shared machine a steadier figure than requests/s. With
--pin (default auto: on 2 or more CPUs the servers get the first half
and wrk the second, through sched_setaffinity) every server, C and
Python alike, runs on the same CPUs and wrk on others, so that wrk's
own CPU (~9 us a request) is not taken from the server. Then the C
server's RSS (VmRSS), sampled every --rss-sample seconds over
--rss-requests requests (10^6 by default) at --rss-connections, without
and with batching; --rss-only skips the throughput table.
--write-results puts the table into benchmarks/RESULTS.md's "Serving
(wrk)" section ("Serving (wrk), nothing pinned" with --pin off: both
are kept, the servers then free to use every CPU, their worker pools
sized to them, and wrk beside them). Needs wrk, libmicrohttpd-dev, libjansson-dev and
libcjson-dev (Debian) and the package built (python3 setup.py
build_ext --inplace)."""
import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import tfmini as tf  # noqa: E402
import tfmini.rt  # noqa: E402

SECTION = "## Serving (wrk)"
UNPINNED_SECTION = "## Serving (wrk), nothing pinned"
RSS_SECTION = "## Serving: RSS over many requests"
FLAGS = {"C": ["--tensorflow_intra_op_parallelism=1"],
         "C, batching": ["--tensorflow_intra_op_parallelism=1",
                         "--enable_batching", "--num_batch_threads=1"]}


def pin_sets(spec):
    """(server CPUs, wrk CPUs) from --pin, or (None, None)."""
    if spec == "off":
        return None, None
    if spec == "auto":
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            return None, None
        half = len(cpus) // 2
        return set(cpus[:half]), set(cpus[half:])
    try:
        a, b = spec.split(":")
        parse = lambda t: {int(c) for c in t.split(",")}
        return parse(a), parse(b)
    except ValueError:
        sys.exit(f"--pin wants auto, off or SERVER_CPUS:WRK_CPUS "
                 f"(e.g. 0:1), not {spec!r}")


def _affinity(cpus):
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def build_server(out):
    r = subprocess.run(["make", "-C", str(ROOT / "tools" / "serving"),
                        f"BUILD={out}", f"RT_INC={tfmini.rt.get_include()}",
                        f"RT_LIB={tfmini.rt.get_lib()}",
                        "RT_LINK=-ltfmini_rt"], capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(r.stdout + r.stderr)
    return out / "tfmini_model_server"


def save_models(base):
    """{name: (version folder's parent, one input row)}."""
    tf.random.set_seed(0)
    mlp = tf.keras.Sequential([
        tf.keras.layers.Input((64,)),
        tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(10)])
    cnn = tf.keras.Sequential([
        tf.keras.layers.Input((28, 28, 1)),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(16, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10)])
    rng = np.random.RandomState(0)
    out = {}
    for name, model, shape in (("mlp", mlp, (64,)),
                               ("cnn", cnn, (28, 28, 1))):
        model.export(str(base / name / "1"), verbose=False)
        row = np.round(rng.rand(*shape), 3).astype(np.float32)
        out[name] = (base / name, row, model)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(proc, url, body):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode}")
        try:
            req = urllib.request.Request(url, data=body)
            with urllib.request.urlopen(req, timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{url} did not answer")


def start(kind, binary, name, base, port, cpus=None):
    if kind == "python":
        cmd = [sys.executable, str(ROOT / "tools" / "serving" /
                                   "python_baseline.py"), f"--port={port}",
               f"--name={name}", f"--model={base / '1'}"]
    else:
        cmd = [str(binary), f"--rest_api_port={port}", f"--model_name={name}",
               f"--model_base_path={base}", "--rest_api_host=127.0.0.1",
               "--file_system_poll_wait_seconds=0"]
        cmd += FLAGS[kind]
    # One OpenMP thread per run, for each: requests already run side by
    # side, and kernels splitting over every core oversubscribe them.
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env,
                            preexec_fn=_affinity(cpus))


def lua_script(path, body):
    path.write_text('wrk.method = "POST"\n'
                    'wrk.headers["Content-Type"] = "application/json"\n'
                    f'wrk.body = [==[{body.decode()}]==]\n')
    return path


def _secs(text):
    m = re.match(r"([\d.]+)(us|ms|s|m)", text)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]
    return float(m.group(1)) * scale


def cpu_ticks(pid):
    """utime + stime of pid, in clock ticks."""
    f = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1]
    f = f.split()
    return int(f[11]) + int(f[12])


def wrk(url, script, conns, duration, threads, cpus=None, pid=None):
    t0 = cpu_ticks(pid) if pid else 0
    r = subprocess.run(["wrk", f"-t{min(conns, threads)}", f"-c{conns}",
                        f"-d{duration}", "--latency", "--timeout", "10s",
                        "-s", str(script), url], capture_output=True,
                       text=True, preexec_fn=_affinity(cpus))
    ticks = cpu_ticks(pid) - t0 if pid else 0
    out = r.stdout
    if r.returncode:
        sys.exit(out + r.stderr)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _secs(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = _secs(re.search(r"\s99%\s+(\S+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    cpu_us = ticks * 1e6 / os.sysconf("SC_CLK_TCK") / max(total, 1)
    return {"rps": rps, "p50": p50, "p99": p99, "requests": total,
            "cpu_us": cpu_us, "non2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(1) if errors else ""}


def vm_rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def fmt_ms(t):
    return f"{t * 1e3:.2f} ms"


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical cores"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", default="5s", help="per wrk run")
    p.add_argument("--connections", default="1,8,64")
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--kinds", default="C,C+batching,python",
                   help="comma-separated: C, C+batching, python")
    p.add_argument("--wrk-threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3,
                   help="each point this many times, interleaved; the "
                        "median round is reported")
    p.add_argument("--pin", default="auto",
                   help="auto, off, or SERVER_CPUS:WRK_CPUS such as 0:1 "
                        "(comma-separated CPU numbers)")
    p.add_argument("--rss-requests", type=int, default=10**6,
                   help="0 skips the RSS check")
    p.add_argument("--rss-connections", type=int, default=8)
    p.add_argument("--rss-sample", type=int, default=10,
                   help="seconds between RSS samples")
    p.add_argument("--rss-only", action="store_true",
                   help="only the RSS check (first model of --models)")
    p.add_argument("--write-results", action="store_true")
    args = p.parse_args()
    if not shutil.which("wrk"):
        sys.exit("serving_bench needs wrk: apt-get install wrk")
    kinds = [k.replace("C+batching", "C, batching")
             for k in args.kinds.split(",")]
    conns = [int(c) for c in args.connections.split(",")]
    srv_cpus, wrk_cpus = pin_sets(args.pin)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="serving_bench_"))
    binary = build_server(tmp / "bin")
    models = save_models(tmp / "models")
    rows = []
    for name in [] if args.rss_only else args.models.split(","):
        base, row, model = models[name]
        body = json.dumps({"instances": [row.tolist()]}).encode()
        want = model(row[None]).numpy()[0]
        script = lua_script(tmp / f"{name}.lua", body)
        # Every server of this model up at once, and the points taken in
        # turn, round after round: on a shared machine the load moves
        # between rounds, and a ratio is only honest when both of its
        # figures saw the same load. Each point reports its median round.
        procs, urls = {}, {}
        try:
            for kind in kinds:
                port = free_port()
                urls[kind] = f"http://127.0.0.1:{port}/v1/models/{name}" \
                    ":predict"
                procs[kind] = start(kind, binary, name, base, port, srv_cpus)
                got = wait_up(procs[kind], urls[kind], body)
                np.testing.assert_allclose(got["predictions"][0], want,
                                           rtol=1e-4, atol=1e-5)
            runs = {}
            for r in range(args.rounds):
                for c in conns:
                    for kind in kinds:
                        res = wrk(urls[kind], script, c, args.duration,
                                  args.wrk_threads, wrk_cpus,
                                  procs[kind].pid)
                        runs.setdefault((kind, c), []).append(res)
                        print(f"{name:4s} {kind:12s} c={c:<3d} round {r} "
                              f"{res['rps']:9.0f} req/s  p50 "
                              f"{fmt_ms(res['p50'])}  p99 "
                              f"{fmt_ms(res['p99'])}  CPU "
                              f"{res['cpu_us']:.1f} us/req  non-2xx "
                              f"{res['non2xx']}", file=sys.stderr,
                              flush=True)
        finally:
            for proc in procs.values():
                proc.terminate()
                proc.wait(timeout=30)
        for kind in kinds:
            for c in conns:
                got = sorted(runs[(kind, c)], key=lambda x: x["rps"])
                med = dict(got[len(got) // 2])
                med["non2xx"] = sum(x["non2xx"] for x in got)
                med["cpu_us"] = sorted(x["cpu_us"] for x in got)[
                    len(got) // 2]
                # Against the baseline's run of the same round (the
                # nearest in time), not the median of another round.
                if kind != "python" and "python" in kinds:
                    med["ratios"] = sorted(
                        a["rps"] / b["rps"] for a, b in
                        zip(runs[(kind, c)], runs[("python", c)]))
                    med["cpu_ratios"] = sorted(
                        b["cpu_us"] / max(a["cpu_us"], 1e-9) for a, b in
                        zip(runs[(kind, c)], runs[("python", c)]))
                rows.append((name, kind, c, med))
    rss = []
    if args.rss_requests:
        name = args.models.split(",")[0]
        base, row, _ = models[name]
        body = json.dumps({"instances": [row.tolist()]}).encode()
        script = lua_script(tmp / "rss.lua", body)
        for kind in [k for k in kinds if k != "python"]:
            rss.append(rss_run(kind, binary, name, base, body, script, args,
                               srv_cpus, wrk_cpus))
    shutil.rmtree(tmp, ignore_errors=True)
    section = RSS_SECTION if args.rss_only else \
        SECTION if srv_cpus else UNPINNED_SECTION
    text = report(rows, rss, args, srv_cpus, wrk_cpus, section)
    print(text)
    if args.write_results:
        write_results(text, section)


def rss_run(kind, binary, name, base, body, script, args, srv_cpus,
            wrk_cpus):
    """The C server's VmRSS over --rss-requests requests: a dict."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/models/{name}:predict"
    proc = start(kind, binary, name, base, port, srv_cpus)
    c = args.rss_connections
    try:
        wait_up(proc, url, body)
        # Arenas, pools and the allocator's free lists reach their size
        # in the warm-up; what grows after it is a leak.
        wrk(url, script, c, "2s", args.wrk_threads, wrk_cpus)
        before = vm_rss_kib(proc.pid)
        # wrk stops on time, not on a count: runs of --rss-sample
        # seconds until the count is reached, RSS sampled after each.
        done, bad, samples = 0, 0, []
        t0 = time.monotonic()
        while done < args.rss_requests:
            res = wrk(url, script, c, f"{args.rss_sample}s",
                      args.wrk_threads, wrk_cpus)
            done += res["requests"]
            bad += res["non2xx"]
            samples.append((done, vm_rss_kib(proc.pid)))
            print(f"RSS {kind}: {done:>9,} requests  {samples[-1][1]:,} "
                  f"KiB", file=sys.stderr, flush=True)
        secs = time.monotonic() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"name": name, "kind": kind, "requests": done, "before": before,
            "after": samples[-1][1], "max": max(k for _, k in samples),
            "samples": samples, "non2xx": bad, "seconds": secs,
            "conns": c}


def report(rows, rss, args, srv_cpus, wrk_cpus, section):
    command = "python3 benchmarks/serving_bench.py " + " ".join(
        a for a in sys.argv[1:] if a != "--write-results")
    pinned = (f"the servers pinned to CPU {_cpus(srv_cpus)} and wrk to "
              f"CPU {_cpus(wrk_cpus)} (sched_setaffinity; C and Python "
              f"alike)" if srv_cpus else "nothing pinned")
    lines = [section, "",
             f"Run: {datetime.date.today()}, on {machine()}; wrk and the "
             f"server on the same machine (loopback), {pinned}.", "",
             f"Command: `{command.strip()}`", ""]
    if rows:
        lines += [
             "One-row predict requests (`{\"instances\": [row]}`), "
             f"{args.duration} per run; each point is the median of "
             f"{args.rounds} rounds, the servers' runs interleaved (all "
             "of a model's servers up at once); non-2xx summed over the "
             "rounds. MLP 64-256-256-10, CNN "
             "28x28x1 conv8-pool-conv16-pool-dense10, both saved with "
             "`model.export`. **vs Python** = requests/s over the "
             "`http.server` baseline's "
             "(tools/serving/python_baseline.py) at the same connections "
             "in the same round: the median of the rounds' ratios (the "
             "lowest and highest in brackets). **CPU/req** = the "
             "server's utime + stime over wrk's request count (median "
             "round), and **CPU vs Python** the baseline's CPU per "
             "request over this server's, same-round ratios as above. "
             "Server flags: C `" + " ".join(FLAGS["C"]) + "`; C, batching `"
             + " ".join(FLAGS["C, batching"]) + "`; every server runs "
             "with OMP_NUM_THREADS=1.",
             "", "| model | server | connections | requests/s | p50 | p99 "
             "| vs Python | CPU/req | CPU vs Python | non-2xx |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, kind, c, r in rows:
        lines.append(f"| {name} | {kind} | {c} | {r['rps']:.0f} | "
                     f"{fmt_ms(r['p50'])} | {fmt_ms(r['p99'])} | "
                     f"{_ratio(r.get('ratios'))} | {r['cpu_us']:.1f} us | "
                     f"{_ratio(r.get('cpu_ratios'))} | {r['non2xx']} |")
    if rows:
        lines.append("")
    if rss:
        lines += ["RSS (VmRSS of the C server, KiB) after a 2 s "
                  "warm-up, then sampled every "
                  f"{args.rss_sample} s of load ({rss[0]['conns']} "
                  "connections) until the request count was reached:",
                  "", "| model | server | requests | seconds | RSS before "
                  "| RSS after | RSS max | growth | non-2xx |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rss:
            lines.append(
                f"| {r['name']} | {r['kind']} | {r['requests']:,} | "
                f"{r['seconds']:.0f} | {r['before']:,} | {r['after']:,} | "
                f"{r['max']:,} | {r['after'] - r['before']:+,} | "
                f"{r['non2xx']} |")
        lines.append("")
        for r in rss:
            pts = ", ".join(f"{n // 1000}k: {k:,}" for n, k in r["samples"])
            lines.append(f"Samples, {r['kind']} (requests: KiB): {pts}.")
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _cpus(cpus):
    return ",".join(str(c) for c in sorted(cpus))


def _ratio(q):
    if not q:
        return "-"
    return f"**{q[len(q) // 2]:.1f}x** ({q[0]:.1f}-{q[-1]:.1f})"


def write_results(text, section):
    """Replace section in benchmarks/RESULTS.md where it stands (the RSS
    and unpinned sections, when new, go after the pinned one), else
    append."""
    path = HERE / "RESULTS.md"
    old = path.read_text()

    def span(title):
        at = old.find(title + "\n")
        if at < 0:
            return None
        nxt = old.find("\n## ", at + len(title))
        return at, (nxt + 1 if nxt >= 0 else len(old))

    where = span(section)
    if where:
        at, end = where
        new = old[:at] + text + ("\n" if end < len(old) else "") + old[end:]
    elif section in (RSS_SECTION, UNPINNED_SECTION) and span(SECTION):
        end = span(SECTION)[1]
        new = old[:end].rstrip("\n") + "\n\n" + text + \
            ("\n" + old[end:] if end < len(old) else "")
    else:
        new = old.rstrip("\n") + "\n\n" + text
    path.write_text(new)


if __name__ == "__main__":
    main()
