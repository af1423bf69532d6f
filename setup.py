"""Build tfmini._C from csrc/.

C11 for the core and binding, C++17 only for the Eigen shim (*.cc),
OpenMP for big kernels. Environment switches:
  TFMINI_SANITIZE=1   build with -fsanitize=address,undefined (see README)
  TFMINI_SANITIZE=thread  build with -fsanitize=thread (tests/tsan.sh)
  TFMINI_DEBUG=1      -O0 -g
  TFMINI_ARCH=...     the -march target (default: native, tuned for the
                      building CPU); e.g. x86-64-v3 for a wheel that runs
                      on any AVX2+FMA x86-64 CPU, whose hot loops also
                      carry an AVX-512 copy chosen at run time
                      (csrc/kernels/cpu/isa_dispatch.h; TFMINI_ISA)
  EIGEN3_INCLUDE_DIR  where Eigen's headers are, if not in a standard place
                      (else third_party/eigen3, which tools/vendor_eigen.sh
                      fills, for machines without Eigen)
  TFMINI_DNNL=0|1     build without / with oneDNN (GEMM, convolutions);
                      unset: with it when its header and library are
                      found: DNNL_ROOT, else the onednn-cpu-gomp +
                      onednn-devel-cpu-gomp wheels (3.x), else the
                      system's (Debian libdnnl-dev, 2.x). DNNL_ROOT=/usr
                      keeps Debian's where the wheels are installed.
                      Without it MatMul uses Eigen's GEMM.
  TFMINI_CUDA=0|1     build without / with the CUDA backend; unset: with it
                      when a toolkit is found (CUDA_HOME, /usr/local/cuda,
                      nvcc on PATH). 1 without a toolkit fails.
  TFMINI_CUDNN=0|1    with CUDA: build without / with cuDNN (Conv2D and its
                      gradients on the GPU); unset: with it when found:
                      CUDNN_ROOT, else the toolkit's own folders, else the
                      pip nvidia-cudnn wheel, else the system's. Without
                      it the convolutions soft-place on the CPU.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def find_eigen():
    candidates = []
    if os.environ.get("EIGEN3_INCLUDE_DIR"):
        candidates.append(os.environ["EIGEN3_INCLUDE_DIR"])
    if shutil.which("pkg-config"):
        try:
            out = subprocess.run(["pkg-config", "--cflags-only-I", "eigen3"],
                                 capture_output=True, text=True, check=True)
            candidates += [f[2:] for f in out.stdout.split()]
        except subprocess.CalledProcessError:
            pass
    candidates += ["/usr/include/eigen3", "/usr/local/include/eigen3",
                   os.path.join(HERE, "third_party", "eigen3")]
    for c in candidates:
        if os.path.isfile(os.path.join(c, "Eigen", "Core")):
            return c
    sys.exit("tfmini needs Eigen 3 to build: install Debian's libeigen3-dev "
             "(apt-get install libeigen3-dev) or set EIGEN3_INCLUDE_DIR to "
             "the folder that holds Eigen/Core.")


def _dnnl_runtime(inc):
    """oneDNN's CPU threading runtime as its dnnl_config.h names it
    ("OMP", "SEQ", "TBB", "SYCL", ...), or "" when unreadable."""
    for sub in ("oneapi/dnnl/dnnl_config.h", "dnnl_config.h"):
        try:
            with open(os.path.join(inc, sub)) as f:
                m = re.search(r"#define DNNL_CPU_RUNTIME DNNL_RUNTIME_(\w+)",
                              f.read())
        except OSError:
            continue
        if m:
            return m.group(1)
    return ""


def _dnnl_major(inc):
    """DNNL_VERSION_MAJOR of the oneDNN headers in inc, or None."""
    for sub in ("oneapi/dnnl/dnnl_version.h", "dnnl_version.h"):
        try:
            with open(os.path.join(inc, sub)) as f:
                m = re.search(r"#define DNNL_VERSION_MAJOR (\d+)", f.read())
        except OSError:
            continue
        if m:
            return int(m.group(1))
    return None


def _pip_dnnl():
    """(include dir, library dir) of the onednn-cpu-gomp and
    onednn-devel-cpu-gomp wheels (oneDNN 3.x on GNU OpenMP, the runtime
    tfmini uses) where this Python sees them installed, or None. The
    wheels hold no module: their files are data under the install
    prefix (include/, lib/), found through the distributions' records."""
    try:
        from importlib import metadata
    except ImportError:
        return None
    found = {}
    for dist_name, want in (("onednn-devel-cpu-gomp", "dnnl.h"),
                            ("onednn-cpu-gomp", "libdnnl.so")):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            return None
        for f in dist.files or ():
            if f.name != want:
                continue
            # Recorded relative to site-packages ("../../libdnnl.so").
            # dnnl.h also sits under include/oneapi/dnnl/: the top one.
            d = os.path.dirname(os.path.normpath(str(dist.locate_file(f))))
            if os.path.basename(d) in ("include", "lib", "lib64"):
                found[want] = d
    inc, lib = found.get("dnnl.h"), found.get("libdnnl.so")
    if not (inc and lib and os.path.isdir(inc) and os.path.isdir(lib)):
        return None
    return inc, lib


