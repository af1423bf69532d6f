"""keras.utils.Progbar: the per-epoch progress display of fit.

On a terminal the bar redraws in place with '\\r' (at most every
`interval` seconds):

    12/45 [=======>......................] - ETA: 0s - loss: 0.61

and ends as `45/45 [==============================] - 1s 5ms/step - ...`.
When the output is not a terminal (CI logs, a notebook cell, a file),
carriage returns would pile up, so it prints plain lines instead: one
at the end (`45/45 - 1s - 5ms/step - loss: ...`) and, for long epochs,
one at most every `plain_interval` seconds on the way.
"""
import sys
import time


def _is_tty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _format_value(v):
    v = float(v)
    return f"{v:.4f}" if abs(v) > 1e-3 or v == 0 else f"{v:.4e}"


def _format_eta(eta):
    eta = int(eta)
    if eta > 3600:
        return f"{eta // 3600}:{(eta % 3600) // 60:02d}:{eta % 60:02d}"
    if eta > 60:
        return f"{eta // 60}:{eta % 60:02d}"
    return f"{eta}s"


def _format_per_unit(seconds, unit):
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


class Progbar:
    """Displays progress towards `target` steps (None: unknown).

    update(current, values) takes (name, value) pairs; names in
    stateful_metrics are shown as given (fit's metrics are already
    running means), others are averaged over the steps seen.
    """

    def __init__(self, target, width=30, verbose=1, interval=0.05,
                 stateful_metrics=None, unit_name="step", stream=None,
                 plain_interval=10.0):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.plain_interval = plain_interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._stream = stream
        self._dynamic = _is_tty(self.stream)
        self._values = {}
        self._seen_so_far = 0
        self._start = time.time()
        self._last_update = 0.0
        self._last_plain = self._start
        self._prev_width = 0
        self._done = False

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stdout

    def _accumulate(self, current, values):
        for name, value in values or ():
            if name in self.stateful_metrics:
                self._values[name] = value
            else:
                steps = max(1, current - self._seen_so_far)
                prev = self._values.get(name)
                total, count = prev if isinstance(prev, tuple) else (0.0, 0)
                self._values[name] = (total + float(value) * steps,
                                      count + steps)
        self._seen_so_far = current

    def _metric_text(self):
        parts = []
        for name, value in self._values.items():
            if isinstance(value, tuple):
                value = value[0] / max(1, value[1])
            try:
                parts.append(f" - {name}: {_format_value(value)}")
            except (TypeError, ValueError):
                parts.append(f" - {name}: {value}")
        return "".join(parts)

    def _count_text(self, current):
        if self.target is None:
            return f"{current}/Unknown"
        digits = len(str(self.target))
        return f"{current:>{digits}}/{self.target}"

    def update(self, current, values=None, finalize=None):
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._accumulate(current, values)
        if self.verbose == 0 or self._done:
            return
        now = time.time()
        elapsed = now - self._start
        per_unit = elapsed / current if current else 0.0
        out = self.stream
        if self.verbose == 1 and self._dynamic:
            if not finalize and now - self._last_update < self.interval:
                return
            self._last_update = now
            text = self._count_text(current)
            if self.target is not None:
                done = int(self.width * min(current, self.target) /
                           max(1, self.target))
                bar = "=" * done
                if current < self.target:
                    bar = bar[:-1] + ">" if done else ">"
                text += " [" + bar.ljust(self.width, ".") + "]"
            if finalize:
                text += (f" - {elapsed:.0f}s "
                         f"{_format_per_unit(per_unit, self.unit_name)}")
            elif self.target is not None:
                eta = per_unit * (self.target - current)
                text += f" - ETA: {_format_eta(eta)}"
            text += self._metric_text()
            pad = max(0, self._prev_width - len(text))
            self._prev_width = len(text)
            out.write("\r" + text + " " * pad + ("\n" if finalize else ""))
            out.flush()
        else:
            # Plain lines: at the end (and every plain_interval seconds
            # on long epochs when verbose=1).
            if not finalize and (self.verbose != 1 or
                                 now - self._last_plain < self.plain_interval):
                return
            self._last_plain = now
            text = self._count_text(current)
            text += (f" - {elapsed:.0f}s - "
                     f"{_format_per_unit(per_unit, self.unit_name)}")
            text += self._metric_text()
            out.write(text + "\n")
            out.flush()
        if finalize:
            self._done = True

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)
