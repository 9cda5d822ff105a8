"""The bad-input catalogue's engine: one table of cases per task, one runner.

Every task gets a small *valid* pair of files (truth + one model's predictions). A case mutates
one side (or an option) and states the expected behaviour:

- `Bad(*needles)`: exit code 2, exactly one `extracteval: error:` line on stderr naming what
  the needles say (file name, line / record id, column / path, expected vs found), no traceback.
- `Ok(check)`: exit code 0 (the input is model output, or harmless): `check(doc)` sees the
  `--json` document and asserts the damage was *counted* (e.g. a missing record is a miss).

The files are generated in pytest's tmp folder; nothing big is committed.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Bad:
    needles: tuple[str, ...] = ()

    def __init__(self, *needles: str) -> None:
        object.__setattr__(self, "needles", needles)


@dataclass(frozen=True)
class Ok:
    """Exit 0; `check(doc)` asserts on the --json document; `same=True`: identical to the clean run."""

    check: Callable[[dict[str, Any]], None] | None = None
    same: bool = False
    files: Callable[[Path], None] | None = None  # with an --output run: checks the folder written


@dataclass(frozen=True)
class Case:
    """One catalogue row. `mutate(files)` edits the valid inputs in place; `extra` adds argv."""

    name: str
    mutate: Callable[["Files"], None] | None
    expect: Bad | Ok
    extra: tuple[str, ...] = ()
    behaviour: str = ""  # the README table's "behaviour" column when it says more than the expectation

    @property
    def id(self) -> str:
        return self.name.replace(" ", "-")


@dataclass
class Files:
    """The inputs of one run: rows on each side, serialised by `fmt`, or raw bytes overriding them."""

    dir: Path
    fmt: str  # "csv", "jsonl" or "conll" (a token file: a row's values on one line, {} a blank line)
    truth: Rows
    pred: Rows
    raw: dict[str, bytes] = field(default_factory=dict)  # side -> exact bytes to write
    suffix: dict[str, str] = field(default_factory=dict)  # side -> file suffix override
    special: dict[str, str] = field(default_factory=dict)  # side -> "dir", "fifo" or "unreadable" instead of a file

    def path(self, side: str) -> Path:
        return self.dir / f"{side}{self.suffix.get(side, '.' + self.fmt)}"

    def text(self, side: str) -> str:
        return serialise(self.fmt, getattr(self, side))

    def set_raw(self, side: str, data: bytes | str) -> None:
        self.raw[side] = data.encode("utf-8") if isinstance(data, str) else data

    def write(self) -> tuple[Path, Path]:
        import os

        for side in ("truth", "pred"):
            data = self.raw.get(side)
            path = self.path(side)
            kind = self.special.get(side)
            if kind == "dir":
                path.mkdir()
            elif kind == "fifo":
                os.mkfifo(path)  # no writer: reading it would wait forever
            else:
                path.write_bytes(data if data is not None else self.text(side).encode("utf-8"))
                if kind == "unreadable":
                    path.chmod(0)
        return self.path("truth"), self.path("pred")


def serialise(fmt: str, rows: Rows) -> str:
    if fmt == "conll":
        return "".join(" ".join(str(v) for v in r.values()) + "\n" for r in rows)
    if fmt == "jsonl":
        return "".join(json.dumps(r, allow_nan=True) + "\n" for r in rows)
    buf = io.StringIO()
    columns = list(dict.fromkeys(k for r in rows for k in r))
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


@dataclass(frozen=True)
class TaskSpec:
    task: str
    fmt: str
    truth: Callable[[], Rows]
    pred: Callable[[], Rows]
    argv: Callable[[Path, Path], list[str]]


def run_case(cli: Callable[..., Any], spec: TaskSpec, case: Case, tmp: Path, *, prepare: Callable[[Files], None] | None = None,
             output: bool = False) -> Any:
    """Run one case. `prepare` converts the valid files first (e.g. to Parquet); `output` adds
    `--output DIR` and hands DIR to the expectation's `files` check."""
    files = Files(dir=tmp, fmt=spec.fmt, truth=spec.truth(), pred=spec.pred())
    if case.mutate is not None:
        case.mutate(files)
    if prepare is not None:  # after the mutation: it converts the mutated rows (raw bytes stay as they are)
        prepare(files)
    if "unreadable" in files.special.values() and running_as_root():
        files.dir = _world_readable_dir()  # the unprivileged reader must reach the other file
    truth, pred = files.write()
    out_dir = tmp / "out"
    argv = [*spec.argv(truth, pred), *case.extra, *(("--output", str(out_dir)) if output else ())]
    if "unreadable" in files.special.values() and running_as_root():
        # the unprivileged user cannot read Python's own files (under root's home): every module
        # the command needs is imported first, by the same command run on the readable file
        locked = [files.path(side) for side, kind in files.special.items() if kind == "unreadable"]
        for p in locked:
            p.chmod(0o644)
        cli(*argv)
        for p in locked:
            p.chmod(0)
    with _unprivileged() if "unreadable" in files.special.values() else _nothing():
        r = cli(*argv)
    assert "Traceback" not in r.err, r.err
    if isinstance(case.expect, Bad):
        assert r.code == 2, f"expected exit 2, got {r.code}; stderr: {r.err[-2000:]}"
        lines = [ln for ln in r.err.splitlines() if ln.startswith("extracteval: error:")]
        assert len(lines) == 1, f"expected one error line, got: {r.err[-2000:]}"
        message = lines[0]
        for needle in case.expect.needles:
            needle = needle.format(truth=truth.name, pred=pred.name)
            assert _needle_in(needle, message), f"{needle!r} not in {message!r}"
        return message
    assert r.code == 0, f"expected exit 0, got {r.code}; stderr: {r.err[-2000:]}"
    doc = r.json()
    if case.expect.same:
        key = (spec.task, spec.fmt, spec.argv(Path("T"), Path("P")).__repr__(), case.extra, prepare)
        if key not in _CLEAN:
            base_dir = tmp / "clean"
            base_dir.mkdir()
            clean = Files(dir=base_dir, fmt=spec.fmt, truth=spec.truth(), pred=spec.pred())
            if prepare is not None:
                prepare(clean)
            rc = cli(*spec.argv(*clean.write()), *case.extra)
            assert rc.code == 0, rc.err
            _CLEAN[key] = _scrub(rc.out, base_dir)
        assert _CLEAN[key] == _scrub(r.out, files.dir), "result differs from the clean input's"
    if case.expect.check is not None:
        case.expect.check(doc)
    if case.expect.files is not None:
        case.expect.files(out_dir)
    return doc


