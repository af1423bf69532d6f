"""Random-case fuzzing of APIs that take user code and structures:
tf.data pipelines ("data"), Keras layers called with bad shapes and
dtypes ("keras"), and tf.cond / tf.while_loop with bad branches and loop
variables ("control"), eager and inside tf.function; and the newer
surfaces: WeakTensor promotion ("weak") and the eager fast paths
_C.call / _C.getitem ("fastpath"), in api_fuzz_eager.py; TensorSpec(None)
signatures ("unknown_rank"), ExtensionType ("extension"), and
Optional, Dataset.from_generator and py_function of unknown shapes
("generator"), in api_fuzz_trace.py. Used by
tests/test_fuzz_api.py and tests/fuzz_all.py, which run it in worker
processes so that a crash fails a test instead of killing pytest.

Every case must return or raise a clear error: a TF error (not
InternalError), ValueError, TypeError, IndexError, NotImplementedError,
or the case's own exception coming back from user code. Anything else,
a crash, a hang, or live tensors left behind by a case run a second time
(the first warms caches) is a problem.

    python3 tests/api_fuzz.py FAMILY SEED COUNT MARKS [START]

runs cases SEED*1_000_000 + [START, COUNT) of FAMILY, writing "S i desc"
before and "D i outcome" after each case (or "F i what" for a problem)
to MARKS, so a driver that sees the worker die knows which case did it.
`python3 tests/api_fuzz.py --show FAMILY SEED I` prints case I."""
import gc
import os
import random
import resource
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILIES = ("data", "keras", "control", "weak", "fastpath",
            "unknown_rank", "extension", "generator")


class Boom(Exception):
    """What user code in a case raises: it must come back unchanged."""


# ---- values ---------------------------------------------------------------

DTYPES = ["float32", "float64", "float16", "int32", "int64", "bool",
          "uint8"]


def rand_shape(rng, max_rank=3):
    return [rng.choice([0, 1, 1, 2, 3]) for _ in
            range(rng.randint(0, max_rank))]


def make_tensor(tf, np, rng, dtype=None, shape=None):
    dtype = dtype or rng.choice(DTYPES)
    shape = rand_shape(rng) if shape is None else shape
    a = np.arange(int(np.prod(shape, dtype=np.int64)) or 0) % 5
    return tf.constant(a.reshape(shape).astype(dtype))


def describe(x):
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        return f"T({x.dtype.name}{list(x.shape)})"
    if isinstance(x, (list, tuple)):
        return type(x).__name__ + "(" + ", ".join(map(describe, x)) + ")"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in
                               x.items()) + "}"
    return repr(x)[:40]


def structure(tf, np, rng, lead=None):
    """A random element structure: a tensor, a tuple or a dict (lead:
    the leading dim every tensor gets, for from_tensor_slices)."""
    def one():
        shape = rand_shape(rng, 2)
        if lead is not None:
            shape = [lead] + shape
        return make_tensor(tf, np, rng, shape=shape)
    kind = rng.random()
    if kind < 0.5:
        return one()
    if kind < 0.8:
        return tuple(one() for _ in range(rng.randint(1, 3)))
    return {k: one() for k in rng.sample("abc", rng.randint(1, 2))}


# ---- tf.data --------------------------------------------------------------

def map_fn(tf, rng):
    """(description, fn) of a random map function, good or bad."""
    choices = [
        ("identity", lambda *a: a[0] if len(a) == 1 else a),
        ("times2", lambda *a: tf.nest.map_structure(lambda t: t * 2,
                                                    a[0] if len(a) == 1
                                                    else a)),
        ("cast", lambda *a: tf.nest.map_structure(
            lambda t: tf.cast(t, tf.float32), a[0] if len(a) == 1 else a)),
        ("raises", lambda *a: (_ for _ in ()).throw(Boom("map"))),
        ("none", lambda *a: None),
        ("string", lambda *a: "text"),
        ("reshape-bad", lambda *a: tf.reshape(
            tf.nest.flatten(a)[0], [7, -1, 3])),
        ("pair", lambda *a: (tf.nest.flatten(a)[0],
                             tf.nest.flatten(a)[-1])),
        ("add-mixed", lambda *a: tf.nest.flatten(a)[0]
         + tf.constant(1.5, tf.float64)),
        ("reduce", lambda *a: tf.reduce_sum(tf.nest.flatten(a)[0])),
        ("wrong-arity", lambda x, y, z, w: x),
    ]
    return rng.choice(choices)


def pred_fn(tf, rng):
    choices = [
        ("true", lambda *a: tf.constant(True)),
        ("first>1", lambda *a: tf.reduce_any(
            tf.cast(tf.nest.flatten(a)[0], tf.float32) > 1.0)),
        ("int", lambda *a: tf.constant(1)),
        ("vector", lambda *a: tf.constant([True, False])),
        ("python", lambda *a: True),
        ("raises", lambda *a: (_ for _ in ()).throw(Boom("filter"))),
    ]
    return rng.choice(choices)


