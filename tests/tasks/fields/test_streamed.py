"""`extracteval evaluate fields --chunk-size/--workers`: the streamed evaluation logs exactly what the
in-memory one logs — every metric, param, tag (truth digest included), the dataset input and the
artifact listing, with the same Parquet rows — read back from two real SQLite tracking stores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tests.scale.stores import assert_same_stores as _assert_same
from tests.scale.stores import store as _store

# The bundled contracts example, streamed by chunks of 1 and 7 (with two workers), is compared with
# its in-memory evaluation for every task in tests/contract/test_engines.py; here: generated
# data with figures and intervals, one model with --json, record blocks that straddle chunks.


def _evaluate(cli, args: list[str], tmp: Path, name: str, *extra: str) -> tuple[str, Path]:
    uri = f"sqlite:///{tmp / f'{name}.db'}"
    out = tmp / f"{name}-out"
    res = cli("evaluate", "fields", *args, "--experiment", "e", "--tracking-uri", uri, "--output", str(out), *extra)
    assert res.code == 0, res.err
    return uri, out


def _generated(tmp: Path, n: int, seed: int) -> list[str]:
    """Wide CSV files sorted by id, with empty cells, JSON lists, missing records, a status column
    and a prediction column that the truth has not."""
    rng = np.random.default_rng(seed)
    ids = sorted(f"doc-{i:05d}" for i in range(n))
    vocab = np.asarray(["alpha", "Beta", "beta ", "N/A", "", "2024-03-01", "7", "7.0", '["a", "b"]', "Zürich"], dtype=object)
    truth = pd.DataFrame({"id": ids, **{f: rng.choice(vocab, n) for f in ("vendor", "date", "amount", "tags")}})
    truth.to_csv(tmp / "truth.csv", index=False)
    args = ["--truth", str(tmp / "truth.csv")]
    for m in ("a", "b"):
        keep = rng.random(n) < 0.85
        pred = pd.DataFrame({"id": np.asarray(ids)[keep], **{f: rng.choice(vocab, keep.sum()) for f in ("vendor", "date", "amount", "extra")}})
        pred["status"] = rng.choice(np.asarray(["ok", "ok", "ok", "error"], dtype=object), keep.sum())
        pred.to_csv(tmp / f"{m}.csv", index=False)
        args += ["--predictions", f"{m}={tmp / f'{m}.csv'}"]
    return args


def test_generated_data_streamed_with_figures_logs_the_same(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = _generated(tmp_path, 1500, 3) + ["--resamples", "200"]
    want, _ = _evaluate(cli, args, tmp_path, "memory")
    got, _ = _evaluate(cli, args, tmp_path, "chunked", "--chunk-size", "250")
    _assert_same(want, got, tmp_path)
    runs = _store(got, "e")
    assert any(k.endswith("/ci_low") for r in runs.values() for k in r["metrics"])  # per-field intervals were compared
    assert all("figures/field_f1.png" in r["artifacts"] for r in runs.values())


def test_one_model_streamed_with_json_output(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = _generated(tmp_path, 300, 5)[:4] + ["--json", "--no-figures"]
    uri = f"sqlite:///{tmp_path / 's.db'}"
    res = cli("evaluate", "fields", *args, "--experiment", "e", "--tracking-uri", uri, "--chunk-size", "64")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    ref = cli("score", "fields", *args[:-1])
    assert res.code == 0
    mlflow = doc.pop("mlflow")
    assert doc == json.loads(ref.out) and mlflow["output"] is None and len(mlflow["run_ids"]) == 1


def test_many_distinct_patterns_streamed_in_record_blocks_log_the_same(cli, tmp_path, monkeypatch):
    # On data where nearly every record is distinct the ledger keeps no full-width patterns and
    # the bootstrap streams the spilled rows back in blocks of records that straddle chunks;
    # forced here on 1,500 records (blocks of 100, chunks of 250). The intervals must still be
    # exactly the in-memory ones.
    import extracteval.core.bootstrap as bootstrap

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bootstrap, "PATTERN_ENTRIES", 64)
    monkeypatch.setattr(bootstrap, "_DRAW_ENTRIES", 200 * 100)
    args = _generated(tmp_path, 1500, 5) + ["--resamples", "200"]
    want, _ = _evaluate(cli, args, tmp_path, "memory", "--no-figures")
    got, _ = _evaluate(cli, args, tmp_path, "chunked", "--no-figures", "--chunk-size", "250")
    _assert_same(want, got, tmp_path)
    runs = _store(got, "e")
    assert any(k.endswith("/ci_low") for r in runs.values() for k in r["metrics"])