_CLEAN: dict[Any, str] = {}  # the clean run's output per task, reader and options (the same for every case)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _world_readable_dir() -> Path:
    """A fresh folder under the system temporary folder that another user may enter (pytest's
    own is private to its user), removed at exit."""
    import atexit
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="extracteval-unreadable-"))
    d.chmod(0o755)
    atexit.register(shutil.rmtree, d, True)
    return d


@contextmanager
def _unprivileged() -> Iterator[None]:
    """As root, permissions do not deny a read: run as the unprivileged user `nobody` (effective
    uid only, restored after) so that a file with mode 000 is really unreadable. Not root: as is."""
    import os

    if not running_as_root():
        yield
        return
    import pytest

    try:
        os.seteuid(65534)
    except OSError as e:
        pytest.skip(f"running as root and cannot switch to an unprivileged user ({e}), so no file can be made unreadable")
    try:
        yield
    finally:
        os.seteuid(0)


def _scrub(out: str, folder: Path) -> str:
    return out.replace(json.dumps(str(folder))[1:-1], "<dir>").replace(str(folder), "<dir>")


# --- reusable mutations ---------------------------------------------------------------------


def raw(side: str, data: bytes | str) -> Callable[[Files], None]:
    return lambda f: f.set_raw(side, data)


def header_only(side: str) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        f.set_raw(side, f.text(side).splitlines(keepends=True)[0] if f.fmt == "csv" else "[]\n")
        if f.fmt != "csv":
            f.suffix[side] = ".json"

    return m


