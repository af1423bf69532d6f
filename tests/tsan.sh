#!/usr/bin/env bash
# Build tfmini with ThreadSanitizer into a temporary copy of the tree (the
# normal build is left alone) and run the threaded tests against it.
#
#   bash tests/tsan.sh                  tests/test_threads.py
#   bash tests/tsan.sh tests/test_x.py  pytest arguments of your choice
#
# Python is not built with TSan: the runtime is preloaded into the
# interpreter alone (bash itself crashes under it), and tests/tsan.supp
# silences reports inside CPython, NumPy and libgomp, never in tfmini.
# OpenMP runs one thread (OMP_NUM_THREADS=1): libgomp is not instrumented,
# so TSan cannot see its barriers and would report every parallel loop;
# the races between Python threads in tfmini's own code stay visible.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
py=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
. "$root/tests/sanitizer_lib.sh"
tsan=$(sanitizer_runtime tsan.sh libtsan.so libtsan2)
sanitizer_build tsan.sh thread thread

[ $# -eq 0 ] && set -- tests/test_threads.py
cd "$work"
# PYTHONPATH: this copy, not an editable install of another tree.
export PYTHONPATH="$work" OMP_NUM_THREADS=1 TFMINI_UNDER_SANITIZER=1
opts="suppressions=$work/tests/tsan.supp:second_deadlock_stack=1"
opts="$opts:history_size=4"

# Self-check: two threads run tfm_memplan_assign on one array through
# ctypes (without the GIL). TSan must see that race in this build, or
# the harness is broken and a clean run below would prove nothing.
mkdir -p "$work/selfcheck"
LD_PRELOAD="$tsan" TSAN_OPTIONS="$opts:log_path=$work/selfcheck/tsan" \
    "$py" - "$work" <<'PY' || true     # exits 66 when TSan reported
import ctypes, sys, threading
import tfmini._C as C
assert C.__file__.startswith(sys.argv[1]), C.__file__
class Block(ctypes.Structure):
    _fields_ = [("first", ctypes.c_int32), ("last", ctypes.c_int32),
                ("size", ctypes.c_size_t), ("offset", ctypes.c_size_t)]
n = 4000
blocks = (Block * n)(*[Block(0, n, 64 + i, 0) for i in range(n)])
total = ctypes.c_size_t()
lib = ctypes.CDLL(C.__file__)
go = threading.Barrier(2)
def body():
    go.wait()
    lib.tfm_memplan_assign(blocks, n, ctypes.c_size_t(64), ctypes.byref(total))
ts = [threading.Thread(target=body) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
PY
if ! grep -qs "data race" "$work"/selfcheck/tsan*; then
    echo "tsan.sh: TSan missed the self-check's race: harness broken" >&2
    exit 1
fi

# Reports go to files: pytest captures stderr.
mkdir -p "$work/reports"
status=0
LD_PRELOAD="$tsan" TSAN_OPTIONS="$opts:log_path=$work/reports/tsan" \
    "$py" -m pytest -p no:cacheprovider "$@" || status=$?
sanitizer_exit "$status" ThreadSanitizer 120
