"""keras.utils.Progbar: the per-epoch progress display of fit, as
Keras 3 prints it.

Live display (a terminal, or a Jupyter kernel's stdout, whose frontend
applies carriage returns as a terminal does): the line is redrawn in
place with '\\r', at most every `interval` seconds, with ANSI bold and
colours as Keras 3 uses them (shown here without):

    12/45 ━━━━━━━━━━━━━━━━━━━━ 0s 5ms/step - loss: 0.6100

the count, a 20-cell bar whose done part is green, then the ETA (the
elapsed time once finished) and the time per step, which leaves out the
first step (it includes tracing). Other streams (CI logs, files, pipes)
would pile the redraws up, so they get one plain line per epoch, the
same line as verbose=2:

    45/45 - 1s - 5ms/step - loss: 0.6100

and, for long epochs at verbose=1, one such line at most every
`plain_interval` seconds on the way.
"""
import sys
import time

_BOLD, _GREEN, _WHITE, _RESET = "\x1b[1m", "\x1b[32m", "\x1b[37m", "\x1b[0m"
_BAR = "\u2501"


def _is_live(stream):
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        pass
    # ipykernel's OutStream says it is no TTY, but Jupyter renders '\r'
    # in place (Keras 3 draws its live bar there too).
    return type(stream).__module__.startswith("ipykernel") and \
        "ipykernel" in sys.modules


def _format_value(v):
    v = float(v)
    return f"{v:.4f}" if abs(v) > 1e-3 else f"{v:.4e}"


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
    verbose: 0 silent, 1 the live bar (plain lines when not live),
    2 one line when finished.
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05,
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
        self._dynamic = _is_live(self.stream)
        self._values = {}
        self._seen_so_far = 0
        self._start = time.time()
        self._after_first = None
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
            return f"{current:7d}/Unknown"
        digits = len(str(self.target))
        return f"{current:>{digits}}/{self.target}"

    def _per_unit(self, current, now):
        # The first step includes tracing: once there are others, the
        # time per step leaves it out (as Keras 3 does).
        if not current:
            return 0.0
        if self._after_first is not None and current > 1:
            per_unit = (now - self._after_first) / (current - 1)
        else:
            per_unit = (now - self._start) / current
        if current == 1 and self._after_first is None:
            self._after_first = now
        return per_unit

    def _live_line(self, current, now, per_unit, finalize):
        """The bar's text and its printed width (without the escapes)."""
        count = self._count_text(current)
        text, width = f"{_BOLD}{count}{_RESET}", len(count)
        if self.target is not None and self.target > 0:
            done = int(self.width * min(current, self.target) / self.target)
            text += " "
            if done:
                text += f"{_GREEN}{_BAR * done}{_RESET}"
            text += f"{_WHITE}{_BAR * (self.width - done)}{_RESET}"
            width += 1 + self.width
        if finalize or not self.target:
            when = f"{now - self._start:.0f}s"
        else:
            when = _format_eta(per_unit * (self.target - current))
        info = f" {when} {_format_per_unit(per_unit, self.unit_name)}" + \
            self._metric_text()
        text += f" {_BOLD}{when}{_RESET}" + info[1 + len(when):]
        return text, width + len(info)

    def update(self, current, values=None, finalize=None):
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._accumulate(current, values)
        now = time.time()
        per_unit = self._per_unit(current, now)
        if self.verbose == 0 or self._done:
            return
        out = self.stream
        if self.verbose == 1 and self._dynamic:
            if not finalize and now - self._last_update < self.interval:
                return
            self._last_update = now
            text, width = self._live_line(current, now, per_unit, finalize)
            pad = max(0, self._prev_width - width)
            self._prev_width = width
            out.write("\r" + text + " " * pad + ("\n" if finalize else ""))
            out.flush()
        else:
            # Plain lines: at the end (and every plain_interval seconds
            # on long epochs when verbose=1).
            if not finalize and (self.verbose != 1 or
                                 now - self._last_plain < self.plain_interval):
                return
            self._last_plain = now
            text = self._count_text(current).strip()
            text += (f" - {now - self._start:.0f}s - "
                     f"{_format_per_unit(per_unit, self.unit_name)}")
            text += self._metric_text()
            out.write(text + "\n")
            out.flush()
        if finalize:
            self._done = True

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)
