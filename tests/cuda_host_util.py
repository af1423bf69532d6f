"""Where the CUDA toolkit is, for the tests that build CUDA sources or
headers into host programs without a GPU (test_philox_host_device.py,
test_random_cuda_host.py, test_cuda_glue_host.py)."""
import os
import shutil


def nvcc():
    """nvcc's path, or None."""
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d and os.path.exists(os.path.join(d, "bin", "nvcc")):
            return os.path.join(d, "bin", "nvcc")
    return shutil.which("nvcc")


def cuda_include():
    """The toolkit's include folder (with cublas_v2.h), or None."""
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d and os.path.exists(os.path.join(d, "include", "cublas_v2.h")):
            return os.path.join(d, "include")
    return None
