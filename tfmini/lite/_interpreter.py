"""tf.lite.Interpreter over a tfmini saved-model file: TF Lite's calls
(allocate_tensors, get_input_details, set_tensor, invoke, get_tensor,
resize_tensor_input, get_signature_runner) on a loaded signature."""
import json
import os
import tempfile

import numpy as np

from ..saved_model import file_format as F

_NP = {"float32": np.float32, "float64": np.float64, "int8": np.int8,
       "uint8": np.uint8, "int16": np.int16, "int32": np.int32,
       "int64": np.int64, "bool": np.bool_, "float16": np.float16}


def _specs(entries):
    out = []
    for name, spec in entries:
        if "spec" not in spec:
            raise ValueError(f"tf.lite.Interpreter: signature entry {name!r}"
                             " is not a tensor")
        dtype, shape = spec["spec"][0], spec["spec"][1]
        out.append((name, np.dtype(_NP[dtype]),
                    None if shape is None else
                    [-1 if d is None else d for d in shape]))
    return out


class Interpreter:
    def __init__(self, model_path=None, model_content=None,
                 experimental_delegates=None, num_threads=None,
                 signature_key="serving_default"):
        if (model_path is None) == (model_content is None):
            raise ValueError("tf.lite.Interpreter: pass exactly one of "
                             "model_path and model_content")
        if model_path is not None:
            p = os.fspath(model_path)
            if os.path.isdir(p):
                p = os.path.join(p, "saved_model.tfm")
            with open(p, "rb") as f:
                model_content = f.read()
        model_content = bytes(model_content)
        model = F.decode(model_content)   # a clear error for bad bytes
        meta = [s for t, s in model["sections"] if t == b"META"]
        sigs = json.loads(meta[0]).get("signatures", {}) if meta else {}
        if signature_key not in sigs:
            raise ValueError(f"tf.lite.Interpreter: the model has no "
                             f"signature {signature_key!r} (it has "
                             f"{sorted(sigs)})")
        from .. import saved_model
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "saved_model.tfm"), "wb") as f:
                f.write(model_content)
            self._loaded = saved_model.load(d)
        self._fn = self._loaded.signatures[signature_key]
        self._signature_key = signature_key
        sig = sigs[signature_key]
        self._inputs = _specs(sig["inputs"])
        self._outputs = _specs(sig["outputs"])
        # Unknown dims are 1 until resize_tensor_input, as in TF Lite.
        self._shapes = [None if s is None else [1 if d < 0 else d
                                                for d in s]
                        for _, _, s in self._inputs]
        self._values = [None] * (len(self._inputs) + len(self._outputs))
        self._allocated = False

    def _details(self, specs, first, shapes):
        out = []
        for k, (name, dtype, sig_shape) in enumerate(specs):
            shape = shapes[k] if shapes is not None else sig_shape
            shape = [] if shape is None else shape
            out.append({
                "name": name, "index": first + k,
                "shape": np.array([1 if d < 0 else d for d in shape],
                                  np.int32),
                "shape_signature": np.array(sig_shape or [], np.int32),
                "dtype": dtype,
                "quantization": (0.0, 0),
                "quantization_parameters": {
                    "scales": np.zeros(0, np.float32),
                    "zero_points": np.zeros(0, np.int32),
                    "quantized_dimension": 0},
                "sparsity_parameters": {}})
        return out

    def allocate_tensors(self):
        self._allocated = True

    def get_input_details(self):
        return self._details(self._inputs, 0, self._shapes)

    def get_output_details(self):
        n = len(self._inputs)
        shapes = [None if v is None else list(v.shape)
                  for v in self._values[n:]]
        return self._details(self._outputs, n,
                             shapes if None not in shapes else None)

    def get_signature_list(self):
        return {self._signature_key: {
            "inputs": [n for n, _, _ in self._inputs],
            "outputs": [n for n, _, _ in self._outputs]}}

    def resize_tensor_input(self, input_index, tensor_size, strict=False):
        k = self._input_slot(input_index)
        sig = self._inputs[k][2]
        size = [int(d) for d in tensor_size]
        if sig is not None and (len(size) != len(sig) or any(
                s >= 0 and s != d for s, d in zip(sig, size))):
            raise ValueError(f"tf.lite.Interpreter: cannot resize input "
                             f"{input_index} ({self._inputs[k][0]}) of shape "
                             f"signature {sig} to {size}")
        self._shapes[k] = size
        self._allocated = False

    def _input_slot(self, index):
        if not isinstance(index, (int, np.integer)) or \
                not 0 <= index < len(self._inputs):
            raise ValueError(f"tf.lite.Interpreter: tensor index {index} is "
                             f"not an input (inputs are 0.."
                             f"{len(self._inputs) - 1})")
        return int(index)

    def set_tensor(self, tensor_index, value):
        k = self._input_slot(tensor_index)
        name, dtype, _ = self._inputs[k]
        value = np.asarray(value)
        if value.dtype != dtype:
            raise ValueError(f"Cannot set tensor: Got value of type "
                             f"{value.dtype.name.upper()} but expected type "
                             f"{dtype.name.upper()} for input {k}, name: "
                             f"{name}")
        want = self._shapes[k]
        if want is not None and (value.ndim != len(want) or any(
                w >= 0 and w != d for w, d in zip(want, value.shape))):
            want_s = [1 if w < 0 else w for w in want]
            raise ValueError(f"Cannot set tensor: Dimension mismatch. Got "
                             f"{list(value.shape)} but expected {want_s} for"
                             f" input {k}, name: {name} (resize_tensor_input"
                             f" first to change the batch size)")
        self._values[k] = value.copy()

    def invoke(self):
        if not self._allocated:
            raise RuntimeError("tf.lite.Interpreter: call allocate_tensors() "
                               "before invoke()")
        missing = [self._inputs[k][0] for k in range(len(self._inputs))
                   if self._values[k] is None]
        if missing:
            raise ValueError(f"tf.lite.Interpreter: inputs {missing} were "
                             "never set (set_tensor)")
        feeds = {name: self._values[k]
                 for k, (name, _, _) in enumerate(self._inputs)}
        out = self._fn(**feeds)
        n = len(self._inputs)
        for k, (name, _, _) in enumerate(self._outputs):
            self._values[n + k] = np.asarray(out[name])

    def get_tensor(self, tensor_index):
        if not isinstance(tensor_index, (int, np.integer)) or \
                not 0 <= tensor_index < len(self._values):
            raise ValueError(f"tf.lite.Interpreter: tensor index "
                             f"{tensor_index} is out of range (0.."
                             f"{len(self._values) - 1})")
        v = self._values[tensor_index]
        if v is None:
            raise ValueError(f"tf.lite.Interpreter: tensor {tensor_index} "
                             "has no value yet (set_tensor / invoke)")
        return v.copy()

    def get_signature_runner(self, signature_key=None):
        """fn(**inputs) -> {output name: ndarray}, as TF Lite's
        SignatureRunner is called."""
        if signature_key not in (None, self._signature_key):
            raise ValueError(f"tf.lite.Interpreter: this interpreter runs "
                             f"signature {self._signature_key!r}, not "
                             f"{signature_key!r}")

        def run(**kw):
            out = self._fn(**kw)
            return {k: np.asarray(v) for k, v in out.items()}
        return run
