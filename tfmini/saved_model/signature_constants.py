"""The names TF's serving code agrees on, as tf.saved_model exports them:
the signature key save() gives a single signature, and the tag and
method names of TF Serving's predict/classify/regress APIs (plain
strings; tfmini's files keep signatures by these keys)."""

DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"

# Meta graph tags (load's `tags`).
SERVING = "serve"
TRAINING = "train"
GPU = "gpu"
TPU = "tpu"

PREDICT_METHOD_NAME = "tensorflow/serving/predict"
PREDICT_INPUTS = "inputs"
PREDICT_OUTPUTS = "outputs"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
CLASSIFY_INPUTS = "inputs"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
REGRESS_INPUTS = "inputs"
REGRESS_OUTPUTS = "outputs"
