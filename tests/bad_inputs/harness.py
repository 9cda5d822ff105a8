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
from collections.abc import Callable, Sequence
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
    fmt: str  # "csv" or "jsonl"
    truth: Rows
    pred: Rows
    raw: dict[str, bytes] = field(default_factory=dict)  # side -> exact bytes to write
    suffix: dict[str, str] = field(default_factory=dict)  # side -> file suffix override

    def path(self, side: str) -> Path:
        return self.dir / f"{side}{self.suffix.get(side, '.' + self.fmt)}"

    def text(self, side: str) -> str:
        return serialise(self.fmt, getattr(self, side))

    def set_raw(self, side: str, data: bytes | str) -> None:
        self.raw[side] = data.encode("utf-8") if isinstance(data, str) else data

    def write(self) -> tuple[Path, Path]:
        for side in ("truth", "pred"):
            data = self.raw.get(side)
            self.path(side).write_bytes(data if data is not None else self.text(side).encode("utf-8"))
        return self.path("truth"), self.path("pred")


def serialise(fmt: str, rows: Rows) -> str:
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


def run_case(cli: Callable[..., Any], spec: TaskSpec, case: Case, tmp: Path) -> Any:
    files = Files(dir=tmp, fmt=spec.fmt, truth=spec.truth(), pred=spec.pred())
    if case.mutate is not None:
        case.mutate(files)
    truth, pred = files.write()
    argv = [*spec.argv(truth, pred), *case.extra]
    r = cli(*argv)
    assert "Traceback" not in r.err, r.err
    if isinstance(case.expect, Bad):
        assert r.code == 2, f"expected exit 2, got {r.code}; stderr: {r.err[-2000:]}"
        lines = [ln for ln in r.err.splitlines() if ln.startswith("extracteval: error:")]
        assert len(lines) == 1, f"expected one error line, got: {r.err[-2000:]}"
        message = lines[0]
        for needle in case.expect.needles:
            needle = needle.format(truth=truth.name, pred=pred.name)
            assert needle.lower() in message.lower(), f"{needle!r} not in {message!r}"
        return message
    assert r.code == 0, f"expected exit 0, got {r.code}; stderr: {r.err[-2000:]}"
    doc = r.json()
    if case.expect.same:
        base_dir = tmp / "clean"
        base_dir.mkdir()
        clean = Files(dir=base_dir, fmt=spec.fmt, truth=spec.truth(), pred=spec.pred())
        rc = cli(*spec.argv(*clean.write()), *case.extra)
        assert rc.code == 0, rc.err
        assert _scrub(rc.out, base_dir) == _scrub(r.out, tmp), "result differs from the clean input's"
    if case.expect.check is not None:
        case.expect.check(doc)
    return doc


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
