"""The leak check the ragged, sparse and string tests share."""
import gc

from tfmini import _C


def assert_no_leak(round_, warmup=3, rounds=50):
    """round_() run `rounds` times after `warmup` runs (caches, first
    traces) leaves the C core's live object counts as they were."""
    for _ in range(warmup):
        round_()
    gc.collect()
    before = _C.live_counts()
    for _ in range(rounds):
        round_()
    gc.collect()
    assert _C.live_counts() == before
