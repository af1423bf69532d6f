"""tf.data.Options and its groups (dataset.with_options(o),
dataset.options()).

The settings are kept, checked and merged as TF keeps them (an unknown
name is an AttributeError, a value of the wrong type a TypeError, the
later with_options wins where both set one), and read back by
dataset.options() downstream. tfmini's pipelines act on none of them:
they run in order on the caller's threads (deterministic either way);
the static optimizations TF toggles here do not exist; and a strategy
splits each global batch over its replicas whatever auto_shard_policy
says (distribute/values.py)."""
import enum


class AutoShardPolicy(enum.IntEnum):
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.Enum):
    WARN = 0
    IGNORE = 1
    FAIL = 2


class _Group:
    """A set of named, typed settings; unset ones read as their default
    (a sub-group is made on first read)."""
    _props = {}        # name -> (type, default)
    _aliases = {}      # older name -> name

    def __init__(self):
        object.__setattr__(self, "_values", {})

    def _name(self, name):
        return self._aliases.get(name, name)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        key = self._name(name)
        if key not in self._props:
            raise AttributeError(f"{type(self).__name__} has no property "
                                 f"{name!r}")
        typ, default = self._props[key]
        if key not in self._values and isinstance(typ, type) and \
                issubclass(typ, _Group):
            self._values[key] = typ()
        return self._values.get(key, default)

    def __setattr__(self, name, value):
        key = self._name(name)
        if key not in self._props:
            raise AttributeError(f"Cannot set the property {name} on "
                                 f"{type(self).__name__}.")
        typ = self._props[key][0]
        ok = isinstance(value, typ) and not (
            typ is int and isinstance(value, bool))
        if value is not None and not ok:
            raise TypeError(f'Property "{name}" must be of type {typ}, '
                            f'got: {value} (type: {type(value)})')
        self._values[key] = value

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k)
                   for k in self._props)

    __hash__ = None

    def _merged(self, other):
        """A copy of self with what `other` set on top."""
        out = type(self)()
        for src in (self, other):
            for k, v in src._values.items():
                if isinstance(v, _Group):
                    v = out.__getattr__(k)._merged(v)
                out._values[k] = v
        return out


class DistributeOptions(_Group):
    _props = {"auto_shard_policy": (AutoShardPolicy, AutoShardPolicy.AUTO),
              "num_devices": (int, None)}


class OptimizationOptions(_Group):
    _props = {k: (bool, None) for k in (
        "apply_default_optimizations", "filter_fusion",
        "filter_parallelization",
        "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion",
        "map_fusion", "map_parallelization", "noop_elimination",
        "parallel_batch", "seq_interleave_prefetch",
        "shuffle_and_repeat_fusion")}


class ThreadingOptions(_Group):
    _props = {"max_intra_op_parallelism": (int, None),
              "private_threadpool_size": (int, None)}


class AutotuneOptions(_Group):
    _props = {"enabled": (bool, None), "cpu_budget": (int, None),
              "ram_budget": (int, None),
              "autotune_algorithm": (object, None)}


class Options(_Group):
    """tf.data.Options."""
    _props = {
        "autotune": (AutotuneOptions, None),
        "dataset_name": (str, None),
        "deterministic": (bool, None),
        "experimental_distribute": (DistributeOptions, None),
        "experimental_external_state_policy": (ExternalStatePolicy, None),
        "experimental_optimization": (OptimizationOptions, None),
        "experimental_slack": (bool, None),
        "experimental_symbolic_checkpoint": (bool, None),
        "experimental_warm_start": (bool, None),
        "threading": (ThreadingOptions, None),
    }
    _aliases = {"experimental_deterministic": "deterministic",
                "experimental_threading": "threading"}

    def merge(self, options):
        """These options with `options`' settings on top (TF's merge)."""
        if not isinstance(options, Options):
            raise TypeError(f"merge takes a tf.data.Options, got "
                            f"{type(options).__name__}")
        return self._merged(options)
