"""The op table of the test suite: one OpSpec per public op behaviour.

Every family contributes a module here (spec_<family>.py) with a list
SPECS. test_op_forward.py checks each against NumPy over shapes and
dtypes; test_gradients.py checks gradients by finite differences; and
test_op_coverage.py checks that every op in the C table has a spec.
Adding an op = adding its row in csrc/ops/ops_<family>.def and its OpSpec.
"""
import importlib
import pkgutil

from .opspec import OpSpec  # noqa: F401

SPECS = []
for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)
                 if m.name.startswith("spec_")):
    SPECS.extend(importlib.import_module(f"{__name__}.{_m}").SPECS)


def device_cases():
    """(first, rest): every (spec, shapes, dtype) row, split into each
    spec's first combination and all the others, for the harnesses that
    run the table on another device (test_fake_device.py, tests/gpu)."""
    first, rest = [], []
    for spec in SPECS:
        combos = [(s, d) for s in spec.shapes for d in spec.dtypes]
        for k, (shapes, dtype) in enumerate(combos):
            (rest if k else first).append((spec, shapes, dtype))
    return first, rest


def case_id(case):
    spec, shapes, dtype = case
    return f"{spec.name}-{dtype}-" + "x".join(
        "(" + ",".join(map(str, s)) + ")" for s in shapes)


def outputs(r):
    """An op's result as a list of tensors."""
    return list(r) if isinstance(r, (tuple, list)) else [r]
