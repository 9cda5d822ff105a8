"""How often Python's cycle collector runs while extracteval reads and scores.

Reading 100k JSON records builds millions of dicts and lists, all alive until the scoring ends.
With the default thresholds the collector runs a pass every 700 new containers and, every tenth
pass, walks every object alive: on such inputs that was 40% of the command's time (`score json`,
100k records: 10.6 s against 6.6 s with the collector off, on a shared machine). `bulk_work()`
raises the first threshold for the duration of the work and restores the caller's settings on
exit, so a notebook's interpreter is left as it was. Cycles are still collected, in fewer, larger
passes; objects without cycles are freed at once as always.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["bulk_work"]

# new containers between two passes of the youngest generation (default 700), and passes of each
# generation before the next one is collected (defaults 10, 10)
BULK_THRESHOLDS = (100_000, 50, 100)

_lock = threading.Lock()
_depth = 0  # blocks open now, in any thread: the first sets the thresholds, the last restores them
_saved: tuple[int, ...] = ()


@contextmanager
def bulk_work() -> Iterator[None]:
    """The collector at `BULK_THRESHOLDS` inside the block (never lower than the caller's own;
    left alone when the caller switched automatic collection off, threshold 0). Blocks may nest
    and overlap across threads: the settings found by the first are restored by the last."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            if _saved[0] != 0:
                gc.set_threshold(*(max(a, b) for a, b in zip(BULK_THRESHOLDS, _saved)))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)
