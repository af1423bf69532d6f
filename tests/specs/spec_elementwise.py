"""OpSpecs for the elementwise family (csrc/ops/ops_elementwise.def)."""
import numpy as np

import tfmini as tf

from .opspec import NUMERIC, OpSpec

BROADCAST = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (4,)), ((4, 1), (1, 5)),
             ((0, 3), (3,)), ((2, 1, 3), (4, 1))]

SPECS = [
    OpSpec("add", tf.add, np.add, BROADCAST, NUMERIC, grad=(0, 1),
           ops=["AddV2"]),
    OpSpec("subtract", tf.subtract, np.subtract, BROADCAST, NUMERIC,
           grad=(0, 1), ops=["Sub"]),
    OpSpec("multiply", tf.multiply, np.multiply, BROADCAST, NUMERIC,
           grad=(0, 1), ops=["Mul"]),
]
