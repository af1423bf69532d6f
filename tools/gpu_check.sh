#!/usr/bin/env bash
# The GPU machine's one command (issue 21): build with CUDA, run tests/gpu
# and the GPU benchmark, and leave every log under $OUT (./gpu-out when
# unset). Without a GPU it stops within seconds, saying so. Run
# tools/vendor_eigen.sh first on a machine that has Eigen (the GPU machine
# may not), so that third_party/ travels with the tree.
#
#   OUT=/tmp/x tools/gpu_check.sh      # exit 0: built, tests passed
#
# It writes 8 files under $OUT, no more: a device run brings back at most
# 8 (summary.txt, env.txt, build.log, tests-gpu-conv.log,
# tests-gpu-fused.log, tests-gpu.log, bench.txt, tests-gpu-slow.log).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
say() { echo "[gpu_check $(date -u +%H:%M:%S)] $*" | tee -a "$SUMMARY"; }
START=$(date +%s)
# One deadline for the whole run: a device check is lent for minutes, and
# its script must end inside 8 of them (GPU_CHECK_TOTAL_S, 470 s by
# default, leaves a margin for the copies back). Each long step runs
# through run_for: its own cap, cut to what is left after RESERVE seconds
# (of the default total; scaled with another) kept for the steps after
# it, so a slow build takes time from the slow tests and the benchmark,
# never from the deadline.
TOTAL=${GPU_CHECK_TOTAL_S:-470}
cap() {
    local left=$(( TOTAL - ($(date +%s) - START) - ${2:-0} * TOTAL / 470 ))
    echo $(( left < $1 ? (left > 0 ? left : 0) : $1 ))
}
# run_for NAME CAP RESERVE CMD...: CMD under the cap (killed 5 s after
# its TERM if it ignores it), or a line saying it was skipped when under
# 5 s are left for it (exit 124, timeout's).
run_for() {
    local name=$1 t
    t=$(cap "$2" "$3")
    shift 3
    if [ "$t" -lt 5 ]; then
        say "$name skipped: out of time (${TOTAL}s in all)"
        return 124
    fi
    timeout -k 5 "$(( t > 10 ? t - 5 : t ))" "$@"
}
# crashed RC LOG: whether a pytest run died (a signal: segfault, abort)
# or hit a sticky CUDA error, after which every later CUDA call in that
# process fails and the tests after the culprit fail for nothing.
crashed() {
    case $1 in 134|135|136|139) return 0;; esac
    grep -qE "illegal memory access|misaligned address|unspecified launch \
failure|cudaErrorIllegal|cudaErrorMisaligned|cudaErrorLaunchFailure|\
Fatal Python error" "$2" 2> /dev/null
}

# 1. A GPU, or stop now.
if ! command -v nvidia-smi > /dev/null 2>&1 ||
   ! nvidia-smi -L > "$OUT/env.txt" 2>&1 ||
   ! grep -q "^GPU " "$OUT/env.txt"; then
    say "no CUDA GPU visible (nvidia-smi / cudaGetDeviceCount)"
    exit 2
fi
say "$(head -1 "$OUT/env.txt")"
nvidia-smi >> "$OUT/env.txt" 2>&1

# 2. What the build needs.
if [ ! -f third_party/eigen3/Eigen/Core ] &&
   [ ! -f /usr/include/eigen3/Eigen/Core ] &&
   [ -z "${EIGEN3_INCLUDE_DIR:-}" ]; then
    say "no Eigen: run tools/vendor_eigen.sh before the device run"
    exit 3
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -c "import pytest, setuptools" 2> /dev/null; then
    if [ -d third_party/pylib ]; then
        export PYTHONPATH="$PYTHONPATH:$PWD/third_party/pylib"
    fi
fi
python3 - >> "$OUT/env.txt" 2>&1 << 'PY'
import sys, importlib
print(sys.version)
for m in ("numpy", "setuptools", "pytest", "torch"):
    try:
        print(m, importlib.import_module(m).__version__)
    except Exception as e:
        print(m, "missing:", e)
PY
{ echo "nvcc: $(command -v nvcc) $(nvcc --version 2>&1 | tail -1)"
  ls -d /usr/local/cuda* 2>&1
  ls /usr/local/cuda/include/cublas_v2.h /usr/local/cuda/lib64/libcublas.so* \
      2>&1 | head -5
  nproc; } >> "$OUT/env.txt" 2>&1
