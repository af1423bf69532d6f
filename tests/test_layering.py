"""The layering of DESIGN.md, checked on the sources: only csrc/python
knows Python, and includes point downward only

    core <- kernels <- ops <- runtime <- graph <- python
                                                <- rt

(rt, the C runtime library's API, and python, the binding, both sit on
top of graph and neither sees the other.)

(tests/test_c_core.py shows the other half: core..graph link into C test
programs with no Python at all)."""
import pathlib
import re

import pytest

CSRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"
LAYERS = ["core", "kernels", "ops", "runtime", "graph", "rt", "python"]
TOPS = {"rt", "python"}      # side by side: neither includes the other
SOURCES = sorted(p for p in CSRC.rglob("*")
                 if p.suffix in {".c", ".cc", ".cu", ".h", ".def"})
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
PYTHON_HEADERS = {"Python.h", "structmember.h"}

# The one sanctioned exception: kernels implement the op table's kernel
# signature, so they see its declarations (the op enum, tfm_attrs,
# tfm_kernel_fn: ops/op.h and the .def lists it expands). No ops/*.c code
# is reachable from a kernel.
KERNEL_MAY_INCLUDE = re.compile(r"^ops/(op\.h|ops(_\w+)?\.def)$")


def _layer(path):
    return path.relative_to(CSRC).parts[0]


def _includes(path):
    return INCLUDE.findall(path.read_text(errors="replace"))


def _resolve(path, name):
    for base in (path.parent, CSRC):
        p = (base / name).resolve()
        if p.is_file():
            return p
    return None


def test_sources_found():
    assert {_layer(p) for p in SOURCES} >= {"core", "kernels", "ops",
                                            "runtime", "python"}


@pytest.mark.parametrize("path", SOURCES,
                         ids=[str(p.relative_to(CSRC)) for p in SOURCES])
def test_only_the_binding_knows_python(path):
    if _layer(path) == "python":
        return
    for _, name in _includes(path):
        base = name.split("/")[-1]
        assert base not in PYTHON_HEADERS and not name.startswith("numpy/"), (
            f"{path.relative_to(CSRC)} includes {name}: only csrc/python "
            "may use Python (see DESIGN.md, Layout)")


@pytest.mark.parametrize("path", SOURCES,
                         ids=[str(p.relative_to(CSRC)) for p in SOURCES])
def test_includes_point_downward(path):
    here = _layer(path)
    assert here in LAYERS, f"{path}: not in a known layer {LAYERS}"
    for kind, name in _includes(path):
        target = _resolve(path, name)
        if target is None:
            assert kind == "<", (f"{path.relative_to(CSRC)}: "
                                 f'#include "{name}" not found')
            continue            # a system or library header
        if CSRC not in target.parents:
            continue
        rel = target.relative_to(CSRC)
        there = rel.parts[0]
        if here != there and {here, there} <= TOPS:
            pytest.fail(f"{path.relative_to(CSRC)} ({here}) includes {rel} "
                        f"({there}): the C runtime and the Python binding "
                        "are separate tops of the library")
        if LAYERS.index(there) <= LAYERS.index(here):
            continue
        if here == "kernels" and KERNEL_MAY_INCLUDE.match(rel.as_posix()):
            continue
        pytest.fail(f"{path.relative_to(CSRC)} ({here}) includes {rel} "
                    f"({there}): dependencies must point downward, "
                    f"{' <- '.join(LAYERS)}")