def find_dnnl(env=None):
    """(include dir, library dir) of oneDNN, or None: the optional GEMM
    and convolution backend (gemm_dnnl.c, conv_dnnl.c; both build against
    oneDNN 2.x and 3.x). DNNL_ROOT first; then the onednn-cpu-gomp wheels
    (oneDNN 3.x, whose brgemm backward-convolution kernels beat 2.x's:
    benchmarks/RESULTS.md); then the system's folders (Debian's
    libdnnl-dev, 2.x, puts dnnl.h in /usr/include)."""
    env = os.environ if env is None else env
    if env.get("TFMINI_DNNL") == "0":
        return None
    if not env.get("DNNL_ROOT"):
        pip = _pip_dnnl()
        # A TBB or SYCL build (the plain `onednn` wheel) would run its own
        # thread pool beside tfmini's OpenMP one: only OpenMP or
        # sequential builds are taken.
        if pip and _dnnl_runtime(pip[0]) in ("OMP", "SEQ"):
            return pip
    roots = [env["DNNL_ROOT"]] if env.get("DNNL_ROOT") else ["/usr",
                                                           "/usr/local"]
    arch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                          text=True).stdout.strip() if shutil.which(
                              "gcc") else ""
    for root in roots:
        inc = os.path.join(root, "include")
        if not os.path.isfile(os.path.join(inc, "dnnl.h")):
            continue
        for sub in ("lib", "lib64", os.path.join("lib", arch)):
            lib = os.path.join(root, sub)
            if glob.glob(os.path.join(lib, "libdnnl.so*")):
                return inc, lib
    if env.get("TFMINI_DNNL") == "1":
        sys.exit("TFMINI_DNNL=1 but oneDNN is not found: pip install "
                 "onednn-cpu-gomp onednn-devel-cpu-gomp, or install "
                 "Debian's libdnnl-dev, or set DNNL_ROOT to the folder "
                 "holding include/dnnl.h and lib/libdnnl.so")
    return None


def find_cuda(env=None):
    """The CUDA toolkit's root (holding bin/nvcc), or None: CUDA_HOME,
    then /usr/local/cuda, then nvcc on PATH."""
    env = os.environ if env is None else env
    roots = []
    if env.get("CUDA_HOME"):
        roots.append(env["CUDA_HOME"])
    else:
        roots.append("/usr/local/cuda")
        nvcc = shutil.which("nvcc", path=env.get("PATH", ""))
        if nvcc:
            roots.append(os.path.dirname(os.path.dirname(
                os.path.realpath(nvcc))))
    for r in roots:
        if os.path.isfile(os.path.join(r, "bin", "nvcc")):
            return r
    return None


def cuda_choice(env=None):
    """The toolkit root to build the CUDA backend with, or None for the
    stub. TFMINI_CUDA=0 forces the stub; =1 requires a toolkit."""
    env = os.environ if env is None else env
    want = env.get("TFMINI_CUDA", "").strip()
    if want not in ("", "0", "1"):
        sys.exit(f"TFMINI_CUDA={want!r}: use 0 (no CUDA) or 1 (CUDA)")
    if want == "0":
        return None
    root = find_cuda(env)
    if root is None and want == "1":
        sys.exit("TFMINI_CUDA=1 but no CUDA toolkit was found: looked for "
                 "bin/nvcc under CUDA_HOME"
                 f" ({env.get('CUDA_HOME') or 'unset'}), /usr/local/cuda "
                 "and nvcc on PATH. Install the toolkit or set CUDA_HOME.")
    return root


CUDA_HOME = cuda_choice()
# sm_80 (A100) and sm_90 (H100/H200) machine code, and compute_90 PTX
# that newer GPUs compile when loading.
NVCC_ARCH = ["-gencode", "arch=compute_80,code=sm_80",
             "-gencode", "arch=compute_90,code=sm_90",
             "-gencode", "arch=compute_90,code=compute_90"]


