import numpy as np, tensorflow as tf, keras
CASES = [  # name, x shape, filter shape, strides, padding, dilations
 ("same_s1_m1", (2,6,5,3), (3,3,3,1), (1,1), "SAME", (1,1)),
 ("valid_s2_m2", (1,7,8,4), (3,3,4,2), (2,2), "VALID", (1,1)),
 ("same_s21_m3", (2,5,6,2), (2,3,2,3), (2,1), "SAME", (1,1)),
 ("same_d2_m1", (1,8,7,3), (3,3,3,1), (1,1), "SAME", (2,2)),
 ("valid_d12_m2", (1,6,9,2), (2,3,2,2), (1,1), "VALID", (1,2)),
 ("explicit_m2", (1,5,6,2), (2,2,2,2), (1,1), [[0,0],[1,0],[2,1],[0,0]], (1,1)),
]
rng = np.random.default_rng(17)
out = {}
for name, xs, fs, s, p, d in CASES:
    x = rng.standard_normal(xs).astype("float32"); f = rng.standard_normal(fs).astype("float32")
    xt, ft = tf.constant(x), tf.constant(f)
    with tf.GradientTape() as t:
        t.watch([xt, ft])
        y = tf.nn.depthwise_conv2d(xt, ft, [1,*s,1], p, dilations=d)
    dy = rng.standard_normal(y.shape).astype("float32")
    dx, df = t.gradient(y, [xt, ft], output_gradients=tf.constant(dy))
    for k, v in dict(x=x, f=f, y=y.numpy(), dy=dy, dx=dx.numpy(), df=df.numpy()).items():
        out[f"{name}/{k}"] = v
# keras layers on fixed weights
x = rng.standard_normal((2,7,7,3)).astype("float32")
l = keras.layers.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2, activation="relu")
l.build((None,7,7,3))
k = rng.standard_normal((3,3,3,2)).astype("float32"); b = rng.standard_normal((6,)).astype("float32")
l.set_weights([k, b])
out["keras_dw/x"] = x; out["keras_dw/kernel"] = k; out["keras_dw/bias"] = b; out["keras_dw/y"] = np.asarray(l(x))
l = keras.layers.SeparableConv2D(4, (3,2), padding="valid", dilation_rate=(2,1), depth_multiplier=2)
l.build((None,7,7,3))
dk = rng.standard_normal((3,2,3,2)).astype("float32"); pk = rng.standard_normal((1,1,6,4)).astype("float32"); b = rng.standard_normal((4,)).astype("float32")
l.set_weights([dk, pk, b])
out["keras_sep/x"] = x; out["keras_sep/depthwise_kernel"] = dk; out["keras_sep/pointwise_kernel"] = pk; out["keras_sep/bias"] = b; out["keras_sep/y"] = np.asarray(l(x))
np.savez_compressed("/work/dwconv/tests/data/depthwise_tf_2_21.npz", **out)
print(len(out), sum(v.nbytes for v in out.values()))
