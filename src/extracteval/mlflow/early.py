"""Work for the local copy that starts while the scoring still runs.

Most of an in-memory `fields` evaluation runs on one core: reading the inputs and the field loop
hold the interpreter lock, and the bootstrap that follows is mostly one core too. The Parquet
artifacts, the truth digest and the first import of MLflow's client do not depend on the
bootstrap, so `extracteval evaluate` starts them as soon as the per-record counts are final
(`score_fields(on_records=…)`), in a background thread that uses the idle core: Arrow encodes the
Parquet files with the lock released, and the truth is digested from the scoring's column codes
(hashing, Arrow and NumPy, also without the lock). One job at a time while the scoring runs, so
it keeps a core of its own; two once it is done (`attach`). At 100k records × 200 fields and two
models that is ≈ 10 s of CPU time mostly no longer spent after the scoring.

The files are written into a work folder beside the output (same file system) and hard-linked
into the bundle by `write_bundle`, like the files a streaming engine writes while it scores;
`write_bundle` waits for whatever is not finished yet. The local copy is still complete before
anything is uploaded: nothing here talks to the tracking store.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from extracteval.io.config import safe_file_name

__all__ = ["EarlyWork", "settled"]


class EarlyWork:
    """Background jobs for the local copy of one evaluation; a context manager.

    `file(model, name, write)` runs `write(path)` (True: written, False: nothing to write) into the
    work folder; `value(key, compute)` computes a value. `files` and `values` hold the futures,
    which `attach` hands to the bundle writer through `Scored.cache` once the scoring is done;
    from then on two jobs run at a time instead of one. `warm` jobs (imports the
    logging will need) run first and their failures are ignored: the real import later reports
    them. Leaving the context waits for every job and removes the work folder, also on an error.
    """

    def __init__(self, parent: Path | str | None = None, *, warm: Iterable[Callable[[], object]] = ()) -> None:
        self._parent = None if parent is None else Path(parent)
        self._warm = list(warm)
        self._pool: ThreadPoolExecutor | None = None
        self.workdir: Path | None = None
        self.files: dict[tuple[str, str], Future[Path | None]] = {}
        self.values: dict[str, Future[Any]] = {}
        self._slots = threading.Semaphore(1)  # jobs running at once; a second one after `attach`
        self._widened = False

    def _start(self) -> ThreadPoolExecutor:
        if self._pool is None:
            if self._parent is not None:
                self._parent.mkdir(parents=True, exist_ok=True)
            self.workdir = Path(tempfile.mkdtemp(prefix=".extracteval-early-", dir=self._parent))
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="extracteval-early")
            for warm in self._warm:
                self._pool.submit(self._gated, _quietly, warm)
        return self._pool

    def file(self, model: str, name: str, write: Callable[[Path], bool]) -> None:
        """Write artifact `name` of `model` in the background."""
        pool = self._start()
        assert self.workdir is not None
        path = self.workdir / f"{len(self.files)}-{safe_file_name(name)}"
        self.files[(model, name)] = pool.submit(self._gated, _written, write, path)

    def value(self, key: str, compute: Callable[[], Any]) -> None:
        self.values[key] = self._start().submit(self._gated, compute)

    def attach(self, cache: dict[str, Any]) -> None:
        """Hand the jobs to `write_bundle`: `early_files` (model, name) → future of the path (None:
        nothing written), and each value under its key (a future; see `settled`)."""
        if self.files:
            cache["early_files"] = dict(self.files)
        cache.update(self.values)
        self._widen()

    def _gated(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._slots:
            return fn(*args)

    def _widen(self) -> None:
        if not self._widened:
            self._widened = True
            self._slots.release()

    def close(self) -> None:
        self._widen()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "EarlyWork":
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _quietly(warm: Callable[[], object]) -> None:
    try:
        warm()
    except Exception:  # noqa: BLE001 - a warm-up only; the real use reports the failure
        pass


def _written(write: Callable[[Path], bool], path: Path) -> Path | None:
    return path if write(path) else None


def settled(value: Any) -> Any:
    """`value`, or its result when it is a future (raising what the job raised)."""
    return value.result() if isinstance(value, Future) else value
