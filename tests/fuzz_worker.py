"""The parent side of the fuzzers that run their cases in worker
processes (tests/api_fuzz.py, tests/saved_model_fuzz.py). A worker
appends a line to a marks file at each step of each case; one that adds
none for case_timeout seconds is killed, so that a hang, like a crash,
ends the worker at a known case and the parent restarts after it."""
import os
import subprocess
import sys
import time


def run_worker(argv, tmp, case_timeout, env, cwd):
    """Runs `python argv` (whose argv names tmp/marks, emptied first)
    until it exits or stalls. Returns (rc, stderr, mark lines); rc is
    "timeout" when the worker was killed for stalling."""
    marks = os.path.join(tmp, "marks")
    open(marks, "w").close()
    with open(os.path.join(tmp, "stderr"), "w+b") as errf:
        p = subprocess.Popen([sys.executable] + argv,
                             stdout=subprocess.DEVNULL, stderr=errf,
                             env=env, cwd=cwd)
        seen, since = 0, time.monotonic()
        while p.poll() is None:
            time.sleep(0.02)
            size = os.path.getsize(marks)
            if size != seen:
                seen, since = size, time.monotonic()
            elif time.monotonic() - since > case_timeout:
                p.kill()
                p.wait()
                break
        rc = "timeout" if p.returncode == -9 else p.returncode
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    with open(marks) as f:
        lines = f.read().splitlines()
    return rc, err, lines


def count_outcomes(lines, outcomes):
    """Adds the outcome of each done case ("D <case> <outcome>")."""
    for line in lines:
        if line.startswith("D "):
            res = line.split(" ", 2)[2]
            outcomes[res] = outcomes.get(res, 0) + 1