def find_dlpack():
    """Where dlpack/dlpack.h is, when not on the compiler's own path:
    Debian's libdlpack-dev, else the copy tools/vendor_eigen.sh leaves in
    third_party/include for a machine without it (the GPU machine)."""
    for d in ("/usr/include", "/usr/local/include"):
        if os.path.isfile(os.path.join(d, "dlpack", "dlpack.h")):
            return []
    vendored = os.path.join(HERE, "third_party", "include")
    if os.path.isfile(os.path.join(vendored, "dlpack", "dlpack.h")):
        return [vendored]
    sys.exit("tfmini needs DLPack's header to build: install Debian's "
             "libdlpack-dev (apt-get install libdlpack-dev).")


def _pip_nvidia_dirs(sub):
    """nvidia/*/<sub> folders of the pip CUDA wheels (nvidia-cublas...),
    which hold what a toolkit without cuBLAS lacks."""
    import site
    roots = site.getsitepackages() + [site.getusersitepackages()]
    return sorted(d for r in roots
                  for d in glob.glob(os.path.join(r, "nvidia", "*", sub)))


def cuda_lib(root, name, missing=None):
    """(folder, linker flag) for lib<name>: the toolkit's lib64 first,
    then the pip wheels, whose libraries carry only a versioned name.
    missing: what to install, when neither has it."""
    dirs = [os.path.join(root, d) for d in
            ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"))]
    for d in dirs + _pip_nvidia_dirs("lib"):
        if os.path.isfile(os.path.join(d, f"lib{name}.so")):
            return d, "-l" + name
        found = sorted(glob.glob(os.path.join(d, f"lib{name}.so.[0-9]*")),
                       key=len)
        if found:
            return d, "-l:" + os.path.basename(found[0])
    sys.exit(f"TFMINI_CUDA: the toolkit at {root} has no lib{name}.so, "
             "and no pip nvidia wheel holds one: " + (
                 missing or "install the CUDA Toolkit's libraries."))


def find_nvrtc(root):
    """(folder, linker flag) for NVRTC, which compiles a traced graph's
    fused elementwise nodes for the GPU at run time
    (csrc/graph/fused_nvrtc.c; TFMINI_NVRTC=0 turns that off)."""
    return cuda_lib(root, "nvrtc", "install the toolkit's NVRTC "
                    "(apt-get install cuda-nvrtc-dev-<version>, or pip "
                    "install nvidia-cuda-nvrtc-cu12).")


def _cudnn_major(inc):
    """CUDNN_MAJOR of the cudnn.h in inc (cuDNN 8+ keeps it in
    cudnn_version.h), or None."""
    for name in ("cudnn_version.h", "cudnn.h"):
        try:
            with open(os.path.join(inc, name)) as f:
                m = re.search(r"#define\s+CUDNN_MAJOR\s+(\d+)", f.read())
        except OSError:
            continue
        if m:
            return int(m.group(1))
    return None


def find_cudnn(cuda_root, env=None):
    """(include dir, library dir, linker flag) of cuDNN 8 or newer (the
    legacy convolution API conv_cudnn.c calls), or None. Only with the
    CUDA backend. CUDNN_ROOT alone when set; else the toolkit's own
    include/ and lib64/; else the pip wheel (nvidia-cudnn-cu*:
    site-packages/nvidia/cudnn/{include,lib}, whose library carries only
    a versioned name); else the system's (Debian's libcudnn9-dev).
    Header and library come from the same place, so their versions
    agree. TFMINI_CUDNN=0 turns it off; =1 fails when none is found."""
    env = os.environ if env is None else env
    want = env.get("TFMINI_CUDNN", "").strip()
    if want not in ("", "0", "1"):
        sys.exit(f"TFMINI_CUDNN={want!r}: use 0 (no cuDNN) or 1 (cuDNN)")
    if want == "0" or not cuda_root:
        return None
    libs = ("lib64", "lib", os.path.join("lib", "x86_64-linux-gnu"),
            os.path.join("targets", "x86_64-linux", "lib"))
    if env.get("CUDNN_ROOT"):
        places = [env["CUDNN_ROOT"]]
    else:
        places = [cuda_root] + [os.path.dirname(d) for d in
                                _pip_nvidia_dirs("include")
                                if os.path.basename(os.path.dirname(d))
                                == "cudnn"] + ["/usr"]
    for root in places:
        inc = os.path.join(root, "include")
        if (_cudnn_major(inc) or 0) < 8:
            continue
        for sub in libs:
            lib = os.path.join(root, sub)
            if os.path.isfile(os.path.join(lib, "libcudnn.so")):
                return inc, lib, "-lcudnn"
            found = sorted(glob.glob(os.path.join(lib, "libcudnn.so.[0-9]*")),
                           key=len)
            if found:
                return inc, lib, "-l:" + os.path.basename(found[0])
    if want == "1":
        sys.exit("TFMINI_CUDNN=1 but no cuDNN 8+ was found: looked for "
                 "include/cudnn_version.h and lib*/libcudnn.so* under "
                 + (f"CUDNN_ROOT ({env['CUDNN_ROOT']})" if env.get(
                     "CUDNN_ROOT") else f"{cuda_root}, the pip "
                     "nvidia-cudnn wheel and /usr") + ". pip install "
                 "nvidia-cudnn-cu12 (or -cu13), or set CUDNN_ROOT.")
    return None


def cuda_includes(root):
    """The toolkit's include folder, and the pip wheels' when the toolkit
    lacks cuBLAS's headers."""
    inc = [os.path.join(root, "include")]
    if not os.path.isfile(os.path.join(inc[0], "cublas_v2.h")):
        inc += [d for d in _pip_nvidia_dirs("include")
                if os.path.isfile(os.path.join(d, "cublas_v2.h"))
                or os.path.isfile(os.path.join(d, "cuda_runtime.h"))]
    return inc


def sources():
    found = sorted(glob.glob("csrc/**/*.c", recursive=True)
                   + glob.glob("csrc/**/*.cc", recursive=True))
    # csrc/python/mpi/ and nccl/ are extensions of their own (find_mpi,
    # find_nccl), linked with libmpi and libnccl.
    found = [s for s in found if not s.startswith(("csrc/tests",
                                                   "csrc/python/mpi/",
                                                   "csrc/python/nccl/"))]
    # The CUDA backend's C glue needs the toolkit's headers: with CUDA
    # every csrc/kernels/cuda/*.c but the stub, without only the stub.
    cuda_dir = os.path.join("csrc", "kernels", "cuda") + os.sep
    stub = cuda_dir + "stub.c"
    if CUDA_HOME:
        return [s for s in found if s != stub]
    return [s for s in found if not s.startswith(cuda_dir) or s == stub]


def isa_copied(src):
    """src and the loop file it includes when src is an AVX-512 copy
    (csrc/kernels/cpu/*_avx512.c, Note [ISA dispatch] in isa_dispatch.h):
    editing the loop file recompiles both."""
    if src.endswith("_avx512.c"):
        base = src[:-len("_avx512.c")] + ".c"
        if os.path.exists(base):
            return [src, base]
    return [src]


def find_mpi():
    """(include dirs, link args) from Open MPI's mpicc wrapper, or None
    when MPI is absent (tf.distribute.MultiWorkerMirroredStrategy then
    names libopenmpi-dev)."""
    if os.environ.get("TFMINI_NO_MPI") == "1":
        return None
    mpicc = shutil.which("mpicc")
    if not mpicc:
        return None
    try:
        comp = subprocess.run([mpicc, "--showme:compile"], text=True,
                              capture_output=True, check=True).stdout
        link = subprocess.run([mpicc, "--showme:link"], text=True,
                              capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    incs = [a[2:] for a in comp.split() if a.startswith("-I")]
    if not any(os.path.isfile(os.path.join(d, "mpi.h")) for d in incs):
        return None
    return incs, link.split()


def find_nccl():
    """(include dirs, link args) for NCCL when the CUDA backend is built
    and nccl.h and libnccl are found (the CUDA toolkit's or the system's),
    else None: MirroredStrategy over GPUs then all-reduces without it."""
    if not CUDA_HOME or os.environ.get("TFMINI_NO_NCCL") == "1":
        return None
    incs = CUDA_INCLUDE + ["/usr/local/include", "/usr/include"]
    inc = next((d for d in incs
                if os.path.isfile(os.path.join(d, "nccl.h"))), None)
    libdirs = [os.path.join(CUDA_HOME, "lib64"), "/usr/local/lib",
               "/usr/lib/x86_64-linux-gnu"]
    lib = next((d for d in libdirs
                if os.path.exists(os.path.join(d, "libnccl.so"))), None)
    if inc is None or lib is None:
        return None
    cudart_dir, cudart = cuda_lib(CUDA_HOME, "cudart")
    return ([inc] + CUDA_INCLUDE + find_dlpack(),
            ["-L" + lib, "-Wl,-rpath," + lib, "-lnccl", "-L" + cudart_dir,
             "-Wl,-rpath," + cudart_dir, cudart])


def cu_sources():
    return sorted(glob.glob("csrc/kernels/cuda/*.cu")) if CUDA_HOME else []


def headers():
    """Headers and op lists: editing one rebuilds the extension
    (setuptools otherwise looks only at the .c files' times)."""
    return sorted(glob.glob("csrc/**/*.h", recursive=True)
                  + glob.glob("csrc/**/*.def", recursive=True))


def find_pcre2():
    """PCRE2 (Debian: libpcre2-dev) for tf.strings.regex_*: compile flags
    and link flags, or none (the two regex ops then raise an error naming
    the package)."""
    try:
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "libpcre2-8"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            flags = r.stdout.split()
            return (["-DTFM_HAVE_PCRE2"]
                    + [f for f in flags if not f.startswith(("-l", "-L"))],
                    [f for f in flags if f.startswith(("-l", "-L"))])
    except OSError:
        pass
    for d in ("/usr/include", "/usr/local/include"):
        if os.path.isfile(os.path.join(d, "pcre2.h")):
            return ["-DTFM_HAVE_PCRE2"], ["-lpcre2-8"]
    return [], []


PCRE2_CFLAGS, PCRE2_LINK = find_pcre2()


def find_icu():
    """ICU (Debian: libicu-dev) for tf.strings.unicode_script: compile
    and link flags, or none (the op then raises an error naming the
    package)."""
    try:
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "icu-uc"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            flags = r.stdout.split()
            return (["-DTFM_HAVE_ICU"]
                    + [f for f in flags if not f.startswith(("-l", "-L"))],
                    [f for f in flags if f.startswith(("-l", "-L"))])
    except OSError:
        pass
    for d in ("/usr/include", "/usr/local/include"):
        if os.path.isfile(os.path.join(d, "unicode", "uscript.h")):
            return ["-DTFM_HAVE_ICU"], ["-licuuc"]
    return [], []


ICU_CFLAGS, ICU_LINK = find_icu()

SANITIZE = os.environ.get("TFMINI_SANITIZE") == "1"
TSAN = os.environ.get("TFMINI_SANITIZE") == "thread"
DEBUG = os.environ.get("TFMINI_DEBUG") == "1"
MODE = ("sanitize" if SANITIZE else "tsan" if TSAN else
        "debug" if DEBUG else "release")
# Built where it runs (pip install from source), the default tunes for
# this CPU; a wheel for other machines names a portable target.
ARCH = os.environ.get("TFMINI_ARCH", "native")


def check_arch(arch):
    """Fail before compiling 80 files when the compiler rejects -march."""
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-march=" + arch, "-x", "c", "-c", "-o",
                        os.devnull, "-"], input="int x;\n", text=True,
                       capture_output=True)
    if r.returncode != 0:
        why = [l for l in r.stderr.splitlines() if "error" in l][:1]
        sys.exit(f"TFMINI_ARCH={arch!r}: {cc} rejects -march={arch} "
                 f"({why[0].strip() if why else r.stderr.strip()[:200]}); "
                 "use native, or a target such as x86-64-v2, x86-64-v3 "
                 "or x86-64-v4")