# nvidia-smi's table stays in env.txt; its driver line comes along.
grep -v "^[|+]" "$OUT/env.txt" >> "$SUMMARY"
grep -o "Driver Version: [0-9.]* *CUDA Version: [0-9.]*" "$OUT/env.txt" \
    >> "$SUMMARY"
if ! python3 -c "import pytest" 2> /dev/null; then
    say "no pytest (nor third_party/pylib): the tests cannot run;" \
        "tools/vendor_eigen.sh fills third_party/pylib"
fi

# The CUDA runtime the build will link (setup.py's own choice), asked
# for the GPU before minutes of building: a runtime newer than the
# driver (a CUDA 13 toolkit over a 12.x driver, say) builds fine and
# then finds no GPU. Also whether cuDNN starts: without it the
# convolutions run on host copies.
PRE=$(run_for "CUDA probe" 60 0 python3 - 2>&1 << 'PY'
import ctypes, os, sys
sys.dont_write_bytecode = True
os.environ.setdefault("TFMINI_CUDA", "1")
sys.argv = ["setup.py"]
try:
    import setup                         # the build's own choices
except (SystemExit, Exception) as e:     # no toolkit, numpy, DLPack...
    print(f"setup.py stops: {type(e).__name__}: {e}")
    sys.exit(3)


def load(d, flag):
    name = flag[3:] if flag.startswith("-l:") else f"lib{flag[2:]}.so"
    return ctypes.CDLL(os.path.join(d, name)), os.path.join(d, name)


try:
    rt, path = load(*setup.cuda_lib(setup.CUDA_HOME, "cudart"))
except OSError as e:
    print(f"cudart cannot be loaded: {e}")
    sys.exit(5)
rt.cudaGetErrorString.restype = ctypes.c_char_p
v, drv, n = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
rt.cudaRuntimeGetVersion(ctypes.byref(v))
rt.cudaDriverGetVersion(ctypes.byref(drv))
e = rt.cudaGetDeviceCount(ctypes.byref(n))
print(f"cudart {v.value} ({path}), driver's CUDA {drv.value}: "
      f"cudaGetDeviceCount {rt.cudaGetErrorString(e).decode()}, "
      f"{n.value if e == 0 else 0} GPU(s)")
if e or n.value < 1:
    sys.exit(5)
if setup.CUDNN:
    inc, d, flag = setup.CUDNN
    try:
        dnn, p = load(d, flag)
        dnn.cudnnGetErrorString.restype = ctypes.c_char_p
        h = ctypes.c_void_p()
        s = dnn.cudnnCreate(ctypes.byref(h))
        print(f"cudnn {dnn.cudnnGetVersion()} ({p}): cudnnCreate "
              f"{dnn.cudnnGetErrorString(s).decode()}")
        if s == 0:
            dnn.cudnnDestroy(h)
    except OSError as e:
        print(f"cudnn: cannot load: {e}")
PY
)
PRE_RC=$?
echo "$PRE" >> "$OUT/env.txt"
say "$(echo "$PRE" | grep -E "^(cudart|cudnn|setup.py)" | tr '\n' ' ')"
if [ "$PRE_RC" -eq 124 ] || [ "$PRE_RC" -eq 137 ]; then
    say "the CUDA probe hung (cudaGetDeviceCount, cudnnCreate): no build"
    exit 5
elif [ "$PRE_RC" -eq 3 ]; then
    say "the build cannot start: $(echo "$PRE" | tail -3)"
    exit 3
elif [ "$PRE_RC" -ne 0 ]; then
    say "the CUDA runtime the build would link sees no GPU (exit 5" \
        "before building): $(echo "$PRE" | grep "^cudart" || echo "$PRE" |
        tail -2 | tr '\n' ' ')"
    exit 5
fi

# 3. Build with CUDA (every core).
# Not the MPI extension: no GPU test uses it, and an mpicc there that
# cannot build it would stop the whole build.
say "building with TFMINI_CUDA=1"
b0=$(date +%s)
run_for build "${GPU_CHECK_BUILD_S:-300}" 170 env TFMINI_CUDA=1 \
    TFMINI_NO_MPI=1 python3 setup.py build_ext --inplace \
    > "$OUT/build.log" 2>&1
