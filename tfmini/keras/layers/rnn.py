"""Recurrent layers: the cells (SimpleRNNCell, LSTMCell, GRUCell), RNN(cell)
that runs a cell over time, SimpleRNN, LSTM, GRU and Bidirectional.

Keras 3's math, weights and defaults: a cell holds `kernel` (input_dim,
G), `recurrent_kernel` (units, G) and `bias`, G = units times the number
of gates (LSTM: i, f, c, o; GRU: z, r, h). The layer names its cell
'lstm_cell' / 'gru_cell' / 'simple_rnn_cell', so weight paths read
'lstm/lstm_cell/kernel'.

How the time loop runs: the input side of every step does not depend on
the state, so it is one GEMM over all steps before the loop (x @ kernel
+ input bias, (batch, time, G)); each step then does one (batch, units)
@ recurrent_kernel and the gate math, which is elementwise (the graph
optimizer fuses it; the LSTM's, with the default activations, is one
op, LSTMGates). A traced LSTM under a tape, with no mask and no
recurrent dropout, runs every step in one op each way, forward saving
the gates, with a gradient of its own (rnn_fused.py), instead of a
While loop and its generic gradient. Eagerly the loop is a Python loop; traced (in a
tf.function or fit) it is one tf.while_loop writing a TensorArray, so the
graph has one While node whatever the sequence length.

Masks (batch, time): a masked step keeps the previous state and repeats
the previous output (zeros with zero_output_for_mask)."""
import tfmini as tf

from ...ops.rnn_ops import lstm_gates
from .. import activations, constraints, initializers, regularizers
from .base import Layer, _ctx, _path_scope
from .rnn_fused import lstm_sequence, recording


def _dropout_mask(like, rate, seed):
    """Ones with a fraction `rate` zeroed and the rest scaled by
    1 / (1 - rate): one draw per sequence, reused at every step."""
    return tf.nn.dropout(tf.ones_like(like), rate, seed=seed)


def _zeros(batch, size, dtype):
    """zeros (batch, size). batch is an int or a tensor whose first dim
    is the batch (tf.zeros takes no traced shape, so an unknown batch
    size comes in by broadcasting)."""
    if isinstance(batch, tf.Tensor):
        if batch.shape[0] is not None:
            batch = int(batch.shape[0])
        else:
            col = tf.zeros_like(tf.reshape(batch, [-1, 1])[:, :1]) if \
                len(batch.shape) == 1 else batch[:, :1]
            col = tf.cast(tf.zeros_like(col), dtype)
            return col + tf.zeros([int(size)], dtype=dtype)
    return tf.zeros([int(batch), int(size)], dtype=dtype)


def _serialize(obj):
    if obj is None:
        return None
    return {"class_name": type(obj).__name__, "config": obj.get_config()}


def _deserialize(config):
    from .. import layers as _layers
    if isinstance(config, Layer):
        return config
    cls = getattr(_layers, config["class_name"], None)
    if cls is None:
        raise ValueError(f"Unknown layer: {config['class_name']!r}")
    return cls.from_config(dict(config["config"]))


