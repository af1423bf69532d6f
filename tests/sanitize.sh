#!/usr/bin/env bash
# Build tfmini with AddressSanitizer + UndefinedBehaviorSanitizer into a
# temporary copy of the tree (the normal build is left alone) and run a
# fast part of the pytest suite against it.
#
#   bash tests/sanitize.sh                 the default subset below
#   bash tests/sanitize.sh tests/test_x.py pytest arguments of your choice
#
# Python itself is not built with ASan, so the runtime is preloaded, and
# leak checking is off (the interpreter leaks at exit by design; the C
# tests in tests/c check leaks of the core instead).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
. "$root/tests/sanitizer_lib.sh"
asan=$(sanitizer_runtime sanitize.sh libasan.so libasan8)
sanitizer_build sanitize.sh address,undefined 1

if [ $# -eq 0 ]; then
    set -- tests/test_tensor.py tests/test_dtypes.py \
           tests/test_conversion.py tests/test_memory.py \
           tests/test_op_forward.py tests/test_graph_optimizer.py \
           tests/test_graph_passes.py tests/test_graph_fusion.py \
           tests/test_graph_memory.py tests/test_graph_native.py \
           tests/test_graph_updates.py tests/test_function.py \
           tests/test_function_variables.py \
           tests/test_control_flow_grad.py tests/test_tiny_paths.py \
           -m "not slow"
fi
cd "$work"
# Reports go to files: pytest captures stderr, and an aborting process
# would take its report with it.
mkdir -p "$work/reports"
status=0
LD_PRELOAD="$asan" \
ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:log_path=$work/reports/asan" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$work/reports/ubsan" \
TFMINI_UNDER_SANITIZER=1 \
    "$py" -m pytest -p no:cacheprovider "$@" || status=$?
sanitizer_exit "$status" sanitizer 80
