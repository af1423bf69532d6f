"""tf.lite: post-training quantization and an interpreter, in the shape
of TF Lite's Python API, over tfmini's own saved-model format.

    converter = tf.lite.TFLiteConverter.from_saved_model(export_dir)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    model_bytes = converter.convert()      # a saved_model.tfm, not a
                                           # TF Lite flatbuffer
    interpreter = tf.lite.Interpreter(model_content=model_bytes)

The bytes are a tfmini saved-model file (what tf.saved_model.save
writes into export_dir/saved_model.tfm): tf.saved_model.load, the C
runtime and tfmini_model_server read it unchanged. See
docs/QUANTIZATION.md."""
import enum
import os

from ._interpreter import Interpreter
from . import _convert

__all__ = ["TFLiteConverter", "Optimize", "OpsSet", "TargetSpec",
           "Interpreter", "convert"]


class Optimize(enum.Enum):
    DEFAULT = "DEFAULT"
    # TF keeps these two as deprecated aliases of DEFAULT.
    OPTIMIZE_FOR_SIZE = "OPTIMIZE_FOR_SIZE"
    OPTIMIZE_FOR_LATENCY = "OPTIMIZE_FOR_LATENCY"
    EXPERIMENTAL_SPARSITY = "EXPERIMENTAL_SPARSITY"


class OpsSet(enum.Enum):
    TFLITE_BUILTINS = "TFLITE_BUILTINS"
    TFLITE_BUILTINS_INT8 = "TFLITE_BUILTINS_INT8"
    SELECT_TF_OPS = "SELECT_TF_OPS"


class TargetSpec:
    def __init__(self, supported_ops=None, supported_types=None):
        self.supported_ops = set(supported_ops or
                                 {OpsSet.TFLITE_BUILTINS})
        self.supported_types = set(supported_types or ())


def _model_file(saved_model_dir):
    path = os.path.join(os.fspath(saved_model_dir), "saved_model.tfm")
    if not os.path.isfile(path):
        raise OSError(f"SavedModel file does not exist at: {path}")
    return path


def convert(saved_model_dir, optimizations=(Optimize.DEFAULT,),
            representative_dataset=None, supported_ops=None,
            signature_key="serving_default"):
    """Quantizes the saved model in saved_model_dir; returns the bytes of
    the quantized saved-model file. Dynamic range (int8 weights) unless
    representative_dataset is given: then full integer (int8 weights and
    activations in every MatMul and Conv2D)."""
    ops = set(supported_ops or {OpsSet.TFLITE_BUILTINS})
    unknown = ops - set(OpsSet)
    if unknown:
        raise ValueError(f"tf.lite: unknown supported_ops {unknown}")
    with open(_model_file(saved_model_dir), "rb") as f:
        data = f.read()
    if not optimizations:
        return data
    if OpsSet.TFLITE_BUILTINS_INT8 in ops and representative_dataset is None:
        raise ValueError("tf.lite: full-integer quantization "
                         "(TFLITE_BUILTINS_INT8) needs a "
                         "representative_dataset to calibrate the "
                         "activation ranges")
    if representative_dataset is not None and \
            not callable(representative_dataset):
        raise TypeError("tf.lite: representative_dataset must be a "
                        "callable returning an iterable of samples, got "
                        f"{type(representative_dataset).__name__}")
    mode = "int8" if representative_dataset is not None else "dynamic"
    out, _ = _convert.convert_bytes(data, mode, representative_dataset,
                                    signature_key)
    return out


class TFLiteConverter:
    """tf.lite.TFLiteConverter: from_saved_model, then set
    optimizations, representative_dataset and target_spec, then
    convert()."""

    def __init__(self, saved_model_dir, signature_keys=None):
        self._dir = os.fspath(saved_model_dir)
        keys = signature_keys or ["serving_default"]
        if len(keys) != 1:
            raise ValueError("tf.lite: convert one signature at a time "
                             f"(got {keys})")
        self._signature_key = keys[0]
        self.optimizations = []
        self.representative_dataset = None
        self.target_spec = TargetSpec()
        self.inference_input_type = None
        self.inference_output_type = None
        self.allow_custom_ops = False
        self.experimental_new_converter = True

    @classmethod
    def from_saved_model(cls, saved_model_dir, signature_keys=None,
                         tags=None):
        _model_file(saved_model_dir)
        return cls(saved_model_dir, signature_keys)

    def convert(self):
        from .. import dtypes
        for what in ("inference_input_type", "inference_output_type"):
            t = getattr(self, what)
            if t is not None and dtypes.as_dtype(t) != dtypes.float32:
                raise ValueError(f"tf.lite: {what} {t!r} is not supported: "
                                 "quantized models take and return float32 "
                                 "(the model quantizes and dequantizes "
                                 "inside)")
        unknown = [o for o in self.optimizations
                   if not isinstance(o, Optimize)]
        if unknown:
            raise ValueError(f"tf.lite: optimizations must be "
                             f"tf.lite.Optimize values, got {unknown}")
        rd = self.representative_dataset
        if rd is not None and hasattr(rd, "input_gen"):
            rd = rd.input_gen        # tf.lite.RepresentativeDataset
        return convert(self._dir, self.optimizations, rd,
                       self.target_spec.supported_ops, self._signature_key)


class RepresentativeDataset:
    def __init__(self, input_gen):
        self.input_gen = input_gen


__all__.append("RepresentativeDataset")
