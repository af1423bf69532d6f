"""Eager op errors in TF's shape: the message, then " [Op:<TfName>]",
and never TF's "{{function_node ...}}" prefix. TF 2.21's texts for the
same calls are in the comments."""
import re

import pytest

import tfmini as tf


def _error(fn):
    with pytest.raises(tf.errors.OpError) as info:
        fn()
    e = info.value
    msg = str(e)
    assert "{{function_node" not in msg
    # TF's attribute holds the same text as str().
    assert e.message == msg
    return e, msg


def test_reshape_message_ends_with_op_name():
    # TF: "{{function_node __wrapped__Reshape_device_/job:localhost/...}}
    # Input to reshape is a tensor with 30 values, but the requested
    # shape has 4 [Op:Reshape]"
    e, msg = _error(lambda: tf.reshape(tf.range(30), [4]))
    assert isinstance(e, tf.errors.InvalidArgumentError)
    assert re.fullmatch(r"Reshape: Input to reshape is a tensor with 30 "
                        r"values, but the requested shape has 4"
                        r"( \(input shape \[30\]\))? \[Op:Reshape\]", msg)


def test_gather_matches_tf_text():
    # TF: "indices[0] = 5 is not in [0, 3) [Op:GatherV2]"
    _, msg = _error(lambda: tf.gather(tf.ones([3]), [5]))
    assert msg.endswith("indices[0] = 5 is not in [0, 3) [Op:GatherV2]")
    # TF 2.21 writes a scalar index with no position: "indices = 3 ..."
    _, msg = _error(lambda: tf.gather(tf.ones([3]), 3))
    assert msg.endswith("indices = 3 is not in [0, 3) [Op:GatherV2]")


def test_concat_rank_mismatch():
    # TF: "ConcatOp : Ranks of all input tensors should match: shape[0] =
    # [2] vs. shape[1] = [2,2] [Op:ConcatV2] name: concat"
    _, msg = _error(lambda: tf.concat([tf.ones([2]), tf.ones([2, 2])], 0))
    assert "Ranks of all input tensors should match: shape[0] = [2] vs. " \
           "shape[1] = [2,2]" in msg
    assert msg.endswith(" [Op:ConcatV2]")


def test_matmul_and_dtype_errors():
    # TF: "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]
    # [Op:MatMul]"
    _, msg = _error(lambda: tf.matmul(tf.ones([2, 3]), tf.ones([2, 3])))
    assert "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]" in msg
    assert re.search(r" \[Op:(Batch)?MatMul(V2)?\]$", msg)
    # TF: "cannot compute AddV2 as input #1(zero-based) was expected to be
    # a float tensor but is a int32 tensor [Op:AddV2]"
    _, msg = _error(lambda: tf.constant(1.0) + tf.constant(1))
    assert msg.endswith(" [Op:AddV2]") and "int32" in msg


def test_broadcast_error_names_the_op():
    # TF: "Incompatible shapes: [2] vs. [3] [Op:AddV2]"
    e, msg = _error(lambda: tf.constant([1, 2]) + tf.constant([1, 2, 3]))
    assert isinstance(e, tf.errors.InvalidArgumentError)
    assert "Incompatible shapes" in msg and "[2]" in msg and "[3]" in msg
    assert msg.endswith(" [Op:AddV2]")


def test_suffix_added_once():
    # An error caught and raised again keeps one suffix.
    try:
        tf.reshape(tf.range(6), [4])
    except tf.errors.InvalidArgumentError as e:
        first = str(e)
    assert first.count("[Op:Reshape]") == 1


def test_python_errors_are_left_alone():
    # Errors raised by Python code (not a C op) keep their own text.
    with pytest.raises(ValueError) as info:
        tf.random.stateless_normal([2], seed=[1, 2, 3])
    assert "[Op:" not in str(info.value)
