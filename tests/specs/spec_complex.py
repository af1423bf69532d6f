"""OpSpecs for the complex family (csrc/ops/ops_complex.def). The harness
makes real inputs and checks real outputs, so each row builds its complex
values with tf.complex and reads them back with real/imag/abs/angle: the
finite differences then check TF's complex gradient convention through
every rule on the way (and Mul's complex rule, Note [Complex
gradients])."""
import numpy as np

import tfmini as tf

from .opspec import OpSpec, away_from_zero

PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (4,))]


def _z(r, i):
    return np.asarray(r) + 1j * np.asarray(i)


SPECS = [
    OpSpec("complex_real_imag",
           lambda r, i: (tf.math.real(tf.complex(r, i) * tf.complex(i, r)),
                         tf.math.imag(tf.complex(r, i) * tf.complex(r, r))),
           lambda r, i: (np.real(_z(r, i) * _z(i, r)),
                         np.imag(_z(r, i) * _z(r, r))),
           PAIRS, grad=(0, 1), ops=["Complex", "Real", "Imag"],
           second_order=True),
    OpSpec("complex_abs", lambda r, i: tf.abs(tf.complex(r, i)),
           lambda r, i: np.abs(_z(r, i)), PAIRS,
           inputs=[away_from_zero(), away_from_zero()], grad=(0, 1),
           ops=["ComplexAbs"]),
    # |imag| >= 0.5 keeps clear of the branch cut on the negative reals.
    OpSpec("angle", lambda r, i: tf.math.angle(tf.complex(r, i)),
           lambda r, i: np.angle(_z(r, i)), PAIRS,
           inputs=[away_from_zero(), away_from_zero()], grad=(0, 1),
           ops=["Angle"]),
    OpSpec("conj",
           lambda r, i: tf.math.imag(tf.math.conj(tf.complex(r, i)) *
                                     tf.complex(i, r)),
           lambda r, i: np.imag(np.conj(_z(r, i)) * _z(i, r)), PAIRS,
           grad=(0, 1), ops=["Conj"]),
]
