"""Dtype policies: the dtype a layer computes in and the dtype its
weights are stored in (Keras 3's DTypePolicy, also exposed under TF 2's
names tf.keras.mixed_precision.Policy / set_global_policy).

'mixed_float16' computes in float16 and keeps variables in float32: the
weights stay precise enough for small updates to register, while the
matmuls and convolutions move half the bytes. 'mixed_bfloat16' does the
same in bfloat16, whose float32 exponent range needs no loss scaling
(LossScaleOptimizer is for float16).
"""
import tfmini as tf

from .. import backend

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


def _core_dtype(name, policy):
    try:
        return tf.as_dtype(name)
    except (TypeError, ValueError, KeyError):
        raise ValueError(
            f"Cannot convert {policy!r} to a mixed precision DTypePolicy. "
            f"Valid policies include 'mixed_float16', 'mixed_bfloat16' "
            f"and the name of any float dtype such as 'float32'."
        ) from None


class DTypePolicy:
    """A layer's compute and variable dtypes, from a name:
    'mixed_float16' (float16 compute, float32 variables),
    'mixed_bfloat16' (bfloat16 compute, float32 variables), or a dtype
    name ('float32': both that dtype)."""

    def __init__(self, name=None):
        if name is None:
            name = global_policy().name
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as "
                            f"'mixed_float16'. Received: name={name!r} "
                            f"(of type {type(name)})")
        if name in _MIXED:
            compute = _core_dtype(_MIXED[name], name)
            variable = tf.float32
        else:
            compute = variable = _core_dtype(name, name)
        self._name = name
        self._compute = compute
        self._variable = variable

    @property
    def name(self):
        return self._name

    @property
    def compute_dtype(self):
        """The dtype layers compute in (inputs are cast to it)."""
        return self._compute.name

    @property
    def variable_dtype(self):
        """The dtype of the weights layers create."""
        return self._variable.name

    @property
    def quantization_mode(self):
        return None

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other._name == self._name

    def __hash__(self):
        return hash(self._name)


class FloatDTypePolicy(DTypePolicy):
    """Keras 3's alias of DTypePolicy."""


Policy = DTypePolicy

_global = [None]


def set_global_policy(policy):
    """Set the policy of layers created from now on without a `dtype`:
    a name ('mixed_float16') or a DTypePolicy; None resets to floatx."""
    if policy is not None and not isinstance(policy, DTypePolicy):
        if not isinstance(policy, str):
            raise ValueError(
                f"Invalid `policy` argument. Expected the string name of "
                f"a policy (such as 'mixed_float16') or a `DTypePolicy` "
                f"instance. Received: policy={policy!r} "
                f"(of type {type(policy)})")
        policy = DTypePolicy(policy)
    _global[0] = policy


def global_policy():
    """The current global policy (floatx's, unless one was set)."""
    policy = _global[0]
    if policy is None:
        # Not cached, so that a later set_floatx still takes effect.
        return DTypePolicy(backend.floatx())
    return policy


set_dtype_policy = set_global_policy
dtype_policy = global_policy


def get(dtype):
    """The policy a layer gets for its `dtype` argument: None (the
    global policy), a policy, its serialized dict, a name or a DType."""
    if dtype is None:
        return global_policy()
    if isinstance(dtype, DTypePolicy):
        return dtype
    if isinstance(dtype, dict):
        return DTypePolicy(dtype.get("config", dtype).get("name"))
    return DTypePolicy(getattr(dtype, "name", dtype))


def serialize(policy):
    return {"module": "keras", "class_name": "DTypePolicy",
            "config": policy.get_config(), "registered_name": None}


def deserialize(config):
    return get(config)