def wrong_delimiter(side: str) -> Callable[[Files], None]:
    """CSV written with ';'; JSONL with two records on one line (a delimiter error of JSONL)."""

    def m(f: Files) -> None:
        if f.fmt == "csv":
            f.set_raw(side, f.text(side).replace(",", ";"))
        else:
            lines = f.text(side).splitlines()
            f.set_raw(side, lines[0] + " " + lines[1] + "\n" + "\n".join(lines[2:]) + "\n")

    return m


def bom(side: str) -> Callable[[Files], None]:
    return lambda f: f.set_raw(side, "\ufeff" + f.text(side))


def crlf(side: str) -> Callable[[Files], None]:
    return lambda f: f.set_raw(side, f.text(side).replace("\n", "\r\n"))


def latin1(side: str) -> Callable[[Files], None]:
    """Valid text plus one byte that is not UTF-8 (Latin-1 'é') at the end of line 3."""

    def m(f: Files) -> None:
        lines = f.text(side).encode("utf-8").split(b"\n")
        lines[2] = lines[2] + b"\xe9"
        f.set_raw(side, b"\n".join(lines))

    return m


def rows(side: str, fn: Callable[[Rows], Rows | None]) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        out = fn(getattr(f, side))
        if out is not None:
            setattr(f, side, out)

    return m


def duplicate_first(rs: Rows) -> Rows:
    return [*rs, json.loads(json.dumps(rs[0]))]


def drop_first(rs: Rows) -> Rows:
    return rs[1:]


def json_text_edit(side: str, fn: Callable[[str], str]) -> Callable[[Files], None]:
    return lambda f: f.set_raw(side, fn(f.text(side)))


def deep(n: int = 10_000) -> str:
    return "[" * n + "]" * n


def wide(n: int = 100_000) -> dict[str, int]:
    return {f"k{i}": i for i in range(n)}


def ids(cases: Sequence[Case]) -> list[str]:
    return [c.id for c in cases]


# --- the file-level hostile-input catalogue (tests/bad_inputs/test_hostile_files.py) ----------
#
# The same cases for every reader of every task: each mutation works on the side's serialised
# file (text, or Parquet bytes), so it needs no knowledge of the task; what a task needs (where
# a value sits in a record, how it treats an id the truth lacks) comes from its `Reader`.


def any_of(*words: str) -> str:
    """A needle matched when any of `words` is in the message."""
    return "|".join(words)


def _needle_in(needle: str, message: str) -> bool:
    return any(w.lower() in message.lower() for w in needle.split("|"))


def encoded(side: str, codec: str) -> Callable[[Files], None]:
    """The side's text in `codec`, with the byte-order mark that declares it."""
    marks = {"utf-8-sig": b"", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}
    return lambda f: f.set_raw(side, marks[codec] + f.text(side).encode(codec))


def newlines(side: str, sep: str) -> Callable[[Files], None]:
    """Lines ended by `sep`; "mixed": CRLF, LF and CR in turn; "none": no newline at the end."""

    def m(f: Files) -> None:
        lines = f.text(side).split("\n")[:-1]
        if sep == "mixed":
            ends = ["\r\n", "\n", "\r"]
            f.set_raw(side, "".join(ln + ends[i % 3] for i, ln in enumerate(lines)))
        elif sep == "none":
            f.set_raw(side, "\n".join(lines))
        else:
            f.set_raw(side, "".join(ln + sep for ln in lines))

    return m


def nul_byte(side: str) -> Callable[[Files], None]:
    """A NUL byte inside line 2 (what UTF-16 without a BOM, or a binary file, looks like)."""

    def m(f: Files) -> None:
        lines = f.text(side).split("\n")
        lines[1] = lines[1][:3] + "\x00" + lines[1][3:]
        f.set_raw(side, "\n".join(lines))

    return m