def data_case(tf, np, rng):
    n = rng.choice([0, 1, 3, 5])
    src = rng.random()
    if src < 0.6:
        s = structure(tf, np, rng, lead=n)
        steps = [f"from_tensor_slices({describe(s)})"]
        ds = tf.data.Dataset.from_tensor_slices(s)
    elif src < 0.85:
        steps = [f"range({n})"]
        ds = tf.data.Dataset.range(n)
    else:
        s = structure(tf, np, rng)
        steps = [f"from_tensors({describe(s)})"]
        ds = tf.data.Dataset.from_tensors(s)
    for _ in range(rng.randint(1, 5)):
        op = rng.choice(["map", "map", "filter", "batch", "shuffle",
                         "repeat", "take", "skip", "enumerate", "cache",
                         "prefetch", "zip"])
        if op == "map":
            name, fn = map_fn(tf, rng)
            steps.append(f"map({name})")
            ds = ds.map(fn)
        elif op == "filter":
            name, fn = pred_fn(tf, rng)
            steps.append(f"filter({name})")
            ds = ds.filter(fn)
        elif op == "batch":
            k = rng.choice([-1, 0, 1, 2, 3])
            drop = rng.random() < 0.5
            steps.append(f"batch({k}, {drop})")
            ds = ds.batch(k, drop_remainder=drop)
        elif op == "shuffle":
            b = rng.choice([-2, 0, 1, 4])
            steps.append(f"shuffle({b})")
            ds = ds.shuffle(b, seed=rng.choice([None, 3]))
        elif op == "repeat":
            c = rng.choice([None, -1, 0, 2, "x"])
            steps.append(f"repeat({c!r})")
            ds = ds.repeat(c) if c is not None else ds.repeat()
        elif op in ("take", "skip"):
            # (skipping 10**12 elements of a repeated dataset is a long
            # loop in TF too: huge counts only for take)
            c = rng.choice([-1, 0, 2, 10 ** 12 if op == "take" else 7])
            steps.append(f"{op}({c})")
            ds = getattr(ds, op)(c)
        elif op == "zip":
            other = tf.data.Dataset.range(rng.choice([0, 2, 4]))
            steps.append("zip(range)")
            ds = tf.data.Dataset.zip((ds, other))
        else:
            steps.append(f"{op}()")
            ds = getattr(ds, op)()

    def run():
        out = []
        for i, elem in enumerate(ds.take(40)):
            out.append(elem)
            if i > 60:
                raise AssertionError("take(40) gave more than 40")
        list(ds.take(3).as_numpy_iterator())
        return out
    return " -> ".join(steps), run


# ---- Keras layers ---------------------------------------------------------

def keras_layer(tf, rng):
    L = tf.keras.layers
    bad = [0, -1, 2, 3, 5]
    choices = [
        lambda: ("Dense", L.Dense(rng.choice(bad + [4]),
                                  activation=rng.choice([None, "relu"]))),
        lambda: ("Conv2D", L.Conv2D(rng.choice(bad), rng.choice(
            [1, 2, 3, 0, (2, 9)]), strides=rng.choice([1, 2, 0]),
            padding=rng.choice(["valid", "same", "bogus"]))),
        lambda: ("MaxPooling2D", L.MaxPooling2D(rng.choice([1, 2, 3, 0]),
                                                padding=rng.choice(
                                                    ["valid", "same"]))),
        lambda: ("AveragePooling2D", L.AveragePooling2D(
            rng.choice([1, 2, 5]))),
        lambda: ("GlobalAveragePooling2D", L.GlobalAveragePooling2D()),
        lambda: ("Embedding", L.Embedding(rng.choice([0, 1, 5]),
                                          rng.choice([0, 2, 3]))),
        lambda: ("BatchNormalization", L.BatchNormalization(
            axis=rng.choice([-1, 0, 1, 3, 7]))),
        lambda: ("Dropout", L.Dropout(rng.choice([-0.5, 0.0, 0.5, 1.0,
                                                  1.5]))),
        lambda: ("Flatten", L.Flatten()),
        lambda: ("Reshape", L.Reshape(rng.choice([(-1,), (2, -1), (3,),
                                                  (-1, -1), (0, 2),
                                                  (4, 1, 1)]))),
        lambda: ("Softmax", L.Softmax(axis=rng.choice([-1, 0, 4]))),
        lambda: ("Activation", L.Activation(rng.choice(["relu", "tanh",
                                                        "nope"]))),
    ]
    return rng.choice(choices)()