# -fwrapv: integer arithmetic wraps on overflow, as TF's kernels do (and
# the sanitizer build then does not abort on it).
COMMON = ["-fopenmp", "-fwrapv", "-Wall", "-Wextra", "-Wno-unused-parameter",
          "-Wno-missing-field-initializers", "-Wno-cast-function-type",
          "-fno-strict-aliasing"]
if SANITIZE:
    COMMON += ["-O1", "-g", "-fno-omit-frame-pointer",
               "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
elif TSAN:
    # OpenMP stays in (the code as shipped); tests/tsan.sh runs it with
    # one OpenMP thread, since libgomp is not instrumented (README).
    COMMON += ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=thread"]
elif DEBUG:
    COMMON += ["-O0", "-g"]
else:
    COMMON += ["-O3", "-march=" + ARCH, "-fno-math-errno"]
C_FLAGS = ["-std=c11", "-D_GNU_SOURCE"]
CXX_FLAGS = ["-std=c++17", "-DEIGEN_NO_DEBUG"]
CUDA_DEFINES = ["-DTFMINI_WITH_CUDA"] if CUDA_HOME else []
DNNL = find_dnnl()
# The header major version setup.py chose: dnnl_compat.h stops the build
# if the compiler finds another dnnl.h first (a wheel installed into
# /usr/local/include shadows Debian's /usr/include for DNNL_ROOT=/usr).
DNNL_DEFINES = (["-DTFMINI_WITH_DNNL"] + (
    [f"-DTFM_DNNL_MAJOR={_dnnl_major(DNNL[0])}"] if _dnnl_major(DNNL[0])
    else []) if DNNL else [])
DNNL_INCLUDE = [DNNL[0]] if DNNL and DNNL[0] != "/usr/include" else []
# The system's own library folders need no -L or rpath.
_SYSTEM_LIB = DNNL and (DNNL[1] in ("/usr/lib", "/usr/lib64") or
                       os.path.dirname(DNNL[1]) == "/usr/lib")
DNNL_LINK = ([] if not DNNL else ["-ldnnl"] if _SYSTEM_LIB else
             ["-L" + DNNL[1], "-Wl,-rpath," + DNNL[1], "-ldnnl"])
print("tfmini: float32 GEMM through " + (
    f"oneDNN ({DNNL[1]})" if DNNL else "Eigen (TFMINI_DNNL=0)"
    if os.environ.get("TFMINI_DNNL") == "0" else
    "Eigen (oneDNN not found: apt-get install libdnnl-dev for the "
    "faster one)"))
CUDA_INCLUDE = cuda_includes(CUDA_HOME) if CUDA_HOME else []
CUDA_LINK = []
if CUDA_HOME:
    for _name in ("cudart", "cublas", "cublasLt"):
        _dir, _flag = cuda_lib(CUDA_HOME, _name)
        CUDA_LINK += ["-L" + _dir, "-Wl,-rpath," + _dir, _flag]
    _dir, _flag = find_nvrtc(CUDA_HOME)
    CUDA_LINK += ["-L" + _dir, "-Wl,-rpath," + _dir, _flag]
CUDNN = find_cudnn(CUDA_HOME)
CUDNN_DEFINES = ["-DTFMINI_WITH_CUDNN"] if CUDNN else []
CUDNN_INCLUDE = ([CUDNN[0]] if CUDNN and CUDNN[0] not in CUDA_INCLUDE
                 else [])
CUDNN_LINK = (["-L" + CUDNN[1], "-Wl,-rpath," + CUDNN[1], CUDNN[2]]
              if CUDNN else [])
if CUDA_HOME:
    print("tfmini: GPU convolutions through " + (
        f"cuDNN {_cudnn_major(CUDNN[0])} ({CUDNN[1]})" if CUDNN else
        "nothing: cuDNN is off (TFMINI_CUDNN=0); Conv2D soft-places on "
        "the CPU" if os.environ.get("TFMINI_CUDNN") == "0" else
        "nothing: cuDNN not found (pip install nvidia-cudnn-cu12, or set "
        "CUDNN_ROOT); Conv2D soft-places on the CPU"))
NVCC_FLAGS = NVCC_ARCH + ["-O3", "-std=c++17", "-Xcompiler", "-fPIC",
                          "-Icsrc", "-DTFMINI_WITH_CUDA"] + [
                              "-I" + d for d in CUDA_INCLUDE[1:]]
LINK = ["-fopenmp"] + (["-fsanitize=address,undefined"] if SANITIZE else
                       ["-fsanitize=thread"] if TSAN else []) + PCRE2_LINK \
    + ICU_LINK


class BuildExt(build_ext):
    """Per-language flags, all cores for compiling, and one object folder
    per build mode (release / debug / sanitize / tsan)."""

    def initialize_options(self):
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def finalize_options(self):
        chosen = self.build_temp is not None
        super().finalize_options()
        if not chosen and MODE != "release":
            self.build_temp += "-" + MODE

    def build_extension(self, ext):
        # setuptools skips an extension whose .so is newer than its
        # sources, even when that .so was built in another mode (an ASan
        # build left in place would then stay): remember each output's
        # mode and rebuild when it changes.
        stamp = os.path.join(HERE, "build", "tfmini-build-modes.json")
        target = os.path.abspath(self.get_ext_fullpath(ext.name))
        try:
            with open(stamp) as f:
                modes = json.load(f)
        except (OSError, ValueError):
            modes = {}
        mode = (MODE + ("+cuda" if CUDA_HOME else "")
                + ("+cudnn" if CUDNN else "")
                + ("+dnnl" if DNNL else "")
                # Another oneDNN (the wheel's 3.x or Debian's 2.x) needs
                # every object built again against its header.
                + (":" + DNNL[1] if DNNL and not _SYSTEM_LIB else ""))
        forced = self.force
        if modes.get(target) != mode:
            self.force = True
        try:
            super().build_extension(ext)
            if ext.name == "tfmini._C":
                self.build_rt(ext, target)
        finally:
            # A new mode for this extension must not rebuild the next.
            self.force = forced
        modes[target] = mode
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w") as f:
            json.dump(modes, f, indent=1)

    def build_rt(self, ext, target):
        """The C runtime (include/tfmini/tfmini.h) beside the extension,
        as tfmini/rt/libtfmini_rt.so and tfmini/rt/include/: linked from
        the objects just compiled for _C, less the binding's, so that it
        costs one link. `make -C csrc rt` builds the same library on its
        own (with hidden visibility for the core's names)."""
        objs = self.compiler.object_filenames(
            [s for s in ext.sources if not s.startswith("csrc/python/")],
            output_dir=self.build_temp)
        if not all(os.path.exists(o) for o in objs):
            # _C was up to date but its objects are gone: compile again.
            self.force = True
            super().build_extension(ext)
        rt_dir = os.path.join(os.path.dirname(target), "rt")
        lib = os.path.join(rt_dir, "libtfmini_rt.so")
        inc = os.path.join(rt_dir, "include", "tfmini")
        os.makedirs(inc, exist_ok=True)
        shutil.copyfile(os.path.join(HERE, "include", "tfmini", "tfmini.h"),
                        os.path.join(inc, "tfmini.h"))
        newest = max(os.path.getmtime(o) for o in objs)
        if (not self.force and os.path.exists(lib)
                and os.path.getmtime(lib) >= newest):
            return
        # g++ links, so that the Eigen shims' C++ runtime comes along.
        # Python's CFLAGS carry -g: a release library drops the 50 MB
        # of debug sections (the objects keep them).
        strip = ["-s"] if MODE == "release" else []
        # With CUDA, the backend's nvcc objects and libraries come along.
        cuda_objs = list(ext.extra_objects or [])
        subprocess.run(["g++", "-shared", "-o", lib] + objs + cuda_objs
                       + LINK + CUDA_LINK + CUDNN_LINK + DNNL_LINK + strip + ["-lm", "-lpthread"],
                       check=True)

    def copy_extensions_to_source(self):
        """--inplace: tfmini/rt/ gets the library and header too."""
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions[:1]:
            inplace, regular = self._get_inplace_equivalent(build_py, ext)
            src = os.path.join(os.path.dirname(regular), "rt")
            dst = os.path.join(os.path.dirname(inplace), "rt")
            self.copy_file(os.path.join(src, "libtfmini_rt.so"), dst)
            os.makedirs(os.path.join(dst, "include", "tfmini"), exist_ok=True)
            self.copy_file(os.path.join(src, "include", "tfmini", "tfmini.h"),
                           os.path.join(dst, "include", "tfmini"))

    def build_extensions(self):
        compiler = self.compiler
        original = compiler._compile

        def compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts):
            flags = CXX_FLAGS if src.endswith(".cc") else C_FLAGS
            return original(obj, src, ext, cc_args,
                            list(extra_postargs) + flags, pp_opts)

        compiler._compile = compile_one
        compiler.compile = self._parallel_compile(compiler)
        # Link with g++ so the Eigen shim's C++ runtime comes along.
        if compiler.compiler_type == "unix":
            compiler.linker_so = ["g++"] + compiler.linker_so[1:]
        for ext in self.extensions:
            if ext.name == "tfmini._C":
                ext.extra_objects = self.compile_cuda()
        # One extension after another (setuptools runs them in threads
        # when self.parallel is set): each compiles its files over every
        # core already, and they share self.force and the mode stamp,
        # whose entries a concurrent write would lose.
        self.check_extensions_list(self.extensions)
        self._build_extensions_serial()

    def _parallel_compile(self, compiler):
        """compiler.compile over every core, skipping an object newer
        than its source and every header (setuptools alone compiles all
        of an extension's sources, one after another, when any changed).
        Any header change recompiles everything: cheap now, and never
        stale."""
        jobs = max(1, int(os.environ.get("TFMINI_JOBS", 0))
                   or self.parallel or 1)
        newest_header = max((os.path.getmtime(h) for h in headers()
                             if os.path.exists(h)), default=0)

        def compile_all(sources, output_dir=None, macros=None,
                        include_dirs=None, debug=0, extra_preargs=None,
                        extra_postargs=None, depends=None):
            macros, objects, extra_postargs, pp_opts, build = \
                compiler._setup_compile(output_dir, macros, include_dirs,
                                        sources, depends, extra_postargs)
            cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

            def one(obj):
                src, ext = build[obj]
                if (not self.force and os.path.exists(obj)
                        and os.path.getmtime(obj) >= max(
                            [os.path.getmtime(s) for s in isa_copied(src)]
                            + [newest_header])):
                    return
                compiler._compile(obj, src, ext, cc_args, extra_postargs,
                                  pp_opts)

            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(jobs) as pool:
                # list(): the first compile error propagates.
                list(pool.map(one, objects))
            return objects

        return compile_all

    def compile_cuda(self):
        """csrc/kernels/cuda/*.cu -> objects in the build temp folder,
        with nvcc; a .cu whose object is newer than it and the headers it
        reads is skipped (CI compiles these on each run, and nvcc is
        slow)."""
        srcs = cu_sources()
        if not srcs:
            return []
        nvcc = os.path.join(CUDA_HOME, "bin", "nvcc")
        objs, todo = [], []
        for src in srcs:
            obj = os.path.join(self.build_temp, src + ".o")
            objs.append(obj)
            newest = max(os.path.getmtime(f) for f in quoted_includes(src))
            if (not self.force and os.path.exists(obj)
                    and os.path.getmtime(obj) >= newest):
                continue
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            todo.append([nvcc] + NVCC_FLAGS + ["-c", src, "-o", obj])
        if todo:
            import time
            from concurrent.futures import ThreadPoolExecutor
            t0 = time.time()
            with ThreadPoolExecutor(max(1, self.parallel or 1)) as pool:
                for cmd, r in zip(todo, pool.map(
                        lambda c: subprocess.run(c, capture_output=True,
                                                 text=True), todo)):
                    print(" ".join(cmd))
                    if r.returncode != 0:
                        sys.exit(f"nvcc failed on {cmd[-3]}:\n{r.stderr}")
                    if r.stderr.strip():
                        print(r.stderr, file=sys.stderr)
            print(f"nvcc: {len(todo)} file(s) in {time.time() - t0:.1f}s")
        return objs


