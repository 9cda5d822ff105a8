"""`extracteval evaluate spans --chunk-size/--workers` on the inputs the registry example does not
cover: tags that only some chunks know, documents without any span, per-document rows that cross
the expansion's read batches (logged exactly as the in-memory `evaluate spans` logs them, read
back from two real SQLite tracking stores); token files, which it refuses."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from extracteval.tasks.spans import records as spans_records
from tests.scale.stores import assert_same_stores, evaluate_task


def _conll(tmp: Path) -> list[str]:
    """Two token files (gold and predicted tag columns), 23 sentences; one tag occurs only in the
    last sentences, several sentences hold no chunk."""
    for name, noise in (("a", 0.1), ("b", 0.35)):
        rng, slip = random.Random(3), random.Random(name)  # the same tokens and gold tags in both files
        lines = []
        for s in range(23):
            tags = ["LATE"] if s > 19 else ["PER", "ORG", "LOC"]
            for k in range(rng.randint(1, 6)):
                gold = "O" if s % 5 == 0 or rng.random() < 0.4 else f"{'B' if k == 0 or rng.random() < 0.5 else 'I'}-{rng.choice(tags)}"
                pred = gold if slip.random() > noise else slip.choice(["O", "B-PER", "I-ORG", "B-LOC"])
                lines.append(f"w{s}_{k} NN {gold} {pred}")
            lines.append("")
        (tmp / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["--conll", f"a={tmp / 'a.txt'}", "--conll", f"b={tmp / 'b.txt'}", "--resamples", "50"]


def _jsonl(tmp: Path) -> list[str]:
    """Documents in id order, a tag only the last document has, documents with no span at all."""
    text = "Alice met Bob in Paris on Monday."
    gold = {"d01": [[0, 5, "PER"], [10, 13, "PER"]], "d02": [], "d03": [[17, 22, "LOC"]], "d04": [], "d05": [[26, 32, "DATE"]]}
    pred = {"d01": [[0, 5, "PER"]], "d02": [], "d03": [[17, 22, "PER"]], "d04": [[0, 5, "ORG"]], "d05": [[26, 31, "DATE"]]}

    def spans(rows: list) -> list[dict]:
        return [{"start": s, "end": e, "tag": t} for s, e, t in rows]

    (tmp / "truth.jsonl").write_text("".join(json.dumps({"id": i, "text": text, "gold": spans(g)}) + "\n" for i, g in gold.items()))
    (tmp / "m.jsonl").write_text("".join(json.dumps({"id": i, "pred": spans(p)}) + "\n" for i, p in pred.items()))
    return ["--truth", str(tmp / "truth.jsonl"), "--predictions", f"m={tmp / 'm.jsonl'}", "--resamples", "50"]


def test_token_files_are_evaluated_in_memory_only(cli, tmp_path):
    # their documents are named by line (`line 10` comes after `line 9`), not in id order
    args = _conll(tmp_path)
    uri = f"sqlite:///{tmp_path / 'x.db'}"
    res = cli("evaluate", "spans", *args, "--experiment", "e", "--tracking-uri", uri, "--chunk-size", "4")
    assert res.code == 2 and "evaluate spans streams JSONL documents only" in res.err and "Traceback" not in res.err, res.err
    assert cli("score", "spans", *args, "--chunk-size", "4", "--json").out == cli("score", "spans", *args, "--json").out
    assert cli("evaluate", "spans", *args, "--experiment", "e", "--tracking-uri", uri, "--no-figures").code == 0


def test_every_document_gets_every_tag_of_the_evaluation(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(spans_records, "_BATCH", 2)  # a document's compact rows cross read batches
    args = _jsonl(tmp_path)
    want = evaluate_task(cli, "spans", args, tmp_path, "memory")
    got = evaluate_task(cli, "spans", args, tmp_path, "chunked", "--chunk-size", "1")
    assert_same_stores(want, got, tmp_path)
    client = MlflowClient(got)
    run = client.search_runs([client.get_experiment_by_name("e").experiment_id])[0]
    rows = pd.read_parquet(client.download_artifacts(run.info.run_id, "extracteval/records.parquet", str(tmp_path / "dl")))
    # 5 documents × 4 tags (DATE, LOC, ORG, PER) × 3 modes (exact, relaxed@0.5, relaxed@0.8)
    assert len(rows) == 5 * 4 * 3
    assert set(rows.loc[rows["record_id"] == "d02", "tag"].astype(str)) == {"DATE", "LOC", "ORG", "PER"}
    # exact: Alice; relaxed@0.5 and @0.8 also Monday against Monda
    assert rows[["tp", "fp", "fn"]].sum().tolist() == [1 + 2 + 2, 3 + 2 + 2, 3 + 2 + 2]


def test_no_span_anywhere(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "truth.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": "nothing here", "gold": []}) + "\n" for i in range(3)))
    (tmp_path / "m.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "pred": []}) + "\n" for i in range(3)))
    args = ["--truth", str(tmp_path / "truth.jsonl"), "--predictions", f"m={tmp_path / 'm.jsonl'}", "--resamples", "20"]
    want = evaluate_task(cli, "spans", args, tmp_path, "memory")
    got = evaluate_task(cli, "spans", args, tmp_path, "chunked", "--chunk-size", "2")
    assert_same_stores(want, got, tmp_path)