def keras_case(tf, np, rng):
    name, layer = keras_layer(tf, rng)
    inputs = []
    for _ in range(rng.randint(1, 3)):
        dtype = rng.choice(["float32", "float32", "float64", "float16",
                            "int32", "bool"])
        shape = [rng.choice([0, 1, 2, 3, 4]) for _ in
                 range(rng.randint(0, 5))]
        inputs.append(make_tensor(tf, np, rng, dtype, shape))
    training = rng.choice([None, True, False])
    traced = rng.random() < 0.3
    desc = (f"{name} on {[describe(x) for x in inputs]} training={training}"
            f"{' in tf.function' if traced else ''}")

    def run():
        out = []
        call = (lambda x: layer(x, training=training)) if training \
            is not None else layer
        if traced:
            call = tf.function(call)
        for x in inputs:
            try:
                out.append(call(x))
            except ALLOWED_ERRORS:
                if x is inputs[-1]:
                    raise
        return out
    return desc, run


# ---- tf.cond / tf.while_loop ----------------------------------------------

def branch(tf, np, rng):
    choices = [
        ("f32[2]", lambda: tf.constant([1.0, 2.0])),
        ("f32[3]", lambda: tf.constant([1.0, 2.0, 3.0])),
        ("i32[2]", lambda: tf.constant([1, 2])),
        ("f32 scalar", lambda: tf.constant(1.0)),
        ("pair", lambda: (tf.constant(1.0), tf.constant(2))),
        ("dict", lambda: {"a": tf.constant(1.0)}),
        ("None", lambda: None),
        ("python int", lambda: 3),
        ("string", lambda: "s"),
        ("raises", lambda: (_ for _ in ()).throw(Boom("branch"))),
    ]
    return rng.choice(choices)


def control_case(tf, np, rng):
    traced = rng.random() < 0.5
    if rng.random() < 0.5:
        pred = rng.choice([("True", True), ("t(True)", tf.constant(True)),
                           ("t(False)", tf.constant(False)),
                           ("t([T,F])", tf.constant([True, False])),
                           ("t(1)", tf.constant(1)),
                           ("t(1.5)", tf.constant(1.5)), ("'x'", "x"),
                           ("None", None)])
        (tn, tfn), (fn_, ffn) = branch(tf, np, rng), branch(tf, np, rng)
        if rng.random() < 0.1:
            tfn = 5                              # not callable
        desc = f"cond({pred[0]}, {tn}, {fn_})"

        def body():
            return tf.cond(pred[1], tfn, ffn)
    else:
        nvars = rng.randint(0, 3)
        loop_vars = [make_tensor(tf, np, rng, rng.choice(
            ["int32", "float32", "float64", "bool"]), rand_shape(rng, 2))
            for _ in range(nvars)]
        if rng.random() < 0.2:
            loop_vars = tuple(loop_vars)
        if rng.random() < 0.1:
            loop_vars = rng.choice([None, 3, "v", {"a": tf.constant(1)}])
        conds = [("true", lambda *v: tf.constant(True)),
                 ("vector", lambda *v: tf.constant([True, True])),
                 ("int", lambda *v: tf.constant(1)),
                 ("python", lambda *v: True),
                 ("raises", lambda *v: (_ for _ in ()).throw(Boom("c")))]
        bodies = [("same", lambda *v: v),
                  ("plus1", lambda *v: tuple(x + 1 for x in v)),
                  ("drop", lambda *v: v[:-1]),
                  ("extra", lambda *v: tuple(v) + (tf.constant(0),)),
                  ("cast", lambda *v: tuple(tf.cast(x, tf.float64)
                                            for x in v)),
                  ("grow", lambda *v: tuple(tf.concat([tf.reshape(x, [-1]),
                                                       tf.reshape(x, [-1])],
                                                      0) for x in v)),
                  ("none", lambda *v: None),
                  ("python", lambda *v: tuple(1 for _ in v)),
                  ("raises", lambda *v: (_ for _ in ()).throw(Boom("b")))]
        cn, cfn = rng.choice(conds)
        bn, bfn = rng.choice(bodies)
        maxit = rng.choice([0, 1, 3, -1, tf.constant(2), "x"])
        desc = (f"while_loop({cn}, {bn}, {describe(loop_vars)}, "
                f"maximum_iterations={describe(maxit)})")

        def body():
            return tf.while_loop(cfn, bfn, loop_vars,
                                 maximum_iterations=maxit)
    if traced:
        desc += " in tf.function"
        run = tf.function(body, autograph=False)
    else:
        run = body
    return desc, run


# ---- the worker -----------------------------------------------------------

ALLOWED_ERRORS = ()


def allowed(tf):
    return (tf.errors.OpError, ValueError, TypeError, IndexError,
            NotImplementedError, Boom)