class _Cell(Layer):
    """What the three built-in cells share: arguments, dropout masks, the
    input projection over all steps and the single-step call."""

    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 seed=None, **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(**kwargs)
        units = int(units)
        if units <= 0:
            raise ValueError(f"Received an invalid value for argument "
                             f"`units`, expected a positive integer, got "
                             f"{units}.")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        self.state_size = units
        self.output_size = units

    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_init(self):
        return self.bias_initializer

    def build(self, input_shape):
        dim = tf.TensorShape(input_shape)[-1]
        if dim is None:
            raise ValueError(f"{type(self).__name__}: the last dimension "
                             f"of the inputs must be defined, got "
                             f"{input_shape}")
        g = self._gates * self.units
        self.kernel = self.add_weight(
            "kernel", (int(dim), g), initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, g),
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", self._bias_shape(), initializer=self._bias_init(),
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint)
        self.built = True

    # ---- pieces the RNN loop uses ------------------------------------
    def _masks(self, x0, h0, training):
        """(input dropout mask, recurrent dropout mask), None when off."""
        dp = rdp = None
        if training and 0.0 < self.dropout < 1.0:
            dp = _dropout_mask(x0, self.dropout, self.seed)
        if training and 0.0 < self.recurrent_dropout < 1.0:
            rdp = _dropout_mask(h0, self.recurrent_dropout, self.seed)
        return dp, rdp

    def _input_bias(self):
        return self.bias

    def _project(self, x):
        """x @ kernel + input bias over the last axis (one GEMM for a
        whole (batch, time, dim) sequence)."""
        rank = len(x.shape)
        if rank == 2:
            y = tf.matmul(x, self.kernel)
        else:
            y = tf.tensordot(x, self.kernel, [[rank - 1], [0]])
        b = self._input_bias()
        if b is not None:
            y = y + b
        return y

    def _weights_for_step(self):
        """The weights a step reads, read once outside the loop."""
        return (tf.convert_to_tensor(self.recurrent_kernel),)

    def get_initial_state(self, batch_size=None):
        sizes = self.state_size if isinstance(self.state_size, list) \
            else [self.state_size]
        return [_zeros(batch_size, d, self._keras_dtype) for d in sizes]

    def call(self, inputs, states, training=False):
        """One step: (output, new states) as Keras' cells return them."""
        nested = isinstance(states, (list, tuple))
        states = list(states) if nested else [states]
        dp, rdp = self._masks(inputs, states[0], training)
        if dp is not None:
            inputs = inputs * dp
        out, new = self._step(self._project(inputs), states, rdp,
                              self._weights_for_step())
        if not nested and len(new) == 1:
            return out, new[0]
        return out, new

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            activation=activations.serialize(self.activation),
            use_bias=self.use_bias,
            kernel_initializer=initializers.serialize(
                self.kernel_initializer),
            recurrent_initializer=initializers.serialize(
                self.recurrent_initializer),
            bias_initializer=initializers.serialize(self.bias_initializer),
            kernel_regularizer=self.kernel_regularizer,
            recurrent_regularizer=self.recurrent_regularizer,
            bias_regularizer=self.bias_regularizer,
            kernel_constraint=self.kernel_constraint,
            recurrent_constraint=self.recurrent_constraint,
            bias_constraint=self.bias_constraint,
            dropout=self.dropout, recurrent_dropout=self.recurrent_dropout,
            seed=self.seed)
        return config


class SimpleRNNCell(_Cell):
    """h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)."""

    def _step(self, xp, states, rdp, weights):
        (r,) = weights
        h = states[0]
        if rdp is not None:
            h = h * rdp
        h = self.activation(xp + tf.matmul(h, r))
        return h, [h]


