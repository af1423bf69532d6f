"""Build tfmini._C from csrc/.

C11 for the core and binding, C++17 only for the Eigen shim (*.cc),
OpenMP for big kernels. Environment switches:
  TFMINI_SANITIZE=1   build with -fsanitize=address,undefined (see README)
  TFMINI_SANITIZE=thread  build with -fsanitize=thread (tests/tsan.sh)
  TFMINI_DEBUG=1      -O0 -g
  TFMINI_ARCH=...     the -march target (default: native, tuned for the
                      building CPU); e.g. x86-64-v3 for a wheel that runs
                      on any AVX2+FMA x86-64 CPU
  EIGEN3_INCLUDE_DIR  where Eigen's headers are, if not in a standard place
"""
import glob
import json
import os
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
    candidates += ["/usr/include/eigen3", "/usr/local/include/eigen3"]
    for c in candidates:
        if os.path.isfile(os.path.join(c, "Eigen", "Core")):
            return c
    sys.exit("tfmini needs Eigen 3 to build: install Debian's libeigen3-dev "
             "(apt-get install libeigen3-dev) or set EIGEN3_INCLUDE_DIR to "
             "the folder that holds Eigen/Core.")


def sources():
    found = sorted(glob.glob("csrc/**/*.c", recursive=True)
                   + glob.glob("csrc/**/*.cc", recursive=True))
    return [s for s in found if not s.startswith("csrc/tests")]


def headers():
    """Headers and op lists: editing one rebuilds the extension
    (setuptools otherwise looks only at the .c files' times)."""
    return sorted(glob.glob("csrc/**/*.h", recursive=True)
                  + glob.glob("csrc/**/*.def", recursive=True))


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
LINK = ["-fopenmp"] + (["-fsanitize=address,undefined"] if SANITIZE else
                       ["-fsanitize=thread"] if TSAN else [])


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
        if modes.get(target) != MODE:
            self.force = True
        super().build_extension(ext)
        self.build_rt(ext, target)
        modes[target] = MODE
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
        subprocess.run(["g++", "-shared", "-o", lib] + objs + LINK + strip
                       + ["-lm", "-lpthread"], check=True)

    def copy_extensions_to_source(self):
        """--inplace: tfmini/rt/ gets the library and header too."""
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
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
        # Link with g++ so the Eigen shim's C++ runtime comes along.
        if compiler.compiler_type == "unix":
            compiler.linker_so = ["g++"] + compiler.linker_so[1:]
        super().build_extensions()


ext = Extension(
    "tfmini._C",
    sources=sources(),
    depends=headers(),
    include_dirs=[numpy.get_include(), find_eigen(), "csrc"],
    extra_compile_args=COMMON,
    extra_link_args=LINK,
    language="c",
)

if __name__ == "__main__":
    if MODE == "release":
        check_arch(ARCH)
    setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
