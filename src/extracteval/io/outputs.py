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

Whose folder: every output folder gets a marker file, `.extracteval-output`, written with the
results. A folder that exists, is not empty and has no marker (nor an evaluation's manifest.json)
was not written by extracteval: it is refused unless the user passes `--overwrite`, so a typo or
a link cannot scatter result files over a folder of other things. A symbolic link is resolved
first; messages name the folder it points to, and the files go there (the link stays a link).
"""

from __future__ import annotations

import argparse
import contextvars
import errno
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from extracteval.core import strict_json
from extracteval.errors import InputError, OutputError

__all__ = [
    "FORMULA_PREFIXES", "add_safe_csv_argument", "neutralise_cell", "safe_csv_frame", "safe_csv_row", "write_csv",
    "staged_folder", "output_error", "MARKER", "check_output_folder", "mark_folder", "written_by_extracteval", "OVERWRITE", "write_feature_view_files",
]

MARKER = ".extracteval-output"
# `--overwrite` of the command being run: lets `staged_folder` write into a folder it did not write
OVERWRITE: contextvars.ContextVar[bool] = contextvars.ContextVar("extracteval_overwrite", default=False)

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


def _resolved(out: Path) -> tuple[Path, str]:
    """`out` with symbolic links resolved, and how a message names it ("x (a link to /y)")."""
    if out.is_symlink():
        target = out.resolve()
        if target != out.absolute():
            return target, f"{out} (a link to {target})"
    return out, str(out)


def written_by_extracteval(folder: Path) -> bool:
    """True when `folder` holds extracteval's marker file, or is an evaluation's results folder
    (manifest.json; those written before the marker existed have no marker)."""
    if (folder / MARKER).is_file():
        return True
    mf = folder / "manifest.json"
    if mf.is_file():
        try:
            return str(json.loads(mf.read_text(encoding="utf-8")).get("format", "")).startswith("extracteval-")
        except (OSError, ValueError, AttributeError):
            return False
    return False


def check_output_folder(out: Path | str, *, overwrite: bool = False, whole: bool = False) -> Path:
    """The folder `out` names (links resolved), refused when it exists, is not empty and was not
    written by extracteval, unless `overwrite` (never for `whole`: a folder that will be replaced
    as a whole, like an evaluation's results folder, must be new, empty or extracteval's)."""
    out = Path(out)
    target, named = _resolved(out)
    if not target.exists():
        if out.is_symlink():
            raise InputError(f"{named}: the link points to a folder that does not exist; create it or choose another folder.")
        return target
    if not target.is_dir():
        raise InputError(f"{named}: the output path exists and is not a folder; choose a folder.")
    try:
        empty = not any(target.iterdir())
    except OSError as e:
        raise InputError(f"{named}: cannot read the output folder ({e.strerror or e}).") from None
    if empty or written_by_extracteval(target):
        return target
    if whole:
        raise InputError(f"{named}: the output folder is not empty and was not written by extracteval (it has no {MARKER} file "
                         "nor manifest.json); choose a new or empty folder, since this folder would be replaced as a whole.")
    if not overwrite:
        raise InputError(f"{named}: the output folder is not empty and was not written by extracteval (it has no {MARKER} file); "
                         "choose a new or empty folder, or pass --overwrite to write into it (files of the same names are replaced, "
                         "other files are kept).")
    return target


def mark_folder(folder: Path, files: Sequence[str] | None = None) -> None:
    """Write extracteval's marker file into `folder` (see the module's notes); `files`: the
    entries of the folder extracteval wrote (the only ones a later run may replace or remove)."""
    from extracteval import __version__

    doc: dict[str, Any] = {"written_by": "extracteval", "version": __version__,
                           "note": "this folder holds extracteval results; extracteval may write into it again without --overwrite"}
    if files is not None:
        doc["files"] = sorted(set(files) | {MARKER})
    (folder / MARKER).write_text(strict_json.dumps(doc) + "\n", encoding="utf-8")


def _ours(folder: Path) -> set[str]:
    """The entries of `folder` its marker lists as extracteval's (none for a folder without a
    list: only entries of the same names are then replaced)."""
    try:
        doc = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    files = doc.get("files") if isinstance(doc, dict) else None
    return {f for f in files if isinstance(f, str) and f and "/" not in f and f not in (".", "..")} if isinstance(files, list) else set()



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

    Each entry written replaces the entry of that name in `out` (a sub-folder whole) and anything
    else already in `out` stays (an earlier run's files, or with `--overwrite` a user's folder
    holding other things). With `replace=True` (an evaluation bundle) the entries an earlier run
    of extracteval wrote there (listed in its marker) and this one does not are removed as well;
    what a user added beside them is never touched. A folder not written by extracteval is refused (`check_output_folder`); a link
    is resolved and the folder it points to written. The marker file is written with the results.
    On any error or interrupt the temporary folder is removed and `out` is untouched; an OSError
    while writing becomes an `OutputError` (exit code 1) naming `out`.
    """
    out = check_output_folder(out, overwrite=OVERWRITE.get(), whole=replace)
    parent = out.absolute().parent
    staging: Path | None = None
    try:
        # a Ctrl-C while the folder is made is raised once `staging` names it, so the clean-up
        # below removes it (raised between mkdtemp and the clean-up, it left the folder behind)
        with _sigint_deferred():
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError) as e:  # a file where a folder of the path should be
                raise InputError(f"{out}: cannot create the output folder ({e.strerror or e}).") from None
            except OSError as e:
                raise output_error(out, e) from None
            try:
                staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=parent))
                os.chmod(staging, 0o777 & ~_umask())  # mkdtemp's 0700 would become the output folder's mode
            except OSError as e:
                raise output_error(out, e) from None
        try:
            yield staging
            written = {e.name for e in staging.iterdir()}
            ours = _ours(out) if out.is_dir() else set()
            # what extracteval wrote there before and this run does not write again: with
            # `replace` removed, else kept (and still listed while it is there)
            earlier = ours - written - {MARKER}
            kept = set() if replace else {n for n in earlier if os.path.lexists(out / n)}
            mark_folder(staging, written | kept)
            with _sigint_deferred():  # a Ctrl-C here would leave a half-moved folder
                _commit(staging, out, remove=earlier if replace else set())
        except OSError as e:
            raise output_error(out, e) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _commit(staging: Path, out: Path, *, remove: set[str]) -> None:
    """Move the staged entries into `out`, and remove from it the entries `remove` names (what
    extracteval wrote there before and no longer writes); an entry it did not write (a user's
    notes beside the results) is never touched."""
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if not out.exists():
        os.rename(staging, out)
        return
    trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.absolute().parent))
    try:
        for name in sorted(remove):
            if os.path.lexists(out / name):
                os.rename(out / name, trash / name)
        for entry in sorted(staging.iterdir()):
            target = out / entry.name
            if entry.is_dir() and target.is_dir() and not target.is_symlink():
                os.rename(target, trash / entry.name)  # a sub-folder (figures/) is replaced whole
            os.replace(entry, target)
    finally:
        shutil.rmtree(trash, ignore_errors=True)


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM during the renames, then raise KeyboardInterrupt if one arrived."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        raise KeyboardInterrupt


def write_feature_view_files(doc: dict[str, Any], out: Path, *, views: tuple[str, ...] = ("aligned", "strict"), safe_csv: bool = True) -> None:
    """`--output` of a feature-views result (`labels`, `entities`): result.json and feature_metrics.csv
    (one row per model, view, feature and label)."""
    import pandas as pd

    from extracteval.report.feature_views import feature_rows

    (out / "result.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    write_csv(pd.DataFrame(feature_rows(doc, views)), out / "feature_metrics.csv", safe=safe_csv)