def quoted_includes(src):
    """src and every file it reaches through #include "...", so that a .cu
    file is recompiled when a CPU header it shares changes (rnn.cu reads
    cpu/rnn_math.h)."""
    seen, todo = set(), [os.path.normpath(src)]
    while todo:
        f = todo.pop()
        if f in seen or not os.path.isfile(f):
            continue
        seen.add(f)
        with open(f, errors="replace") as fh:
            for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', fh.read(),
                                   re.M):
                todo.append(os.path.normpath(
                    os.path.join(os.path.dirname(f), name)))
    return seen


ext = Extension(
    "tfmini._C",
    sources=sources(),
    depends=headers() + cu_sources(),
    include_dirs=([numpy.get_include(), find_eigen(), "csrc"] + find_dlpack()
                  + CUDA_INCLUDE + CUDNN_INCLUDE + DNNL_INCLUDE),
    extra_compile_args=(COMMON + CUDA_DEFINES + CUDNN_DEFINES + PCRE2_CFLAGS
                        + ICU_CFLAGS + DNNL_DEFINES),
    extra_link_args=LINK + CUDA_LINK + CUDNN_LINK + DNNL_LINK,
    language="c",
)

MPI = find_mpi()
mpi_ext = None if MPI is None else Extension(
    "tfmini.distribute._mpi",
    sources=["csrc/python/mpi/mpi_ext.c"],
    include_dirs=MPI[0],
    extra_compile_args=COMMON,
    extra_link_args=LINK + MPI[1],
    language="c",
)

NCCL = find_nccl()
nccl_ext = None if NCCL is None else Extension(
    "tfmini.distribute._nccl",
    sources=["csrc/python/nccl/nccl_ext.c"],
    include_dirs=NCCL[0],
    extra_compile_args=COMMON,
    extra_link_args=LINK + NCCL[1],
    language="c",
)

if __name__ == "__main__":
    if MODE == "release":
        check_arch(ARCH)
    setup(ext_modules=[ext] + [e for e in (mpi_ext, nccl_ext) if e],
          cmdclass={"build_ext": BuildExt})
