"""Every fuzzer, for longer than CI runs them:

    python3 tests/fuzz_all.py --minutes 10

Rounds until the time is up: the API fuzzer's families (tests/api_fuzz.py:
tf.data, Keras layers, control flow; WeakTensor, the eager fast paths,
unknown-rank signatures, extension types, Optional / from_generator /
py_function) and the saved-model file fuzzer
(tests/saved_model_fuzz.py), each with a fresh seed per round, in worker
processes; and the op fuzzer (tests/test_fuzz_ops.py) under pytest with
fresh random examples. Prints the case counts and every problem (a crash,
hang, leak or unclear error, with the seed and case that reproduce it);
exits 1 if there was one."""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def passed(pytest_out):
    """Tests passed, from pytest -q's progress lines."""
    return sum(line.split("[")[0].count(".")
               for line in pytest_out.splitlines()
               if re.fullmatch(r"[.sxXFE]+\s*(\[\s*\d+%\])?", line.strip()))


def op_fuzz_round(examples, seconds):
    env = dict(os.environ, TFMINI_FUZZ_EXAMPLES=str(examples),
               TFMINI_FUZZ_RANDOM="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH",
                                                             ""))
    cmd = [sys.executable, "-m", "pytest",
           os.path.join(HERE, "test_fuzz_ops.py"), "-q", "-x", "-m",
           "not slow", "-p", "no:cacheprovider", "-W",
           "ignore::RuntimeWarning"]
    try:
        r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True,
                           text=True, timeout=max(seconds, 30))
    except subprocess.TimeoutExpired as e:
        # Out of time: what passed so far counts.
        out = e.stdout or ""
        out = out.decode(errors="replace") if isinstance(out, bytes) \
            else out
        return passed(out), []
    tests = passed(r.stdout)
    if r.returncode != 0:
        return tests, [f"test_fuzz_ops.py ({examples} random examples per "
                       f"property):\n{r.stdout[-4000:]}{r.stderr[-1000:]}"]
    return tests, []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--cases", type=int, default=300,
                    help="cases per family and round")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    args = ap.parse_args()
    import api_fuzz
    import saved_model_fuzz
    end = time.monotonic() + 60 * args.minutes
    counts, problems, seed, rounds = {}, [], args.seed, 0
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    while time.monotonic() < end:
        jobs = [(f, lambda f=f: api_fuzz.drive(f, seed, args.cases, env=env))
                for f in api_fuzz.FAMILIES]
        jobs.append(("saved_model", lambda: saved_model_fuzz.drive(
            seed, args.cases, env=env)))
        for name, job in jobs:
            if time.monotonic() >= end:
                break
            p, outcomes = job()
            counts[name] = counts.get(name, 0) + sum(outcomes.values())
            problems += [f"[{name} seed {seed}] {x}" for x in p]
            print(f"{name} seed {seed}: {sum(outcomes.values())} cases, "
                  f"{len(p)} problems", flush=True)
        if time.monotonic() < end:
            n, p = op_fuzz_round(50, end - time.monotonic())
            counts["op tests"] = counts.get("op tests", 0) + n
            problems += p
            print(f"ops: {n} tests passed (properties with 50 random "
                  f"examples each), {len(p)} problems", flush=True)
        seed += 1
        rounds += 1
    total = sum(counts.values())
    print(f"\n{rounds} rounds, {total} cases: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for x in problems:
        print("\nPROBLEM", x)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
