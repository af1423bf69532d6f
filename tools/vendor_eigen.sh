#!/usr/bin/env bash
# Copy what a GPU machine without a package registry needs to build and
# test tfmini into git-ignored folders that travel with the tree:
#   third_party/eigen3   Eigen's headers (setup.py's find_eigen looks here)
#   third_party/include  DLPack's header (setup.py's find_dlpack looks here)
#   third_party/pylib    pytest, setuptools and their pure-Python
#                        dependencies, for a Python without them
#                        (tools/gpu_check.sh then adds it to PYTHONPATH)
# Run it here, before the device run; it does nothing when both are there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p third_party
if [ ! -f third_party/eigen3/Eigen/Core ]; then
    src=${EIGEN3_INCLUDE_DIR:-}
    for c in "$src" /usr/include/eigen3 /usr/local/include/eigen3; do
        if [ -n "$c" ] && [ -f "$c/Eigen/Core" ]; then src=$c; break; fi
    done
    if [ ! -f "$src/Eigen/Core" ]; then
        echo "vendor_eigen: no Eigen here (install libeigen3-dev or set" \
             "EIGEN3_INCLUDE_DIR)" >&2
        exit 1
    fi
    rm -rf third_party/eigen3.tmp
    mkdir -p third_party/eigen3.tmp
    # Eigen/ and unsupported/ are what #include <Eigen/...> reaches.
    cp -r "$src/Eigen" third_party/eigen3.tmp/
    [ -d "$src/unsupported" ] && cp -r "$src/unsupported" third_party/eigen3.tmp/
    mv third_party/eigen3.tmp third_party/eigen3
    echo "vendor_eigen: copied $src -> third_party/eigen3" \
         "($(du -sh third_party/eigen3 | cut -f1))"
fi
if [ ! -f third_party/include/dlpack/dlpack.h ]; then
    if [ ! -f /usr/include/dlpack/dlpack.h ]; then
        echo "vendor_eigen: no DLPack header here (install libdlpack-dev)" >&2
        exit 1
    fi
    mkdir -p third_party/include
    cp -r /usr/include/dlpack third_party/include/
    echo "vendor_eigen: copied /usr/include/dlpack -> third_party/include"
fi
if [ ! -d third_party/pylib/_pytest ] || [ ! -d third_party/pylib/setuptools ]
then
    python3 -m pip install --quiet --no-compile --target third_party/pylib \
        pytest setuptools || {
        echo "vendor_eigen: could not fetch pytest and setuptools into" \
             "third_party/pylib (the GPU machine then needs its own)" >&2
    }
fi
echo "vendor_eigen: third_party ready"
