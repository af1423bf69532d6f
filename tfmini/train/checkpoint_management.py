"""tf.train.CheckpointManager: numbered checkpoints in one folder, the
newest max_to_keep kept, listed in the folder's `checkpoint` state file
(TF's text format, which latest_checkpoint reads)."""
import os

from .. import _C
from .checkpoint import _INDEX, latest_checkpoint

__all__ = ["CheckpointManager"]


def _state_text(latest, paths):
    lines = [f'model_checkpoint_path: "{os.path.basename(latest)}"']
    lines += [f'all_model_checkpoint_paths: "{os.path.basename(p)}"'
              for p in paths]
    return "\n".join(lines) + "\n"


def _read_paths(directory, state_name):
    """The checkpoints a state file lists that still exist, oldest
    first."""
    try:
        with open(os.path.join(directory, state_name)) as f:
            text = f.read()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        if line.startswith("all_model_checkpoint_paths:"):
            value = line.split(":", 1)[1].strip().strip('"')
            if not os.path.isabs(value):
                value = os.path.join(directory, value)
            if os.path.isfile(value + _INDEX) and value not in out:
                out.append(value)
    return out


class CheckpointManager:
    """Saves `checkpoint` as `<directory>/<checkpoint_name>-<n>`, keeping
    the newest max_to_keep (None keeps all)."""

    def __init__(self, checkpoint, directory, max_to_keep,
                 keep_checkpoint_every_n_hours=None, checkpoint_name="ckpt",
                 step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for "
                             f"`max_to_keep`, got {max_to_keep}.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._state = "checkpoint"
        self._init_fn = init_fn
        self._paths = _read_paths(self._directory, self._state)

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoints(self):
        """The kept checkpoints' prefixes, oldest first."""
        return list(self._paths)

    @property
    def latest_checkpoint(self):
        return latest_checkpoint(self._directory)

    @property
    def checkpoint(self):
        return self._checkpoint

    def restore_or_initialize(self):
        latest = self.latest_checkpoint
        if latest is not None:
            self._checkpoint.restore(latest)
            return latest
        if self._init_fn is not None:
            self._init_fn()
        return None

    def save(self, checkpoint_number=None, check_interval=True,
             options=None):
        """Writes the next checkpoint (numbered by the checkpoint's
        save_counter, or checkpoint_number) and drops the oldest beyond
        max_to_keep; returns its prefix."""
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        number = int(counter.numpy()) if checkpoint_number is None \
            else int(checkpoint_number)
        path = self._checkpoint.write(f"{self._prefix}-{number}")
        if path in self._paths:
            self._paths.remove(path)
        self._paths.append(path)
        while self._max_to_keep is not None and \
                len(self._paths) > self._max_to_keep:
            old = self._paths.pop(0)
            try:
                os.remove(old + _INDEX)
            except FileNotFoundError:
                pass
        os.makedirs(self._directory, exist_ok=True)
        _C.write_file_atomic(
            os.path.join(self._directory, self._state),
            _state_text(path, self._paths).encode("utf-8"),
            "tf.train.CheckpointManager")
        return path