def make_case(tf, np, family, seed, i):
    rng = random.Random(f"{family}/{seed}/{i}")
    import api_fuzz_eager
    import api_fuzz_trace
    return {"data": data_case, "keras": keras_case,
            "control": control_case, "weak": api_fuzz_eager.weak_case,
            "fastpath": api_fuzz_eager.fastpath_case,
            "unknown_rank": api_fuzz_trace.unknown_rank_case,
            "extension": api_fuzz_trace.extension_case,
            "generator": api_fuzz_trace.generator_case}[family](tf, np,
                                                                rng)


def run_case(tf, np, family, seed, i):
    """(description, outcome); raises AssertionError for a problem."""
    try:
        desc, fn = make_case(tf, np, family, seed, i)
    except ALLOWED_ERRORS as e:
        if isinstance(e, tf.errors.InternalError):
            raise AssertionError(f"InternalError building the case: {e}")
        return f"(build) {type(e).__name__}", "build: " + type(e).__name__
    except OverflowError as e:
        # TF's own error for a Python int past a weak dtype (the "weak"
        # family's tf.constant(2**40)): its words, not an unchecked path.
        if "too large to convert" not in str(e):
            raise AssertionError(f"building the case: OverflowError: {e}")
        return f"(build) {type(e).__name__}", "build: " + type(e).__name__
    except Exception as e:
        raise AssertionError(f"building the case: {type(e).__name__} is "
                             f"not an allowed error: {str(e)[:300]}")
    try:
        fn()
        outcome = "ok"
    except ALLOWED_ERRORS as e:
        if isinstance(e, tf.errors.InternalError):
            raise AssertionError(f"{desc}: InternalError: {e}")
        if not str(e) and not isinstance(e, Boom):
            raise AssertionError(f"{desc}: {type(e).__name__} without a "
                                 f"message")
        outcome = "error: " + type(e).__name__
    except Exception as e:
        raise AssertionError(f"{desc}: {type(e).__name__} is not an "
                             f"allowed error: {str(e)[:300]}")
    return desc, outcome


def live(tf):
    gc.collect()
    return tf._C.live_counts()


def main(argv):
    global ALLOWED_ERRORS
    if "asan" not in os.environ.get("LD_PRELOAD", ""):
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import logging
    import numpy as np
    import tfmini as tf
    logging.disable(logging.WARNING)
    ALLOWED_ERRORS = allowed(tf)
    if argv[0] == "--show":
        print(make_case(tf, np, argv[1], int(argv[2]), int(argv[3]))[0])
        return
    family, seed, count, marks_path = argv[0], int(argv[1]), \
        int(argv[2]), argv[3]
    start = int(argv[4]) if len(argv) > 4 else 0
    marks = os.open(marks_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    for i in range(start, count):
        os.write(marks, f"S {i}\n".encode())
        try:
            desc, outcome = run_case(tf, np, family, seed, i)
            # Run it again: what the first run cached stays, anything
            # more the second run leaves is a leak. Fewer is not: what
            # the first run left for the collector (an error's frames,
            # say) may go during the second.
            before = live(tf)
            run_case(tf, np, family, seed, i)
            after = live(tf)
            if any(a > b for a, b in zip(after, before)):
                raise AssertionError(f"{desc}: live (tensors, buffers, "
                                     f"bytes) {before} -> {after}")
        except AssertionError as e:
            msg = str(e).replace("\n", " ")[:500]
            os.write(marks, f"F {i} {msg}\n".encode())
            outcome = "BUG"
        os.write(marks, f"D {i} {outcome}\n".encode())


def drive(family, seed, count, case_timeout=60, env=None):
    """Run cases [0, count) of family in worker processes, restarting
    after a crash or a case past case_timeout seconds. Returns
    (problems, outcome counts)."""
    from fuzz_worker import count_outcomes, run_worker
    env = dict(env or os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    problems, outcomes, start = [], {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        marks = os.path.join(tmp, "marks")
        while start < count:
            rc, err, lines = run_worker(
                [os.path.abspath(__file__), family, str(seed), str(count),
                 marks, str(start)], tmp, case_timeout, env, ROOT)
            problems += [f"{family} seed {seed} case {line[2:]}"
                         for line in lines if line.startswith("F ")]
            count_outcomes(lines, outcomes)
            if rc == 0:
                break
            started = [x for x in lines if x.startswith("S ")]
            if not started:
                problems.append(f"{family}: worker failed to start (rc "
                                f"{rc}): {err[-2000:]}")
                break
            i = int(started[-1].split()[1])
            if not any(x.startswith(f"D {i} ") for x in lines):
                problems.append(
                    f"{'hang' if rc == 'timeout' else 'crash'} (rc {rc}) "
                    f"in {family} seed {seed} case {i} (python3 "
                    f"tests/api_fuzz.py --show {family} {seed} {i})\n"
                    f"{err[-3000:]}")
            start = i + 1
    return problems, outcomes


if __name__ == "__main__":
    main(sys.argv[1:])
