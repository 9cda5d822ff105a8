"""`extracteval evaluate json --chunk-size/--workers` on data with what the json task counts
apart: pending and failed records, missing and invalid predictions, safety scores, nested
objects, extra keys. The streamed evaluation logs what the in-memory one logs (two real SQLite
tracking stores compared) and renders the same report; the report's per-record parts (lowest-
scoring records, RQS histogram) come from the streamed records.parquet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.scale.stores import assert_same_stores, evaluate_task


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _generated(tmp: Path, n: int, seed: int) -> list[str]:
    """JSONL files sorted by id: the truth, model `a` in the records layout (safety scores,
    dropped and invented keys, missing records), model `b` in the pairs layout (statuses,
    outputs that are not JSON objects)."""
    rng = np.random.default_rng(seed)
    names = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "ada lovelace", "N/A", ""]
    cities = ["Zürich", "London", "Paris", None]
    ids = [f"r{i:04d}" for i in range(n)]
    truth = []
    for rid in ids:
        obj = {"id": rid, "name": str(rng.choice(names)), "age": int(rng.integers(18, 90)) if rng.random() < 0.8 else None,
               "address": {"city": rng.choice(cities), "zip": str(rng.integers(1000, 9999))}, "tags": [str(t) for t in rng.choice(["x", "y", "z"], 2)]}
        truth.append(obj)
    a, b = [], []
    for t in truth:
        if rng.random() < 0.9:
            p = {k: v for k, v in t.items() if rng.random() < 0.8 or k == "id"}
            if rng.random() < 0.3:
                p["note"] = "invented"
            if rng.random() < 0.3:
                p["name"] = str(rng.choice(names))
            if rng.random() < 0.5:
                p["safety_score"] = float(rng.choice([0.0, 0.5, 1.0]))
            a.append(p)
        if rng.random() < 0.9:
            pred = {k: v for k, v in t.items() if k != "id" and rng.random() < 0.7}
            cell: dict = {"id": t["id"], "prediction": [pred, "not json", [1, 2], pred, pred][int(rng.integers(5))]}
            status = str(rng.choice(["ok", "ok", "ok", "pending", "error"]))
            if status != "ok" or rng.random() < 0.5:
                cell["status"] = status
            b.append(cell)
    _jsonl(tmp / "truth.jsonl", truth)
    _jsonl(tmp / "a.jsonl", a)
    _jsonl(tmp / "b.jsonl", b)
    return ["--truth", str(tmp / "truth.jsonl"), "--predictions", f"a={tmp / 'a.jsonl'}", "--predictions", f"b={tmp / 'b.jsonl'}"]


def _reports(out: Path) -> dict[str, bytes]:
    """Each report, without the time the parent run is named with."""
    import re

    stamp = re.compile(rb" \xc2\xb7 \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    return {str(p.relative_to(out)): stamp.sub(b"", p.read_bytes()) for p in sorted(out.rglob("report.html"))}


@pytest.mark.parametrize("extra", [["--chunk-size", "1"], ["--chunk-size", "4", "--workers", "2"]])
def test_streamed_json_evaluation_logs_and_reports_what_the_in_memory_one_does(cli, tmp_path, monkeypatch, extra):
    monkeypatch.chdir(tmp_path)
    args = [*_generated(tmp_path, 40, 3), "--flatten"]
    want = evaluate_task(cli, "json", args, tmp_path, "memory")
    got = evaluate_task(cli, "json", args, tmp_path, "chunked", *extra)
    assert_same_stores(want, got, tmp_path)
    reports = _reports(tmp_path / "memory-out")
    assert len(reports) == 3 and b"Lowest-scoring records" in next(iter(reports.values()))
    assert _reports(tmp_path / "chunked-out") == reports


def test_streamed_json_rqs_histogram_reads_the_streamed_records(tmp_path):
    from extracteval.cli import build_parser
    from extracteval.mlflow.stream import score_streamed
    from extracteval.mlflow.adapters import get_adapter

    args = build_parser().parse_args(["evaluate", "json", *_generated(tmp_path, 25, 8), "--experiment", "e"])
    adapter = get_adapter("json")
    memory = adapter.score_args(args)
    streamed = score_streamed(adapter, args, engine="chunked", chunk_size=6, workers=1, workdir_parent=tmp_path / "work")
    for m in memory.models:
        want, got = adapter._rqs(memory, m), adapter._rqs(streamed, m)
        assert len(want) == 25 and got.equals(want)

    def lowest(scored):  # type: ignore[no-untyped-def]
        section = next(s for s in adapter.sections(scored, list(scored.models)) if s.title.startswith("Lowest-scoring records"))
        return section.table

    want = lowest(memory)
    assert len(want) == 20
    assert lowest(streamed).equals(want)
    figures = adapter.figures(streamed, list(streamed.models))
    assert set(figures) == {"rqs_histogram.png", "field_accuracy.png", "bucket_counts.png"}