BUILD_RC=$?
if [ "$BUILD_RC" -ne 0 ]; then
    case $BUILD_RC in
    124|137) say "BUILD OUT OF TIME after $(( $(date +%s) - b0 ))s" \
                 "(GPU_CHECK_BUILD_S, within GPU_CHECK_TOTAL_S; the" \
                 "objects made so far stay in build/):";;
    *) say "BUILD FAILED (rc $BUILD_RC) after $(( $(date +%s) - b0 ))s:";;
    esac
    grep -h '^nvcc:' "$OUT/build.log" | tee -a "$SUMMARY"
    tail -30 "$OUT/build.log" | tee -a "$SUMMARY"
    exit 4
fi
# nvcc's share of the build: it runs before the C files, on its own.
NVCC_T=$(grep -h '^nvcc:' "$OUT/build.log" | tail -1)
say "built in $(( $(date +%s) - b0 ))s${NVCC_T:+ ($NVCC_T)}"
if ! python3 -c "
import tfmini as tf, sys
from tfmini import _C
print('cuda_built', _C.cuda_built(), 'gpus', tf.config._gpu_count(),
      tf.config._why_no_gpu if not tf.config._gpu_count() else '')
sys.exit(0 if tf.config._gpu_count() else 1)" >> "$SUMMARY" 2>&1; then
    # The reason (CUDA's, e.g. a driver older than the runtime) is on
    # the python line above: on stdout too, where a device run shows it.
    say "no CUDA GPU visible (nvidia-smi / cudaGetDeviceCount): tfmini" \
        "registered none: $(grep -E '^(cuda_built|Traceback|[A-Za-z]*Error)' \
        "$SUMMARY" | tail -1)"
    exit 5
fi

# Whether the convolutions run on cuDNN (setup.py's line, and the
# library the extension loaded).
grep -h "GPU convolutions through" "$OUT/build.log" | tee -a "$SUMMARY"
python3 -c "
import ctypes, tfmini
f = getattr(ctypes.CDLL(tfmini._C.__file__), 'tfm_cuda_cudnn_version', None)
v = f() if f else 0
print('cudnn', v if v else 'not built in: Conv2D soft-places on the CPU')
" 2>&1 | tee -a "$SUMMARY"

# 4. tests/gpu: the convolution and pooling tests (cuDNN's first run),
# then one row per OpSpec and the rest; every other row (marked slow)
# comes last, after the benchmark, in what time is left. addopts is
# cleared: the project's names pytest-benchmark, which the GPU machine
# may lack.
PYTEST=(python3 -m pytest -o addopts= -q -rfE -p no:cacheprovider)
# The two long steps run on GPU_CHECK_WORKERS pytest-xdist workers (4 by
# default; the GPU image has xdist, 0 or its absence: one process): the
# CPU's share of ~2000 tests (references, tracing, NVRTC compiles)
# spreads over the cores while they share the GPU, each worker with its
# share of the OpenMP threads; a worker that crashes is replaced (the
# log names the test it ran), so only a sticky CUDA error reruns files.
WORKERS=${GPU_CHECK_WORKERS:-4}
XDIST=()
OMP_WORKER=${OMP_NUM_THREADS:-$(nproc)}
if [ "$WORKERS" -gt 1 ] && python3 -c "import xdist" 2> /dev/null; then
    XDIST=(-n "$WORKERS")
    OMP_WORKER=$(( $(nproc) / WORKERS > 0 ? $(nproc) / WORKERS : 1 ))
    say "tests/gpu on $WORKERS xdist workers, $OMP_WORKER OpenMP threads" \
        "each (GPU_CHECK_WORKERS=0: one process)"
fi
say "tests/gpu/test_gpu_conv.py (cuDNN convolutions, pooling)"
t0=$(date +%s)
run_for "conv tests" "${GPU_CHECK_CONV_S:-60}" 140 \
    "${PYTEST[@]}" tests/gpu/test_gpu_conv.py \
    --durations=5 \
    > "$OUT/tests-gpu-conv.log" 2>&1
CONV_RC=$?
say "conv tests rc=$CONV_RC in $(( $(date +%s) - t0 ))s:" \
    "$(tail -1 "$OUT/tests-gpu-conv.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests-gpu-conv.log" | head -30 >> "$SUMMARY"
# Fused elementwise nodes compiled with NVRTC: the compile checks (no
# GPU needed) and the traced functions on the GPU.
say "fused elementwise nodes through NVRTC"
t0=$(date +%s)
run_for "fused tests" "${GPU_CHECK_FUSED_S:-40}" 110 \
    "${PYTEST[@]}" tests/gpu/test_gpu_fused.py \
    tests/test_fused_nvrtc.py \
    > "$OUT/tests-gpu-fused.log" 2>&1
