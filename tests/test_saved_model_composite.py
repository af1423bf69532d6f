"""Saved models whose functions take and return RaggedTensors and
SparseTensors (input_signature of RaggedTensorSpec / SparseTensorSpec).
A loaded tf.function takes and returns the composites; a signature takes
the flat components by name (r, r_1, ...) and returns the composites,
as TF 2.21's."""
import numpy as np
import pytest

import tfmini as tf


class _M(tf.Module):
    @tf.function(input_signature=[
        tf.RaggedTensorSpec([None, None], tf.float32)])
    def rsum(self, r):
        return tf.reduce_sum(r, axis=1), r * 2.0

    @tf.function(input_signature=[tf.SparseTensorSpec([2, 4], tf.float32)])
    def sp(self, s):
        return tf.sparse.reduce_sum(s, axis=1), s

    @tf.function(input_signature=[
        tf.RaggedTensorSpec([None, None], tf.float32)])
    def sig(self, r):
        return {"s": tf.reduce_sum(r, axis=1), "r": r * 2.0}


def _rt():
    return tf.ragged.constant([[1.0, 2.0], [], [3.0]])


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("composite"))
    m = _M()
    tf.saved_model.save(m, d, signatures={"a": m.sig})
    return tf.saved_model.load(d)


def test_loaded_function_takes_and_returns_ragged(loaded):
    s, r = loaded.rsum(_rt())
    assert s.numpy().tolist() == [3.0, 0.0, 3.0]
    assert isinstance(r, tf.RaggedTensor)
    assert r.to_list() == [[2.0, 4.0], [], [6.0]]
    # Another row partition, same spec: the same saved trace.
    s, r = loaded.rsum(tf.ragged.constant([[5.0], [1.0, 1.0, 1.0]]))
    assert s.numpy().tolist() == [5.0, 3.0]
    assert r.to_list() == [[10.0], [2.0, 2.0, 2.0]]


def test_loaded_function_takes_and_returns_sparse(loaded):
    st = tf.sparse.SparseTensor([[0, 1], [1, 3]], [1.0, 2.0], [2, 4])
    total, back = loaded.sp(st)
    assert total.numpy().tolist() == [1.0, 2.0]
    assert isinstance(back, tf.sparse.SparseTensor)
    assert back.indices.numpy().tolist() == [[0, 1], [1, 3]]
    assert back.values.numpy().tolist() == [1.0, 2.0]
    assert back.dense_shape.numpy().tolist() == [2, 4]


def test_loaded_function_refuses_other_types(loaded):
    with pytest.raises(ValueError, match="Could not find matching"):
        loaded.rsum(tf.constant([[1.0]]))
    with pytest.raises(ValueError, match="Could not find matching"):
        loaded.rsum(tf.ragged.constant([[1, 2]]))     # int32 values


def test_signature_takes_components_returns_composites(loaded):
    f = loaded.signatures["a"]
    out = f(r=tf.constant([1.0, 2.0, 3.0]),
            r_1=tf.constant([0, 2, 2, 3], tf.int64))
    assert sorted(out) == ["r", "s"]
    assert out["s"].numpy().tolist() == [3.0, 0.0, 3.0]
    assert isinstance(out["r"], tf.RaggedTensor)
    assert out["r"].to_list() == [[2.0, 4.0], [], [6.0]]
    so = f.structured_outputs
    assert isinstance(so["r"], tf.RaggedTensorSpec)
    assert so["r"].dtype == tf.float32
    with pytest.raises(TypeError, match="missing inputs"):
        f(r=_rt())


def test_string_ragged_round_trip(tmp_path):
    class S(tf.Module):
        @tf.function(input_signature=[
            tf.RaggedTensorSpec([None, None], tf.string)])
        def f(self, r):
            return tf.strings.length(r), tf.strings.upper(r)

    tf.saved_model.save(S(), str(tmp_path))
    ld = tf.saved_model.load(str(tmp_path))
    n, u = ld.f(tf.ragged.constant([["ab", "c"], []]))
    assert n.to_list() == [[2, 1], []]
    assert u.to_list() == [[b"AB", b"C"], []]
