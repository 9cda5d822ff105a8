"""The chunked `labels` engine equals the in-memory one: the same document, byte for byte, for
any chunk size (1 included) and with worker processes, though display labels, the "missing in
every record" check and the id warnings depend on the whole data set."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.chunked import run_chunks
from extracteval.io.wide_tables import TableChunk
from extracteval.tasks.labels.chunked import LabelsTask
from extracteval.tasks.fields.semantics import ModelPredictions
from extracteval.tasks.labels.semantics import FEATURE_TYPES, LabelsConfig, ModelLabels, score_labels
from extracteval.errors import InputError
from extracteval.tasks.labels.inputs import not_predictions

# True / "true" under `category` and 1 / "1" clash in text: their display labels keep the type
# prefix only if both occur somewhere in the data set
VALUE = st.sampled_from(["cat", "Cat ", "dog", "", "n/a", None, "1", 1, 1.0, True, "true", False, "2024-01-02",
                         "02/01/2024", "abc", "1,000", 1000, float("nan"), 10**20, 1e20])
FEATS = ["a", "b", "c"]


@st.composite
def datasets(draw):
    ids = sorted({f"r{draw(st.integers(0, 40))}" for _ in range(draw(st.integers(1, 20)))})
    feats = draw(st.lists(st.sampled_from(FEATS), min_size=1, max_size=3, unique=True))
    truth = pd.DataFrame({f: [draw(VALUE) for _ in ids] for f in feats}, index=pd.Index(ids, dtype=object), dtype=object)
    preds = {}
    for m in draw(st.sampled_from([["m1"], ["m2", "m1"]])):
        rows = [i for i in ids if draw(st.integers(0, 4))]
        rows += draw(st.lists(st.sampled_from(["a0", "q1", "r99", "s5", "z1"]), max_size=3, unique=True))  # ids the truth lacks
        rows = sorted(rows)
        cols = [f for f in feats if draw(st.integers(0, 5))]  # a feature column the model lacks
        values = pd.DataFrame(
            {f: [truth.at[i, f] if i in truth.index and draw(st.booleans()) else draw(VALUE) for i in rows] for f in cols},
            index=pd.Index(rows, dtype=object), dtype=object,
        )
        status = None
        if draw(st.booleans()):
            status = pd.Series([draw(st.sampled_from(["ok", "", None, "pending", "error", "OK "])) for _ in rows], index=values.index, dtype=object)
        preds[m] = (values, status)
    types = {f: draw(st.sampled_from(FEATURE_TYPES)) for f in feats if draw(st.booleans())}
    positive = {f: draw(st.sampled_from(["cat", "1", "true", "ghost", "n/a"])) for f in feats if draw(st.integers(0, 3)) == 0}
    return truth, preds, LabelsConfig(types=types, positive_labels=positive, zero_division=draw(st.sampled_from([0.0, 1.0])))


def in_memory(truth, preds, cfg):
    models, notes = [], []
    for m, (values, status) in preds.items():
        if status is not None:
            bad = not_predictions(status, f"{m}.csv")
            if bad.sum():
                values = values.loc[~bad]
                notes.append(f"model {m!r}: {int(bad.sum())} row(s) with status pending/error are not predictions (counted as missing in the strict view)")
        models.append(ModelLabels(name=m, values=values, source=f"{m}.csv"))
    return score_labels(truth, models, config=cfg, truth_source="t.csv"), notes


def split(truth, preds, size, drop_empty_columns=False):
    """As `tasks.fields.chunks` does: truth chunks of `size` ids, each with the predicted rows whose
    ids are ≤ its last id; predicted rows after the last truth id in chunks without truth rows.
    `drop_empty_columns`: a column all None in a chunk is left out, as a JSONL chunk does."""

    def frame(f):
        return f[[c for c in f.columns if f[c].notna().any()]] if drop_empty_columns else f

    def models(lo, hi):
        out = []
        for m, (values, status) in preds.items():
            ids = values.index.to_numpy(dtype=object)
            keep = (ids > lo if lo is not None else np.ones(len(ids), bool)) & (ids <= hi if hi is not None else True)
            out.append(ModelPredictions(name=m, values=frame(values.loc[keep]), status=None if status is None else status.loc[keep], source=f"{m}.csv"))
        return out

    ids = truth.index.to_numpy(dtype=object)
    last = None
    for k in range(0, len(ids), size):
        part = truth.iloc[k : k + size]
        yield TableChunk(truth=frame(part), predictions=models(last, ids[min(k + size, len(ids)) - 1]))
        last = ids[min(k + size, len(ids)) - 1]
    tail = models(last, None)
    if any(len(p.values) for p in tail):
        yield TableChunk(truth=truth.iloc[:0], predictions=tail)


def outcome(fn):
    try:
        result, notes = fn()
    except InputError as e:
        return f"InputError: {e}"
    return json.dumps([result.to_dict(), notes])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]), drop=st.booleans())
def test_chunked_document_is_byte_identical(data, size, drop):
    truth, preds, cfg = data
    task = LabelsTask(config=cfg, features=tuple(truth.columns), truth_source="t.csv", sources={m: f"{m}.csv" for m in preds})
    want = outcome(lambda: in_memory(truth, preds, cfg))
    got = outcome(lambda: run_chunks(task, split(truth, preds, size, drop))[0])
    assert got == want


def test_display_labels_are_resolved_over_the_whole_data_set():
    # an object and a text that reads as the object's canonical form (category) both read
    # '{"a": "t:1"}': each chunk alone would label its one value so, the whole data set must keep
    # the type prefixes apart
    truth = pd.DataFrame({"a": [{"a": 1}, '{"a": "t:1"}']}, index=["r1", "r2"], dtype=object)
    preds = {"m": (truth.copy(), None)}
    cfg = LabelsConfig(types={"a": "category"})
    task = LabelsTask(config=cfg, features=("a",), truth_source="t.csv", sources={"m": "m.csv"})
    (got, _), _ = run_chunks(task, split(truth, preds, 1))
    assert list(got.models["m"].strict.features["a"].labels) == ['j:{"a": "t:1"}', 't:{"a": "t:1"}']
    assert json.dumps(got.to_dict()) == json.dumps(in_memory(truth, preds, cfg)[0].to_dict())


def test_feature_missing_in_every_record_is_caught_across_chunks():
    truth = pd.DataFrame({"a": ["x", "y"], "b": [None, "n/a"]}, index=["r1", "r2"], dtype=object)
    task = LabelsTask(config=LabelsConfig(), features=("a", "b"), truth_source="t.csv", sources={"m": "m.csv"})
    with pytest.raises(InputError, match="feature 'b' is missing"):
        run_chunks(task, split(truth, {"m": (truth.copy(), None)}, 1))
    truth.loc["r2", "b"] = "z"  # present in one chunk only: scored
    run_chunks(task, split(truth, {"m": (truth.copy(), None)}, 1))


def _write(frame: pd.DataFrame, path, fmt: str):
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as fh:
            for rec in frame.to_dict("records"):
                fh.write(json.dumps({k: v for k, v in rec.items() if v != ""}) + "\n")  # keys missing here and there
    else:
        frame.to_parquet(path, index=False)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_cli_chunked_with_workers_equals_in_memory(cli, tmp_path, fmt):
    rng = np.random.default_rng(7)
    n = 400
    ids = [f"d{i:04d}" for i in range(n)]
    vocab = np.asarray(["cat", "Cat", "dog", "", "n/a", "7", "7.0", "2024-03-01", "abc"], dtype=object)
    truth = pd.DataFrame({"id": ids, "kind": rng.choice(vocab, n), "amount": rng.choice(vocab, n)})
    keep = rng.random(n) < 0.85
    a = pd.DataFrame({"id": np.asarray(ids, dtype=object)[keep], "kind": rng.choice(vocab, keep.sum()), "amount": rng.choice(vocab, keep.sum())})
    a["status"] = rng.choice(np.asarray(["ok", "ok", "pending", ""], dtype=object), keep.sum())
    b = truth.copy()
    b["kind"] = rng.choice(vocab, n)
    b = pd.concat([b, pd.DataFrame({"id": ["e0001", "e0002"], "kind": ["cat", "dog"], "amount": ["1", "2"]})])  # after the last truth id
    for name, f in (("t", truth), ("a", a), ("b", b.drop(columns=["amount"]))):
        _write(f, tmp_path / f"{name}.{fmt}", fmt)
    args = ["--truth", str(tmp_path / f"t.{fmt}"), "--predictions", f"a={tmp_path / f'a.{fmt}'}", "--predictions", f"b={tmp_path / f'b.{fmt}'}",
            "--type", "amount=number", "--positive-label", "kind=cat", "--json"]
    want = cli("score", "labels", *args)
    assert want.code == 0, want.err
    for extra in (["--chunk-size", "1"], ["--chunk-size", "37", "--workers", "2", "--output", str(tmp_path / "out")]):
        got = cli("score", "labels", *args, *extra)
        assert got.code == 0, got.err
        assert got.out == want.out
    assert json.loads((tmp_path / "out" / "result.json").read_text()) == json.loads(want.out)
    assert (tmp_path / "out" / "feature_metrics.csv").is_file()


def test_cli_refuses_what_cannot_be_streamed(cli, tmp_path, pyspark_or_not):
    (tmp_path / "t.csv").write_text("id,a\nb,x\na,y\n")
    (tmp_path / "p.json").write_text('[{"id": "a", "a": "y"}]')
    (tmp_path / "p.csv").write_text("id,a\na,y\n")
    base = ["score", "labels", "--truth", str(tmp_path / "t.csv")]
    r = cli(*base, "--predictions", f"p={tmp_path / 'p.csv'}", "--chunk-size", "5")
    assert r.code == 2 and "t.csv: line 3: record id 'a' is out of order" in r.err and "Traceback" not in r.err, r.err
    r = cli(*base, "--predictions", f"p={tmp_path / 'p.json'}", "--chunk-size", "5")
    assert r.code == 2 and "drop --chunk-size" in r.err, r.err
    r = cli(*base, "--predictions", f"p={tmp_path / 'p.csv'}", "--engine", "spark", "--chunk-size", "5")
    assert r.code == 2 and "--chunk-size/--workers are for the local engine" in r.err, r.err
