"""Multi-label features through every door: the command line (`--multi-label`, a --config file),
the chunked engine and its workers, the Python API; single-label documents unchanged."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import extracteval
from tests.tasks.labels.cases import CASE

VOCAB = ["a", "B", "b ", "c", "n/a", "7", "7.0"]


def _sets(rng: np.random.Generator, n: int) -> list[list[str]]:
    return [list(rng.choice(VOCAB, rng.integers(0, 4))) for _ in range(n)]


def _cell(rng: np.random.Generator, labels: list[str], fmt: str) -> object:
    if fmt == "jsonl" and rng.random() < 0.6:
        return labels  # a JSON list
    if rng.random() < 0.4:
        return json.dumps(labels)  # a JSON list in a text cell
    return " ; ".join(labels)


def _write(rows: list[dict], path, fmt: str) -> None:
    if fmt == "csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        pd.DataFrame(rows).to_parquet(path, index=False)


def _files(tmp_path, fmt: str, n: int = 150):
    rng = np.random.default_rng(11)
    ids = [f"r{i:04d}" for i in range(n)]
    truth = _sets(rng, n)
    keep = rng.random(n) < 0.85
    rows_t = [{"id": i, "tags": _cell(rng, s, fmt), "kind": str(rng.choice(VOCAB))} for i, s in zip(ids, truth)]
    rows_p = [{"id": i, "tags": _cell(rng, s if rng.random() < 0.4 else _sets(rng, 1)[0], fmt), "kind": str(rng.choice(VOCAB))}
              for i, s, k in zip(ids, truth, keep) if k]
    rows_p += [{"id": "z0001", "tags": _cell(rng, ["a"], fmt), "kind": "a"}]  # no truth: after the last truth id
    _write(rows_t, tmp_path / f"t.{fmt}", fmt)
    _write(rows_p, tmp_path / f"p.{fmt}", fmt)
    return tmp_path / f"t.{fmt}", tmp_path / f"p.{fmt}"


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_same_document_in_memory_in_chunks_with_workers_and_from_the_api(cli, tmp_path, fmt):
    t, p = _files(tmp_path, fmt)
    args = ["score", "labels", "--truth", str(t), "--predictions", f"m={p}", "--multi-label", "tags", "--type", "tags=category", "--json"]
    want = cli(*args)
    assert want.code == 0, want.err
    doc = json.loads(want.out)
    fm = doc["models"]["m"]["strict"]["features"]["tags"]
    assert fm["mode"] == "multi_label" and set(fm["labels"]) >= {"a", "b", "c"} and "B" not in fm["labels"]
    assert doc["config"]["multi_label"] == {"tags": ";"} and doc["models"]["m"]["strict"]["features"]["kind"]["mode"] == "macro"
    for extra in (["--chunk-size", "1"], ["--chunk-size", "7"], ["--chunk-size", "7", "--workers", "2"]):
        got = cli(*args, *extra)
        assert got.code == 0, got.err
        assert got.out == want.out, extra
    api = extracteval.score("labels", str(t), {"m": str(p)}, multi_label={"tags": None}, types={"tags": "category"}).to_dict()
    assert api["models"] == doc["models"]


def test_dataframe_list_cells_through_the_api_equal_text_cells():
    truth = pd.DataFrame({"id": ["1", "2", "3"], "tags": [["x", "Y"], [], ["y"]]})
    as_lists = pd.DataFrame({"id": ["1", "2", "3"], "tags": [["y", "x", "x"], ["x"], None]})
    as_text = pd.DataFrame({"id": ["1", "2", "3"], "tags": ["y;x;x", "x", ""]})
    a = extracteval.score("labels", truth, {"m": as_lists}, multi_label={"tags": None}).to_dict()["models"]
    b = extracteval.score("labels", truth, {"m": as_text}, multi_label={"tags": None}).to_dict()["models"]
    assert a == b
    fm = a["m"]["strict"]["features"]["tags"]
    assert fm["correct"] == 1 and fm["subset_accuracy"] == pytest.approx(1 / 3)


def test_multi_label_in_a_config_file_and_with_a_separator(cli, tmp_path):
    (tmp_path / "t.csv").write_text("id,tags\n1,a|b\n2,c\n", encoding="utf-8")
    (tmp_path / "p.csv").write_text("id,tags\n1,b | a\n2,c|a\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text("multi_label:\n  tags: '|'\n", encoding="utf-8")
    base = ["score", "labels", "--truth", str(tmp_path / "t.csv"), "--predictions", f"m={tmp_path / 'p.csv'}", "--json"]
    from_file = cli(*base, "--config", str(tmp_path / "c.yaml"))
    given = cli(*base, "--multi-label", "tags=|")
    assert from_file.code == 0 and given.code == 0, (from_file.err, given.err)
    assert from_file.out == given.out
    fm = json.loads(given.out)["models"]["m"]["strict"]["features"]["tags"]
    assert fm["correct"] == 1 and fm["hamming_loss"] == pytest.approx(1 / 6)
    (tmp_path / "bad.yaml").write_text("multi_label: tags\n", encoding="utf-8")
    r = cli(*base, "--config", str(tmp_path / "bad.yaml"))
    assert r.code == 2 and "'multi_label' must be a mapping" in r.err and "Traceback" not in r.err, r.err


@pytest.mark.parametrize("option, message", [
    ("tags=", "separator must be non-blank text"),
    ("tags= ", "separator must be non-blank text"),
    ("nope", "multi_label given for features ['nope'] that are not scored"),
    ("=;", "expected FEATURE or FEATURE=SEP"),
])
def test_bad_separator_or_unknown_feature_exits_2(cli, tmp_path, option, message):
    (tmp_path / "t.csv").write_text("id,tags\n1,a;b\n", encoding="utf-8")
    r = cli("score", "labels", "--truth", str(tmp_path / "t.csv"), "--predictions", f"m={tmp_path / 't.csv'}", "--multi-label", option, "--json")
    assert r.code == 2 and message in r.err and "Traceback" not in r.err, r.err


def _without_samples(doc):
    if isinstance(doc, dict):
        return {k: _without_samples(v) for k, v in doc.items() if k != "samples"}
    if isinstance(doc, list):
        return [_without_samples(x) for x in doc]
    return doc


def test_single_label_features_are_unchanged_but_for_samples(cli):
    r = cli("score", "labels", *CASE.score_args, "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    for m in doc["models"].values():
        for view in ("aligned", "strict"):
            v = m[view]
            assert set(v["totals"]["samples"]) == {"precision", "recall", "f1"}
            for f, fm in v["features"].items():
                assert fm["mode"] != "multi_label" and not {"micro", "subset_accuracy", "hamming_loss"} & set(fm)
                # one-element sets: a row is right or wrong whole; an aligned row has one label on each side
                if view == "aligned":
                    assert fm["samples"] == {k: pytest.approx(fm["micro_accuracy"]) for k in ("precision", "recall", "f1")}
                assert list(fm).index("samples") == list(fm).index("weighted") + 1
            assert v["totals"]["samples"]["f1"] == pytest.approx(np.mean([fm["samples"]["f1"] for fm in v["features"].values()]))
    assert "multi_label" not in doc["config"]
    assert r.out == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
