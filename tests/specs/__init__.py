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
