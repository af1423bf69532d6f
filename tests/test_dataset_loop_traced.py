"""`for x in dataset` inside a tf.function: a graph loop that reads the
dataset on every call (Note [Dataset loops in a graph] in
tfmini/data/traced_next.py).

The expected values are TF 2.21's, printed by the same programs run
under /work/tfvenv/bin/python. Shuffle orders differ between TF and
tfmini by design, so those tests check properties (a permutation on
each call; new orders across calls where TF reshuffles; one order where
TF keeps it)."""
import gc
import threading
import time

import numpy as np
import pytest

import tfmini as tf
from tfmini.data import traced_next


def _digits(s, n):
    return [int(c) for c in str(int(s)).zfill(n)]


def _order_fn():
    @tf.function
    def order(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s = s * 10 + x
        return s
    return order


# ---- each call reads the dataset again -------------------------------

def test_unseeded_shuffle_reshuffles_on_each_call():
    # The brief's program: TF 2.21 printed 432 540 453 (a new order per
    # call); tfmini printed 24 24 24 with the loop unrolled.
    ds = tf.data.Dataset.range(6).shuffle(6).batch(2)

    @tf.function
    def f(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s = s * 10 + x[0]
        return s
    firsts = {int(f(ds)) for _ in range(8)}
    assert len(firsts) > 1
    assert f.experimental_get_tracing_count() == 1

    order = _order_fn()
    plain = tf.data.Dataset.range(6).shuffle(6)
    seen = [_digits(order(plain), 6) for _ in range(6)]
    assert all(sorted(s) == list(range(6)) for s in seen)
    assert len({tuple(s) for s in seen}) > 1


def test_seeded_shuffle_orders_as_tf():
    order = _order_fn()
    # An argument: TF 2.21 reshuffles on each call (451230, 431502).
    arg = tf.data.Dataset.range(6).shuffle(6, seed=1)
    a, b = _digits(order(arg), 6), _digits(order(arg), 6)
    assert sorted(a) == sorted(b) == list(range(6)) and a != b
    # Without reshuffling: one order, the eager one (TF: 350412 twice).
    fixed = tf.data.Dataset.range(6).shuffle(
        6, seed=1, reshuffle_each_iteration=False)
    eager = [int(x) for x in fixed]
    assert _digits(order(fixed), 6) == _digits(order(fixed), 6) == eager

    # Made inside the function: TF makes it anew on each call, so each
    # call reads the same first order (451230 twice).
    @tf.function
    def inside():
        s = tf.constant(0, tf.int64)
        for x in tf.data.Dataset.range(6).shuffle(6, seed=1):
            s = s * 10 + x
        return s
    first = _digits(inside(), 6)
    assert sorted(first) == list(range(6))
    assert _digits(inside(), 6) == _digits(inside(), 6) == first


def test_generator_runs_on_each_call():
    calls = [0]

    def gen():
        calls[0] += 1
        for i in range(3):
            yield i + 10 * calls[0]
    ds = tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec((), tf.int32))

    @tf.function
    def total(ds):
        s = 0
        for x in ds:
            s += x
        return s
    # TF 2.21: 33 63, and the generator ran twice.
    assert [int(total(ds)), int(total(ds))] == [33, 63]
    assert calls == [2]


def test_graph_does_not_grow_with_the_data():
    order = _order_fn()
    sizes = [len(order.get_concrete_function(tf.data.Dataset.range(n))
                 .graph.as_graph_def().node) for n in (2, 200)]
    assert sizes[0] == sizes[1]


# ---- loop forms (values printed by TF 2.21) ----------------------------

def test_break_continue_and_python_loop_variables():
    @tf.function
    def brk(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            if x > 3:
                break
            s += x
        return s

    @tf.function
    def cont(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            if x % 2 == 0:
                continue
            s += x
        return s

    @tf.function
    def counts(ds):
        n = 0
        t = 0.0
        for x in ds:
            n += 1
            t += tf.cast(x, tf.float32)
        return n, t

    assert int(brk(tf.data.Dataset.range(10))) == 6
    assert int(cont(tf.data.Dataset.range(10))) == 25
    n, t = counts(tf.data.Dataset.range(5))
    assert (n.dtype, int(n), t.dtype, float(t)) == \
        (tf.int32, 5, tf.float32, 10.0)
    n, t = counts(tf.data.Dataset.range(0))
    assert (int(n), float(t)) == (0, 0.0)


def test_break_stops_reading():
    pulled = []

    def gen():
        for i in range(100):
            pulled.append(i)
            yield i
    ds = tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec((), tf.int64))

    @tf.function
    def first_over(ds, limit):
        v = tf.constant(-1, tf.int64)
        for x in ds:
            if x > limit:
                v = x
                break
        return v
    assert int(first_over(ds, tf.constant(4, tf.int64))) == 5
    assert len(pulled) <= 7         # TF's take_while reads one more too


def test_enumerate_and_zip_of_datasets():
    calls = [0]

    def gen():
        calls[0] += 1
        for i in range(3):
            yield i + 10 * calls[0]
    dg = tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec((), tf.int32))

    @tf.function
    def en(ds):
        s = tf.constant(0, tf.int64)
        for i, x in enumerate(ds, 1):
            s += i * tf.cast(x, tf.int64)
        return s

    @tf.function
    def zp(a, b):
        s = tf.constant(0, tf.int64)
        for x, y in zip(a, b):
            s = s * 10 + tf.cast(x, tf.int64) * y
        return s
    assert [int(en(dg)), int(en(dg))] == [68, 128]
    r = tf.data.Dataset.range(1, 5)
    assert [int(zp(dg, r)), int(zp(dg, r))] == [3716, 4946]
    assert calls == [4]


def test_nested_loops_while_and_cond():
    @tf.function
    def nested(a, b):
        s = tf.constant(0, tf.int64)
        for x in a:
            for y in b:
                s += x * y
        return s

    @tf.function
    def in_while(ds):
        i = tf.constant(0)
        tot = tf.constant(0, tf.int64)
        while i < 3:
            for x in ds:
                tot += x
            i += 1
        return tot

    @tf.function
    def in_cond(ds, c):
        tot = tf.constant(0, tf.int64)
        if c:
            for x in ds:
                tot += x
        else:
            tot = tf.constant(-1, tf.int64)
        return tot

    @tf.function
    def with_range(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            for i in tf.range(x):
                s += i
        return s
    r = tf.data.Dataset.range
    assert int(nested(r(3), r(4))) == 18
    assert int(in_while(r(4))) == 18
    assert int(in_cond(r(4), tf.constant(True))) == 6
    assert int(in_cond(r(4), tf.constant(False))) == -1
    assert int(with_range(r(5))) == 10


def test_structures_and_a_partial_last_batch():
    @tf.function
    def dct(ds):
        s = tf.constant(0.0)
        for e in ds:
            s += tf.reduce_sum(e["a"]) * \
                tf.cast(tf.reduce_sum(e["b"]), tf.float32)
        return s

    @tf.function
    def tup(ds):
        s = tf.constant(0.0)
        for x, y in ds:
            s += tf.reduce_sum(x * y)
        return s

    @tf.function
    def partial(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += tf.reduce_sum(x) * tf.cast(tf.shape(x)[0], tf.int64)
        return s
    d = tf.data.Dataset.from_tensor_slices(
        {"a": [[1., 2.], [3., 4.], [5., 6.]], "b": [1, 2, 3]}).batch(2)
    assert float(dct(d)) == 63.0
    xs = np.arange(10, dtype=np.float32).reshape(5, 2)
    ys = np.arange(5, dtype=np.float32).reshape(5, 1)
    t = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(2)
    assert float(tup(t)) == 130.0
    assert int(partial(tf.data.Dataset.range(7).batch(3))) == 51


def test_made_inside_captured_and_graph_tensor_pipelines():
    cap = tf.data.Dataset.range(4).map(lambda x: x * 2)

    @tf.function
    def captured():
        s = tf.constant(0, tf.int64)
        for x in cap:
            s += x
        return s

    @tf.function
    def graph_map(w):         # elements depend on the argument: unrolled
        ds = tf.data.Dataset.range(3).map(
            lambda x: tf.cast(x, tf.float32) * w)
        s = tf.constant(0.0)
        for x in ds:
            s += x
        return s

    @tf.function
    def it(ds):
        s = tf.constant(0, tf.int64)
        for x in iter(ds):
            s += x
        return s
    assert int(captured()) == 12
    assert [float(graph_map(tf.constant(2.0))),
            float(graph_map(tf.constant(3.0)))] == [6.0, 9.0]
    assert int(it(tf.data.Dataset.range(4))) == 6


def test_a_loop_over_a_fresh_iterator_reads_on_each_call():
    @tf.function
    def order(ds):
        s = tf.constant(0, tf.int64)
        for x in iter(ds):
            s = s * 10 + x
        return s

    @tf.function
    def next_then_loop(ds):
        it = iter(ds)
        first = next(it)            # read while tracing, as before
        s = tf.constant(0, tf.int64)
        for x in it:
            s += x
        return first, s

    @tf.function
    def loop_then_optional(ds):
        it = iter(ds)
        s = tf.constant(0, tf.int64)
        for x in it:
            s += x
        return s, it.get_next_as_optional().has_value()
    ds = tf.data.Dataset.range(5).shuffle(5)
    orders = [_digits(order(ds), 5) for _ in range(5)]
    assert all(sorted(o) == list(range(5)) for o in orders)
    assert len({tuple(o) for o in orders}) > 1       # TF 2.21: True
    first, s = next_then_loop(tf.data.Dataset.range(5))
    assert (int(first), int(s)) == (0, 10)           # TF 2.21: 0 10
    s, more = loop_then_optional(tf.data.Dataset.range(5))
    assert (int(s), bool(more)) == (10, False)       # TF 2.21: 10 False


def test_strings_still_unroll_and_a_generator_of_them_warns(caplog):
    @tf.function
    def strs(ds):
        n = tf.constant(0)
        for s in ds:
            n += tf.strings.length(s)
        return n
    assert int(strs(tf.data.Dataset.from_tensor_slices(["ab", "cde"]))) \
        == 5

    def words():
        yield "ab"
        yield "cde"
    g = tf.data.Dataset.from_generator(
        words, output_signature=tf.TensorSpec((), tf.string))
    with caplog.at_level("WARNING", logger="tfmini"):
        assert int(strs(g)) == 5
    assert "words) is read while a tf.function is traced" in caplog.text


def test_next_on_an_outside_iterator_still_pulls_per_call():
    it = iter(tf.data.Dataset.range(5))

    @tf.function
    def take():
        return next(it)
    assert [int(take()) for _ in range(3)] == [0, 1, 2]


# ---- gradients and training --------------------------------------------

def _xs():
    return tf.data.Dataset.from_tensor_slices(
        np.array([1., 2., 3.], np.float32))


def test_gradient_through_the_loop():
    w = tf.Variable(2.0)

    @tf.function
    def loss(ds):
        s = tf.constant(0.0)
        for x in ds:
            s += w * x * x + s * 0.5
        return s

    @tf.function
    def loss_and_grad(ds):
        with tf.GradientTape() as t:
            s = tf.constant(0.0)
            for x in ds:
                s += w * x * x + s * 0.5
        return s, t.gradient(s, w)
    # TF 2.21 gives None for both gradients (its dataset loop is not
    # differentiable); tfmini gives the eager loop's 17.25.
    with tf.GradientTape() as t:
        value = loss(_xs())
    assert float(value) == 34.5
    assert float(t.gradient(value, w)) == 17.25
    s, g = loss_and_grad(_xs())
    assert (float(s), float(g)) == (34.5, 17.25)
    xs = _xs()
    for _ in range(traced_next._KEPT + 3):
        s, g = loss_and_grad(xs)
        assert float(g) == 17.25
    loops = [o for o in gc.get_objects()
             if isinstance(o, traced_next.DatasetLoop) and o._dataset() is xs]
    assert loops and all(not lp._runs and len(lp._kept) <= traced_next._KEPT
                         for lp in loops)


def _train(epochs, traced):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(37, 3)).astype(np.float32)
    y = (x @ np.array([[1.], [-2.], [0.5]], np.float32) + 0.3).astype(
        np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    w = tf.Variable(tf.zeros([3, 1]))
    b = tf.Variable(tf.zeros([1]))
    opt = tf.keras.optimizers.SGD(0.1)
    losses = tf.Variable(tf.zeros([5]))

    def train_step(xb, yb, i):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((xb @ w + b - yb) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        losses.scatter_nd_update(tf.reshape(i, [1, 1]),
                                  tf.reshape(loss, [1]))

    def train_epoch(ds):
        i = 0
        for xb, yb in ds:
            train_step(xb, yb, i)
            i += 1
        return i
    run = tf.function(train_epoch) if traced else train_epoch
    history = []
    for _ in range(epochs):
        n = run(ds)
        history.append(losses.numpy().copy())
    return int(n), history, w.numpy(), b.numpy()


def test_custom_training_loop_trains_as_the_eager_loop():
    n, eager_losses, ew, eb = _train(3, traced=False)
    m, traced_losses, tw, tb = _train(3, traced=True)
    assert n == m == 5
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(tw, ew, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tb, eb, rtol=1e-5, atol=1e-6)
    assert traced_losses[2][-1] < traced_losses[0][0]


# ---- runs: threads, errors ---------------------------------------------

def test_concurrent_runs_do_not_share_an_iterator():
    def slow():
        for i in range(20):
            time.sleep(0.001)
            yield i
    ds = tf.data.Dataset.from_generator(
        slow, output_signature=tf.TensorSpec((), tf.int64))

    @tf.function
    def total(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s
    total(ds)
    results = []

    def worker():
        results.append(int(total(ds)))
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [190] * 4
    loops = [o for o in gc.get_objects()
             if isinstance(o, traced_next.DatasetLoop) and o._dataset() is ds]
    assert len(loops) == 1 and not loops[0]._runs   # each run closed


def test_a_failed_run_raises_and_leaves_a_bounded_state():
    state = {"bad": True}

    def gen():
        yield 1
        if state["bad"]:
            raise ValueError("broken source")
        yield 2
    ds = tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec((), tf.int32))

    @tf.function
    def total(ds):
        s = tf.constant(0)
        for x in ds:
            s += x
        return s
    for _ in range(traced_next._OPEN_RUNS + 5):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="broken source"):
            total(ds)
    state["bad"] = False
    assert int(total(ds)) == 3
    loops = [o for o in gc.get_objects()
             if isinstance(o, traced_next.DatasetLoop) and o._dataset() is ds]
    assert loops and all(len(lp._runs) <= traced_next._OPEN_RUNS
                         for lp in loops)


def test_an_argument_dataset_is_not_kept_alive_by_the_graph():
    import weakref

    @tf.function
    def total(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s
    ds = tf.data.Dataset.range(4)
    concrete = total.get_concrete_function(ds)
    assert int(total(ds)) == 6
    ref = weakref.ref(ds)
    del ds
    gc.collect()
    assert ref() is None
    with pytest.raises(tf.errors.OpError, match="DatasetLoopOpen: the "
                       "dataset this `for` loop reads was deleted"):
        concrete()


def test_saving_a_dataset_loop_is_an_error_not_stale_data(tmp_path):
    # TF 2.21 saves it (and the loaded function prints 30); tfmini's
    # graph reads the dataset through Python, which a saved model does
    # not hold.
    class M(tf.Module):
        def __init__(self):
            self.ds = tf.data.Dataset.range(5)
            self.w = tf.Variable(3, dtype=tf.int64)

        @tf.function(input_signature=[])
        def total(self):
            s = tf.constant(0, tf.int64)
            for x in self.ds:
                s += x * self.w
            return s
    m = M()
    assert int(m.total()) == 30
    with pytest.raises(ValueError, match=r"tf.py_function calls Python.*"
                       r"a `for` loop over a tf.data.Dataset"):
        tf.saved_model.save(m, str(tmp_path / "m"))


def test_an_unrolled_loop_over_a_reshuffled_dataset_warns(caplog):
    @tf.function
    def joined(ds):
        s = tf.constant("")
        for w in ds:
            s = s + w
        return s
    words = tf.data.Dataset.from_tensor_slices(["a", "b", "c"])
    with caplog.at_level("WARNING", logger="tfmini"):
        assert joined(words).numpy() == b"abc"
        fixed = words.shuffle(3, seed=2, reshuffle_each_iteration=False)
        assert sorted(joined(fixed).numpy().decode()) == ["a", "b", "c"]
    assert "shuffled dataset" not in caplog.text
    with caplog.at_level("WARNING", logger="tfmini"):
        out = joined(words.shuffle(3).map(lambda w: w + "!"))
    assert sorted(out.numpy().decode()) == sorted("a!b!c!")
    assert caplog.text.count("A shuffled dataset") == 1


def test_loop_options_as_tf():
    @tf.function
    def capped(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            tf.autograph.experimental.set_loop_options(maximum_iterations=2)
            s += x
        return s

    @tf.function
    def last(ds):
        v = tf.zeros([3], tf.int64)
        for x in ds:
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(v, tf.TensorShape([None]))])
            v = x
        return v
    # TF 2.21: 35 (its dataset loop ignores maximum_iterations), and [6].
    assert int(capped(tf.data.Dataset.range(5, 10))) == 35
    assert last(tf.data.Dataset.range(7).batch(3)).numpy().tolist() == [6]


def test_nested_functions_and_two_loops_over_one_dataset():
    @tf.function
    def inner(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s

    @tf.function
    def outer(ds):
        return inner(ds) + inner(ds)

    @tf.function
    def twice(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        for x in ds:
            s += 10 * x
        return s
    assert int(outer(tf.data.Dataset.range(4))) == 12      # TF 2.21: 12
    assert int(twice(tf.data.Dataset.range(3))) == 33      # TF 2.21: 33


def test_a_random_map_draws_on_each_call():
    ds = tf.data.Dataset.range(3).map(lambda x: tf.random.uniform([]))

    @tf.function
    def total(ds):
        s = tf.constant(0.0)
        for x in ds:
            s += x
        return s
    assert float(total(ds)) != float(total(ds))            # as TF 2.21


def test_a_bad_generator_element_is_tfs_error():
    def bad():
        yield 1
        yield "x"
    ds = tf.data.Dataset.from_generator(
        bad, output_signature=tf.TensorSpec((), tf.int32))

    @tf.function
    def total(ds):
        s = tf.constant(0)
        for x in ds:
            s += x
        return s
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="could not be converted to the expected type"):
        total(ds)


def _keras_epochs(traced):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(37, 3)).astype(np.float32)
    y = (x @ np.array([[1.], [-2.], [0.5]], np.float32)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    init = tf.keras.initializers.GlorotUniform
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(4, activation="relu",
                              kernel_initializer=init(seed=1)),
        tf.keras.layers.Dense(1, kernel_initializer=init(seed=2))])
    model.build((None, 3))
    opt = tf.keras.optimizers.Adam(0.01)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def epoch(ds):
        total = 0.0
        for xb, yb in ds:
            total += step(xb, yb)
        return total
    run = tf.function(epoch) if traced else epoch
    return [float(run(ds)) for _ in range(3)]


def test_keras_model_and_adam_in_a_traced_epoch():
    # TF 2.21 printed these for the eager and the traced epochs alike.
    tf_losses = [21.189241409301758, 19.4728946685791, 17.95403289794922]
    np.testing.assert_allclose(_keras_epochs(traced=True), tf_losses,
                               rtol=1e-5)
    np.testing.assert_allclose(_keras_epochs(traced=False), tf_losses,
                               rtol=1e-5)
