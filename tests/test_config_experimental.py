"""tf.config.experimental (memory: as TF on a machine without a GPU) and
tf.types.experimental."""
import numpy as np
import pytest

import tfmini as tf


def test_memory_info_raises_for_cpu_as_tf():
    with pytest.raises(ValueError, match="CPU"):
        tf.config.experimental.get_memory_info("CPU:0")
    with pytest.raises(ValueError, match="CPU"):
        tf.config.experimental.get_memory_info("/device:CPU:0")
    with pytest.raises(ValueError, match="No matching devices"):
        tf.config.experimental.get_memory_info("GPU:0")
    with pytest.raises(ValueError):
        tf.config.experimental.reset_memory_stats("CPU:0")
    with pytest.raises(ValueError):
        tf.config.experimental.get_memory_usage("CPU:0")


def test_memory_growth_loop_runs_unchanged():
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    cpu = tf.config.list_physical_devices("CPU")[0]
    with pytest.raises(ValueError, match="non-GPU"):
        tf.config.experimental.set_memory_growth(cpu, True)
    with pytest.raises(ValueError, match="Unrecognized"):
        tf.config.experimental.set_memory_growth("GPU:0", True)
    assert tf.config.experimental.list_physical_devices("CPU") == [cpu]
    assert tf.config.get_visible_devices("CPU") == [cpu]
    tf.config.set_visible_devices([cpu])
    with pytest.raises(ValueError):
        tf.config.set_visible_devices([], "CPU")


def test_types_experimental():
    f = tf.function(lambda x: x + 1)
    assert isinstance(f, tf.types.experimental.GenericFunction)
    c = f.get_concrete_function(tf.TensorSpec([], tf.float32))
    assert isinstance(c, tf.types.experimental.ConcreteFunction)

    def takes(x: tf.types.experimental.TensorLike):
        return tf.convert_to_tensor(x)
    assert takes(np.float32(2)).numpy() == 2