def _csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _csv_text(rows_: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows_)
    return buf.getvalue()


def csv_edit(side: str, fn: Callable[[list[list[str]]], list[list[str]]]) -> Callable[[Files], None]:
    """Edit the side's CSV as rows of cells (header first)."""
    return lambda f: f.set_raw(side, _csv_text(fn(_csv_rows(f.text(side)))))


def repeat_column(rows_: list[list[str]]) -> list[list[str]]:
    """The last column twice, same header and values (`id,a,a`)."""
    return [r + [r[-1]] for r in rows_]


def unnamed_column(rows_: list[list[str]]) -> list[list[str]]:
    return [rows_[0] + [""]] + [r + ["x"] for r in rows_[1:]]


def ragged(extra: int) -> Callable[[list[list[str]]], list[list[str]]]:
    """Row 2 (line 3) with `extra` more cells (negative: fewer) than the header."""

    def fn(rows_: list[list[str]]) -> list[list[str]]:
        out = [list(r) for r in rows_]
        out[2] = out[2] + ["x"] * extra if extra > 0 else out[2][:extra]
        return out

    return fn


def jsonl_lines(side: str, fn: Callable[[list[str]], list[str]]) -> Callable[[Files], None]:
    return lambda f: f.set_raw(side, "".join(ln + "\n" for ln in fn(f.text(side).splitlines())))


def repeat_key(lines: list[str]) -> list[str]:
    """Line 1 names its `id` key twice (same value)."""
    first = json.loads(lines[0])
    return [lines[0].replace("{", '{"id": ' + json.dumps(first["id"]) + ", ", 1), *lines[1:]]


def empty_key(lines: list[str]) -> list[str]:
    return [lines[0].replace("{", '{"": "x", ', 1), *lines[1:]]


def raw_newline_in_string(lines: list[str]) -> list[str]:
    """A line break written raw inside a JSON string of line 1 (one record cut in two lines)."""
    i = lines[0].index('"', lines[0].index(":") + 1)
    return [lines[0][: i + 1] + "\n" + lines[0][i + 1 :], *lines[1:]]


def not_an_object(lines: list[str]) -> list[str]:
    return [lines[0], "[1, 2, 3]", *lines[1:]]


def blank_lines_only(side: str) -> Callable[[Files], None]:
    return lambda f: f.set_raw(side, "\n\n\n")


def directory(side: str) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        f.special[side] = "dir"

    return m


def fifo(side: str) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        f.special[side] = "fifo"

    return m


def unreadable(side: str) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        f.special[side] = "unreadable"

    return m


def as_parquet(f: Files) -> None:
    """Both sides as Parquet files (their rows, as pandas writes them); a side whose bytes a
    mutation set keeps them, under the .parquet name."""
    import pandas as pd

    for side in ("truth", "pred"):
        f.suffix[side] = ".parquet"
        if side in f.raw:
            continue
        buf = io.BytesIO()
        pd.DataFrame(getattr(f, side)).to_parquet(buf, index=False)
        f.set_raw(side, buf.getvalue())


def parquet_repeated_column(side: str) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        as_parquet(f)
        table = pq.read_table(io.BytesIO(f.raw[side]))
        table = pa.Table.from_arrays([*table.columns, table.columns[-1]], names=[*table.column_names, table.column_names[-1]])
        buf = io.BytesIO()
        pq.write_table(table, buf)
        f.set_raw(side, buf.getvalue())

    return m


def then(*mutations: Callable[[Files], None]) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        for mu in mutations:
            mu(f)

    return m


def formula_cells_neutralised(out: Path) -> None:
    """Every CSV written to `out`: no cell a spreadsheet would run as a formula."""
    written = sorted(out.rglob("*.csv"))
    for p in written:
        for row in _csv_rows(p.read_text(encoding="utf-8")):
            bad = [c for c in row if c.startswith(("=", "+", "@")) or (c.startswith("-") and not _number(c))]
            assert not bad, f"{p.name}: formula cells written raw: {bad[:3]}"


def _number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def running_as_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0
