"""tf.saved_model.SaveOptions and LoadOptions: the settings TF's save()
and load() take. tfmini's file has one layout (no device placements, no
TensorFlow-namespace ops, no sharding), so most settings change nothing
here; they are kept, checked as TF checks them, so that code passing
them runs. experimental_custom_gradients (True by default, as in TF)
saves the gradient of a function that used @tf.custom_gradient (Note
[Saved custom gradients] in save.py); False leaves it out, and the
loaded function's gradient is then the plain one."""
import enum


class VariablePolicy(enum.Enum):
    """tf.saved_model.experimental.VariablePolicy."""
    NONE = None
    SAVE_VARIABLE_DEVICES = "save_variable_devices"
    EXPAND_DISTRIBUTED_VARIABLES = "expand_distributed_variables"

    @classmethod
    def from_obj(cls, obj):
        if obj is None:
            return cls.NONE
        if isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            for policy in cls:
                if policy.value == obj.lower():
                    return policy
        raise ValueError(f"Received invalid VariablePolicy value: {obj}.")


class SaveOptions:
    """Settings for tf.saved_model.save (TF's arguments and defaults)."""
    __slots__ = ("namespace_whitelist", "save_debug_info", "function_aliases",
                 "experimental_debug_stripper", "experimental_io_device",
                 "experimental_variable_policy",
                 "experimental_custom_gradients", "experimental_image_format",
                 "experimental_skip_saver", "experimental_sharding_callback",
                 "extra_tags")

    def __init__(self, namespace_whitelist=None, save_debug_info=False,
                 function_aliases=None, experimental_debug_stripper=False,
                 experimental_io_device=None,
                 experimental_variable_policy=None,
                 experimental_custom_gradients=True,
                 experimental_image_format=False,
                 experimental_skip_saver=False,
                 experimental_sharding_callback=None, extra_tags=None):
        if function_aliases is not None and \
                not isinstance(function_aliases, dict):
            raise TypeError("function_aliases must be a dict, got "
                            f"{type(function_aliases).__name__}")
        self.namespace_whitelist = (list(namespace_whitelist)
                                    if namespace_whitelist else [])
        self.save_debug_info = save_debug_info
        self.function_aliases = function_aliases or {}
        self.experimental_debug_stripper = experimental_debug_stripper
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = VariablePolicy.from_obj(
            experimental_variable_policy)
        self.experimental_custom_gradients = experimental_custom_gradients
        self.experimental_image_format = experimental_image_format
        self.experimental_skip_saver = experimental_skip_saver
        self.experimental_sharding_callback = experimental_sharding_callback
        self.extra_tags = extra_tags


class LoadOptions:
    """Settings for tf.saved_model.load (TF's arguments and defaults)."""
    __slots__ = ("allow_partial_checkpoint", "experimental_io_device",
                 "experimental_skip_checkpoint",
                 "experimental_variable_policy",
                 "experimental_load_function_aliases")

    def __init__(self, allow_partial_checkpoint=False,
                 experimental_io_device=None,
                 experimental_skip_checkpoint=False,
                 experimental_variable_policy=None,
                 experimental_load_function_aliases=False):
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint
        self.experimental_variable_policy = VariablePolicy.from_obj(
            experimental_variable_policy)
        self.experimental_load_function_aliases = \
            experimental_load_function_aliases
