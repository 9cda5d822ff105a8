"""Writing result files safely: CSV cells that cannot run as spreadsheet formulas, and output
folders that appear complete or not at all.

CSV injection: a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read
as a formula by Excel, LibreOffice and Google Sheets; field names, values and model names come
from model output and user files, so a hostile model could plant `=HYPERLINK(...)` in a report a
reviewer opens. OWASP's advice is to prefix such a cell with `'`, which spreadsheets show as
text. Only strings are touched: numbers (a negative metric too) stay numbers.

Atomic folders: `staged_folder(out)` hands out a temporary sibling of `out`; only when every
file has been written are they renamed into `out` (renames on one filesystem are atomic and need
no space). An interrupt (SIGINT) or a full disk during writing leaves `out` as it was, or absent.
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from extracteval.errors import InputError, OutputError

__all__ = [
    "FORMULA_PREFIXES", "add_safe_csv_argument", "neutralise_cell", "safe_csv_frame", "safe_csv_row", "write_csv",
    "staged_folder", "output_error",
]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: Any) -> Any:
    """`'` + value when value is a string a spreadsheet would run as a formula; else value.

    >>> neutralise_cell("=1+2"), neutralise_cell(-0.5), neutralise_cell("ok")
    ("'=1+2", -0.5, 'ok')
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def safe_csv_frame(frame: Any) -> Any:
    """A copy of a DataFrame with every text cell and column name neutralised (numbers untouched)."""
    import pandas as pd

    out = frame.copy()
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
            continue
        out.isetitem(i, col.map(neutralise_cell).astype(col.dtype if isinstance(col.dtype, pd.StringDtype) else object))
    out.columns = [neutralise_cell(c) for c in out.columns]
    return out


def safe_csv_row(row: Sequence[Any]) -> list[Any]:
    """One `csv.writer` row with its text cells neutralised."""
    return [neutralise_cell(v) for v in row]


def write_csv(frame: Any, path: Path, *, safe: bool = True) -> None:
    """`frame.to_csv(path, index=False)`, neutralising formula cells unless `safe=False`."""
    (safe_csv_frame(frame) if safe else frame).to_csv(path, index=False)


def add_safe_csv_argument(p: argparse.ArgumentParser) -> None:
    """--safe-csv (default) / --no-safe-csv, for every command that writes CSV."""
    p.add_argument("--safe-csv", action=argparse.BooleanOptionalAction, default=True,
                   help="prefix CSV text cells starting with = + - @ tab or CR with ' so spreadsheets do not run "
                        "them as formulas (default: on; --no-safe-csv writes them raw)")


def make_output_folder(out: Path | str) -> Path:
    """`--output DIR` for files streamed into it as they are scored (no staging: the chunked
    engines' Parquet files are written through temporary siblings renamed into place)."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{out}: cannot create the output folder ({e.strerror or e}).") from None
    return out


def output_error(out: Path, e: BaseException) -> OutputError:
    """The user-facing error for a failed write into `out`, naming the folder and the cause."""
    reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
    code = getattr(e, "errno", None)
    if code == errno.ENOSPC and "space" not in reason.lower():
        reason = f"no space left on device: {reason}"
    elif code == errno.EFBIG and "too large" not in reason.lower():
        reason = f"file too large: {reason}"
    return OutputError(f"{out}: cannot write the output folder ({reason}); "
                       "it was left as it was before this run. Free space (or fix permissions) and rerun.")


@contextmanager
def staged_folder(out: Path | str, *, replace: bool = False) -> Iterator[Path]:
    """Yield an empty temporary folder beside `out`; on success move what was written into `out`.

    Without `replace`, each file written replaces the file of that name in `out` and anything else
    already in `out` stays (a user may point --output at a folder holding other things). With
    `replace=True` (a folder entirely ours, like an evaluation bundle) `out` is swapped whole.
    On any error or interrupt the temporary folder is removed and `out` is untouched; an OSError
    while writing becomes an `OutputError` (exit code 1) naming `out`.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: the output path exists and is not a folder; choose a folder.")
    parent = out.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=parent))
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp's 0700 would become the output folder's mode
    except OSError as e:
        raise output_error(out, e) from None
    try:
        try:
            yield staging
            with _sigint_deferred():  # a Ctrl-C here would leave a half-moved folder
                _commit(staging, out, replace=replace)
        except OSError as e:
            raise output_error(out, e) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _commit(staging: Path, out: Path, *, replace: bool) -> None:
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if not out.exists():
        os.rename(staging, out)
        return
    trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.absolute().parent))
    try:
        if replace:
            os.rename(out, trash / "old")
            os.rename(staging, out)
            return
        for entry in sorted(staging.iterdir()):
            target = out / entry.name
            if entry.is_dir() and target.is_dir() and not target.is_symlink():
                os.rename(target, trash / entry.name)  # a sub-folder (figures/) is replaced whole
            os.replace(entry, target)
    finally:
        shutil.rmtree(trash, ignore_errors=True)


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold SIGINT during the renames, then raise KeyboardInterrupt if one arrived."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