class LSTMCell(_Cell):
    """z = x @ kernel + h_prev @ recurrent_kernel + bias, split i, f, c, o;
    c = sig(f) * c_prev + sig(i) * tanh(c~); h = sig(o) * tanh(c)."""

    _gates = 4

    def __init__(self, units, activation="tanh",
                 recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.state_size = [self.units, self.units]

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        init, u = self.bias_initializer, self.units

        def forget_one(shape, dtype=None, **kwargs):
            return tf.concat([init((u,), dtype=dtype),
                              tf.ones((u,), dtype=dtype),
                              init((2 * u,), dtype=dtype)], 0)
        return forget_one

    def _fused(self):
        """Whether the gate math can be the fused LSTMGates op: Keras'
        default activations, in float32 or float64."""
        return (self.activation is activations.tanh and
                self.recurrent_activation is activations.sigmoid and
                self._keras_dtype in (tf.float32, tf.float64))

    def _step(self, xp, states, rdp, weights):
        (r,) = weights
        h, c = states[0], states[1]
        if rdp is not None:
            h = h * rdp
        z = xp + tf.matmul(h, r)
        if self._fused():
            h, c, _ = lstm_gates(z, c)
            return h, [h, c]
        ra, act = self.recurrent_activation, self.activation
        # One Split rather than four slices: its gradient is one concat
        # of the gate gradients, where slices' gradients are four
        # z-sized zero-padded tensors added up.
        zi, zf, zc, zo = tf.split(z, 4, axis=1)
        i = ra(zi)
        f = ra(zf)
        c = f * c + i * act(zc)
        o = ra(zo)
        h = o * act(c)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(recurrent_activation=activations.serialize(
            self.recurrent_activation), unit_forget_bias=self.unit_forget_bias)
        return config


class GRUCell(_Cell):
    """z, r = sig(x W + h U + b) split; reset_after (Keras' default, the
    cuDNN form): hh = tanh(x W_h + b_xh + r * (h U_h + b_hh)), bias (2, 3u);
    else hh = tanh(x W_h + b_h + (r * h) U_h), bias (3u,).
    h = z * h_prev + (1 - z) * hh."""

    _gates = 3

    def __init__(self, units, activation="tanh",
                 recurrent_activation="sigmoid", use_bias=True,
                 reset_after=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        g = 3 * self.units
        return (2, g) if self.reset_after else (g,)

    def _input_bias(self):
        if self.bias is None or not self.reset_after:
            return self.bias
        return self.bias[0]

    def _weights_for_step(self):
        r = tf.convert_to_tensor(self.recurrent_kernel)
        rb = self.bias[1] if (self.bias is not None and
                              self.reset_after) else None
        return (r, rb)

    def _step(self, xp, states, rdp, weights):
        r_kernel, rb = weights
        h_prev = states[0]
        h = h_prev if rdp is None else h_prev * rdp
        u = self.units
        ra, act = self.recurrent_activation, self.activation
        if self.reset_after:
            inner = tf.matmul(h, r_kernel)
            if rb is not None:
                inner = inner + rb
            # Splits, not slices (see LSTMCell._step).
            xz, xr, xh = tf.split(xp, 3, axis=1)
            iz, ir, ih = tf.split(inner, 3, axis=1)
            z = ra(xz + iz)
            r = ra(xr + ir)
            hh = act(xh + r * ih)
        else:
            inner = tf.matmul(h, r_kernel[:, :2 * u])
            z = ra(xp[:, :u] + inner[:, :u])
            r = ra(xp[:, u:2 * u] + inner[:, u:])
            hh = act(xp[:, 2 * u:] + tf.matmul(r * h, r_kernel[:, 2 * u:]))
        h = z * h_prev + (1.0 - z) * hh
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(recurrent_activation=activations.serialize(
            self.recurrent_activation), reset_after=self.reset_after)
        return config


class RNN(Layer):
    """Runs a cell over the time axis of (batch, time, features)."""

    def __init__(self, cell, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False,
                 zero_output_for_mask=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            raise NotImplementedError("tfmini's RNN takes one cell "
                                      "(StackedRNNCells is not there yet)")
        if isinstance(cell, dict):
            cell = _deserialize(cell)
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise ValueError(f"Argument `cell` should have a `call` method "
                             f"and a `state_size` attribute. Received: "
                             f"cell={cell}")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.supports_masking = True
        size = cell.state_size
        self.state_size = [size] if isinstance(size, int) else list(size)
        self._keras_states = None

    @property
    def states(self):
        return self._keras_states

    def build(self, sequences_shape, initial_state_shape=None):
        shape = tuple(tf.TensorShape(sequences_shape))
        if len(shape) != 3:
            raise ValueError(f"Input 0 of layer {self.name!r} is "
                             f"incompatible with the layer: expected ndim=3, "
                             f"found ndim={len(shape)}. Full shape received: "
                             f"{shape}")
        if isinstance(self.cell, Layer) and not self.cell.built:
            with _path_scope(self.cell.name):
                self.cell.build((shape[0],) + shape[2:])
                self.cell.built = True
        if self.stateful:
            if shape[0] is None or _ctx.batch_unknown:
                raise ValueError(f"When using `stateful=True` in a RNN, the "
                                 f"batch size must be static. Found dynamic "
                                 f"batch size: sequence.shape={shape}")
            self._keras_states = [
                tf.Variable(s, trainable=False, name="rnn_state")
                for s in self._zero_state(shape[0])]
        self.built = True

    def _gates_width(self):
        cell = self.cell
        return getattr(cell, "_gates", 1) * getattr(cell, "units", 0)

    def _zero_state(self, batch):
        return [_zeros(batch, d, self._keras_dtype) for d in self.state_size]

    def reset_state(self):
        if self._keras_states is None:
            raise AttributeError("Layer must be stateful.")
        for v in self._keras_states:
            v.assign(tf.zeros_like(v), read_value=False)

    reset_states = reset_state

    def get_initial_state(self, batch_size):
        return self._zero_state(batch_size)

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(self.state_size)
        return out

    # ---- the loop -----------------------------------------------------
    def _stepper(self, training):
        """(project(sequences), step(x_t, states) -> (out, states)) for
        the cell: the fused pieces of the built-in cells, else calls of
        the cell itself."""
        cell = self.cell
        if isinstance(cell, _Cell):
            weights = cell._weights_for_step()
            rdp_box = [None]

            def step(x_t, states):
                return cell._step(x_t, states, rdp_box[0], weights)
            return cell._project, step, rdp_box
        def generic(x_t, states):
            out, new = cell(x_t, list(states), training=training)
            if not isinstance(new, (list, tuple)):
                new = [new]
            return out, list(new)
        return None, generic, [None]

    def call(self, sequences, initial_state=None, mask=None, training=None):
        if initial_state is None:
            if self.stateful:
                states = [tf.convert_to_tensor(v) for v in self._keras_states]
            else:
                states = self._zero_state(sequences[:, 0])
        else:
            states = list(initial_state) if isinstance(
                initial_state, (list, tuple)) else [initial_state]
            if len(states) != len(self.state_size):
                raise ValueError(f"Layer {self.name!r} expects "
                                 f"{len(self.state_size)} initial state(s), "
                                 f"got {len(states)}")
            states = [tf.cast(tf.convert_to_tensor(s), self._keras_dtype)
                      for s in states]
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        project, step, rdp_box = self._stepper(training)
        x = sequences
        if isinstance(self.cell, _Cell):
            dp, rdp_box[0] = self.cell._masks(x[:, 0, :], states[0],
                                              training)
            if dp is not None:
                x = x * tf.expand_dims(dp, 1)
        # The LSTM loop with its own gradient (rnn_fused.py) where
        # nothing per step needs more than the fused cell.
        fused = None
        if isinstance(self.cell, LSTMCell) and self.cell._fused() and \
                mask is None and rdp_box[0] is None:
            fused = self.cell._weights_for_step()[0]
        last, outputs, states = self._loop(x, states, mask, step, fused,
                                           project)
        if self.stateful:
            for v, s in zip(self._keras_states, states):
                v.assign(s, read_value=False)
        out = outputs if self.return_sequences else last
        if self.return_state:
            return [out] + list(states)
        return out

    def _loop(self, x, states, mask, step, fused=None, project=None):
        """Run step over time: (last output, outputs (batch, time, out)
        or None, final states). fused: the recurrent kernel, when the
        cell is an LSTM that lstm_sequence can run; project: the cell's
        input projection, applied here to x."""
        time_axis = 1
        # The loop reads time-major steps. The projection widens the
        # features (LSTM: to 4 * units), so reversing and transposing
        # come before it unless the inputs are the wider ones; either
        # way it is one GEMM over all steps.
        wide = project is not None and x.shape[-1] is not None and \
            x.shape[-1] > self._gates_width()
        if wide:
            x, project = project(x), None
        if self.go_backwards:
            x = tf.reverse(x, [time_axis])
            if mask is not None:
                mask = tf.reverse(mask, [time_axis])
        xs = tf.transpose(x, [1, 0] + list(range(2, len(x.shape))))
        if project is not None:
            xs = project(xs)
        ms = None
        if mask is not None:
            ms = tf.expand_dims(tf.transpose(tf.cast(mask, tf.bool), [1, 0]),
                                -1)
        steps = x.shape[1]
        zero_out = self.zero_output_for_mask

        def masked(t_mask, out, new, prev_out, old):
            new = [tf.where(t_mask, n, o) for n, o in zip(new, old)]
            keep = tf.zeros_like(out) if zero_out else prev_out
            return tf.where(t_mask, out, keep), new

        if tf.executing_eagerly() or (self.unroll and steps is not None):
            outs = []
            prev = None
            for t in range(int(steps)):
                out, new = step(xs[t], states)
                if ms is not None:
                    if prev is None:
                        prev = tf.zeros_like(out)
                    out, new = masked(ms[t], out, new, prev, states)
                    prev = out
                states = list(new)
                outs.append(out)
            if not outs:
                raise ValueError(f"Layer {self.name!r}: the sequence has no "
                                 f"time steps")
            seq = tf.stack(outs, axis=1) if self.return_sequences else None
            return outs[-1], seq, states
        if fused is not None and xs.shape[0] is not None and \
                recording([xs, fused] + list(states)):
            seq, states = lstm_sequence(xs, states[0], states[1], fused,
                                     self.return_sequences)
            if seq is not None:
                seq = tf.transpose(seq, [1, 0, 2])
            return states[0], seq, states
        return self._while(xs, ms, states, step, masked)

    def _while(self, xs, ms, states, step, masked):
        if xs.shape[0] is None:
            # tfmini's TensorArray needs a static size when traced.
            raise NotImplementedError(
                f"Layer {self.name!r}: tfmini traces a recurrent layer only "
                f"for a known number of time steps; got inputs of shape "
                f"{tuple(xs.shape)[1:2] + (None,) + tuple(xs.shape)[2:]}")
        n = int(xs.shape[0])
        # The output's shape from one step run outside the graph loop
        # would cost a step; the cell's output_size gives it instead.
        out_size = getattr(self.cell, "output_size", None) or \
            self.state_size[0]
        prev0 = _zeros(xs[0], out_size, self._keras_dtype)
        seqs = self.return_sequences
        k = len(states)

        # The previous output is a loop variable only where masking
        # repeats it; a built-in cell's output is its first state.
        carry = ms is not None or not isinstance(self.cell, _Cell)

        def body(i, *rest):
            prev = None
            if carry:
                prev, rest = rest[0], rest[1:]
            old = list(rest[:k])
            out, new = step(tf.gather(xs, i), old)
            if ms is not None:
                out, new = masked(tf.gather(ms, i), out, new, prev, old)
            acc = ()
            if seqs and known:
                acc = (rest[k].write(i, out),)
            elif seqs:
                acc = (tf.tensor_scatter_nd_update(
                    rest[k], tf.reshape(i, [1, 1]), tf.expand_dims(out, 0)),)
            return (i + 1,) + ((out,) if carry else ()) + tuple(new) + acc

        # tfmini's TensorArray wants a fully known element shape in a
        # graph loop; with an unknown batch size the outputs go into a
        # (time, batch, units) tensor, one row scattered per step.
        known = prev0.shape[0] is not None
        acc = []
        if seqs:
            acc = [tf.TensorArray(self._keras_dtype, size=n) if known else
                   tf.zeros([n, 1, int(out_size)], self._keras_dtype) +
                   tf.expand_dims(prev0, 0)]
        # maximum_iterations (as Keras passes it) lets a differentiated
        # loop preallocate what it keeps per step (WhileRecorder).
        loop = tf.while_loop(lambda i, *_: i < n, body,
                             [tf.constant(0)] + ([prev0] if carry else []) +
                             list(states) + acc, maximum_iterations=n)
        j = 2 if carry else 1
        states = list(loop[j:j + k])
        last = loop[1] if carry else states[0]
        seq = None
        if seqs:
            seq = loop[j + k].stack() if known else loop[j + k]
            seq = tf.transpose(seq, [1, 0, 2])
        return last, seq, states

    def compute_output_shape(self, sequences_shape, initial_state_shape=None):
        shape = tuple(sequences_shape)
        out_size = getattr(self.cell, "output_size", None) or \
            self.state_size[0]
        out = (shape[0], shape[1], out_size) if self.return_sequences else \
            (shape[0], out_size)
        if self.return_state:
            return [out] + [(shape[0], s) for s in self.state_size]
        return out

    def get_config(self):
        config = super().get_config()
        config.update(return_sequences=self.return_sequences,
                      return_state=self.return_state,
                      go_backwards=self.go_backwards, stateful=self.stateful,
                      unroll=self.unroll,
                      zero_output_for_mask=self.zero_output_for_mask)
        config["cell"] = _serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["cell"] = _deserialize(config["cell"])
        return cls(**config)


_RNN_KEYS = ("return_sequences", "return_state", "go_backwards", "stateful",
             "unroll", "zero_output_for_mask")


class _CellLayer(RNN):
    """SimpleRNN / LSTM / GRU: RNN over a cell made from the layer's own
    arguments; the config is the cell's arguments and the loop's."""

    _cell_class = None
    _cell_name = None

    def __init__(self, units, **kwargs):
        loop = {k: kwargs.pop(k) for k in _RNN_KEYS if k in kwargs}
        base = {k: kwargs.pop(k) for k in
                ("name", "trainable", "dtype", "input_shape",
                 "batch_input_shape", "batch_size", "input_dim",
                 "activity_regularizer", "weights") if k in kwargs}
        kwargs.pop("use_cudnn", None)
        cell = self._cell_class(units, name=self._cell_name,
                                dtype=base.get("dtype"),
                                trainable=base.get("trainable", True),
                                **kwargs)
        super().__init__(cell, **loop, **base)

    def __getattr__(self, name):
        # units, activation, dropout, ...: the cell's.
        cell = self.__dict__.get("cell")
        if cell is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(cell, name)

    def get_config(self):
        config = RNN.get_config(self)
        del config["cell"]
        cell = self.cell.get_config()
        for k in ("name", "trainable", "dtype", "batch_input_shape"):
            cell.pop(k, None)
        config.update(cell)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class SimpleRNN(_CellLayer):
    _cell_class = SimpleRNNCell
    _cell_name = "simple_rnn_cell"


class LSTM(_CellLayer):
    _cell_class = LSTMCell
    _cell_name = "lstm_cell"


class GRU(_CellLayer):
    _cell_class = GRUCell
    _cell_name = "gru_cell"


class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy of it backwards, and
    merges the two (concat, sum, ave, mul or None: both)."""

    def __init__(self, layer, merge_mode="concat", weights=None,
                 backward_layer=None, **kwargs):
        if isinstance(layer, dict):
            layer = _deserialize(layer)
        if isinstance(backward_layer, dict):
            backward_layer = _deserialize(backward_layer)
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `Bidirectional` layer with "
                             f"a `keras.layers.Layer` instance. Received: "
                             f"{layer}")
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. "
                             f"Merge mode should be one of "
                             f'{{"sum", "mul", "ave", "concat", None}}')
        super().__init__(**kwargs)
        config = layer.get_config()
        config["name"] = "forward_" + _strip(layer.name, "forward_")
        self.forward_layer = type(layer).from_config(config)
        if backward_layer is None:
            config = layer.get_config()
            config["go_backwards"] = not config.get("go_backwards", False)
            config["name"] = "backward_" + _strip(layer.name, "backward_")
            backward_layer = type(layer).from_config(config)
        self.backward_layer = backward_layer
        if self.forward_layer.go_backwards == backward_layer.go_backwards:
            raise ValueError("Forward layer and backward layer should have "
                             "different `go_backwards` value.")
        for a in ("stateful", "return_sequences", "return_state"):
            if getattr(self.forward_layer, a) != getattr(backward_layer, a):
                raise ValueError(f"Forward layer and backward layer are "
                                 f"expected to have the same value for "
                                 f"attribute {a!r}")
        for sub in (self.forward_layer, self.backward_layer):
            sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        self.stateful = layer.stateful
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True
        if weights:
            self._keras_initial_weights = weights

    def build(self, sequences_shape, initial_state_shape=None):
        for sub in (self.forward_layer, self.backward_layer):
            if not sub.built:
                with _path_scope(sub.name):
                    sub.build(sequences_shape)
                    sub.built = True
        self.built = True

    def call(self, sequences, initial_state=None, mask=None, training=None):
        fw_state = bw_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fw_state, bw_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(sequences, initial_state=fw_state, mask=mask,
                               training=training)
        y_rev = self.backward_layer(sequences, initial_state=bw_state,
                                    mask=mask, training=training)
        states = ()
        if self.return_state:
            states = tuple(y[1:]) + tuple(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = tf.reverse(y_rev, [1])
        mode = self.merge_mode
        if mode == "concat":
            out = tf.concat([y, y_rev], axis=-1)
        elif mode == "sum":
            out = y + y_rev
        elif mode == "ave":
            out = (y + y_rev) / 2.0
        elif mode == "mul":
            out = y * y_rev
        else:
            out = [y, y_rev]
        if self.return_state:
            return (out if mode is None else [out]) + list(states)
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        out = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            n = len(self.forward_layer.state_size) * 2
            return out + [None] * n
        return out if self.merge_mode is None else out[0]

    def reset_state(self):
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        self.forward_layer.reset_state()
        self.backward_layer.reset_state()

    reset_states = reset_state

    def get_config(self):
        config = super().get_config()
        config.update(merge_mode=self.merge_mode,
                      layer=_serialize(self.forward_layer),
                      backward_layer=_serialize(self.backward_layer))
        return config


def _strip(name, prefix):
    return name[len(prefix):] if name.startswith(prefix) else name