FUSED_RC=$?
say "fused tests rc=$FUSED_RC in $(( $(date +%s) - t0 ))s:" \
    "$(tail -1 "$OUT/tests-gpu-fused.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests-gpu-fused.log" | head -20 >> "$SUMMARY"
say "tests/gpu (not slow)"
t0=$(date +%s)
T_END=$(( t0 + $(cap "${GPU_CHECK_TESTS_S:-200}" 25) ))
OMP_NUM_THREADS=$OMP_WORKER \
    run_for tests/gpu "${GPU_CHECK_TESTS_S:-200}" 25 \
    "${PYTEST[@]}" ${XDIST[@]+"${XDIST[@]}"} tests/gpu -m "not slow" \
    --ignore=tests/gpu/test_gpu_conv.py --ignore=tests/gpu/test_gpu_fused.py \
    --durations=15 > "$OUT/tests-gpu.log" 2>&1
TESTS_RC=$?
say "tests/gpu rc=$TESTS_RC in $(( $(date +%s) - t0 ))s:" \
    "$(tail -1 "$OUT/tests-gpu.log")"
grep -E "^(FAILED|ERROR)" "$OUT/tests-gpu.log" | head -60 >> "$SUMMARY"
# A crash or a sticky CUDA error spoils the rest of that process: each
# file again in a process of its own, in the step's time left, so the
# culprit is named and the other files still count.
if crashed "$TESTS_RC" "$OUT/tests-gpu.log"; then
    say "tests/gpu crashed or hit a sticky CUDA error: each file again" \
        "in a process of its own"
    TESTS_RC=0
    for f in tests/gpu/test_gpu_*.py; do
        case $f in */test_gpu_conv.py|*/test_gpu_fused.py) continue;; esac
        if [ "$(( T_END - $(date +%s) ))" -lt 5 ]; then
            say "  the files from $f on skipped: out of time"
            TESTS_RC=124
            break
        fi
        echo "=== $f on its own" >> "$OUT/tests-gpu.log"
        run_for "$f" "$(( T_END - $(date +%s) ))" 25 \
            "${PYTEST[@]}" "$f" -m "not slow" >> "$OUT/tests-gpu.log" 2>&1
        r=$?
        say "  $f rc=$r: $(tail -1 "$OUT/tests-gpu.log")"
        case $r in 0|5) ;; *) TESTS_RC=$r;; esac
    done
fi

# 5. The GPU benchmark (numbers, never a failure).
say "benchmark"
# gpu_bench.py stops starting sections at GPU_BENCH_BUDGET_S: 80% of
# the cap this step gets now, which run_for may have cut.
GPU_BENCH_BUDGET_S=$(( $(cap "${GPU_CHECK_BENCH_S:-60}" 10) * 8 / 10 )) \
    run_for benchmark "${GPU_CHECK_BENCH_S:-60}" 10 \
    python3 tools/gpu_bench.py > "$OUT/bench.txt" 2>&1
say "bench rc=$?"
run_for "CUDA graph benchmark" 25 0 python3 tools/cugraph_bench.py \
    --calls 200 --rounds 5 >> "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt" >> "$SUMMARY"

# 6. Every other OpSpec row (marked slow), in what time is left.
say "tests/gpu (slow: every other OpSpec row)"
t0=$(date +%s)
OMP_NUM_THREADS=$OMP_WORKER \
    run_for "slow tests" "${GPU_CHECK_SLOW_S:-150}" 0 \
    "${PYTEST[@]}" ${XDIST[@]+"${XDIST[@]}"} tests/gpu -m slow --maxfail=20 \
    > "$OUT/tests-gpu-slow.log" 2>&1
say "tests/gpu slow rc=$? (124: out of time) in $(( $(date +%s) - t0 ))s:" \
    "$(tail -1 "$OUT/tests-gpu-slow.log" 2> /dev/null)"
grep -E "^(FAILED|ERROR)" "$OUT/tests-gpu-slow.log" 2> /dev/null | head -20 \
    >> "$SUMMARY"

say "done in $(( $(date +%s) - START ))s"
[ "$TESTS_RC" -ne 0 ] && exit "$TESTS_RC"
[ "$FUSED_RC" -ne 0 ] && exit "$FUSED_RC"
exit $CONV_RC
