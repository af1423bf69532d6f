"""Where the C runtime is: the header include/tfmini/tfmini.h and
libtfmini_rt.so, built and installed with the package (README,
"Deployment from C").

    cc prog.c -I$(python -c "import tfmini.rt as r; print(r.get_include())")
       -L$(python -c "import tfmini.rt as r; print(r.get_lib())")
       -ltfmini_rt"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_include():
    """The folder to pass as -I (it holds tfmini/tfmini.h)."""
    return os.path.join(_HERE, "include")


def get_lib():
    """The folder to pass as -L and -Wl,-rpath (it holds
    libtfmini_rt.so)."""
    return _HERE


def get_library():
    """The path of libtfmini_rt.so; FileNotFoundError if the package was
    built without it."""
    path = os.path.join(_HERE, "libtfmini_rt.so")
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path} is missing: build the package "
            f"(python3 setup.py build_ext --inplace) or the library alone "
            f"(make -C csrc rt, into build/rt/)")
    return path
