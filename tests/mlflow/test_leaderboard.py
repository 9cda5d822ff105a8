"""Leaderboard, compare and rescore against a real (embedded SQLite) tracking store: runs are
logged with planted metrics and per-record Parquet artifacts, then read back by the commands."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.entities import Metric, RunTag
from mlflow.tracking import MlflowClient

from extracteval.core.counts import ratios
from extracteval.mlflow.keys import KeyMap


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """`extracteval …` in-process -> CliResult (code, out, err, json())."""
    from extracteval.cli import main

    def run(*argv: str) -> CliResult:
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
        captured = capsys.readouterr()
        return CliResult(code=code, out=captured.out, err=captured.err)

    return run


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One SQLite store for the module (creating a store runs MLflow's migrations: seconds)."""
    root = tmp_path_factory.mktemp("lb-store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    return MlflowClient(uri), uri


_COUNTER = itertools.count()


def _experiment(client: MlflowClient, tmp_path: Path, name: str) -> str:
    return client.create_experiment(name, artifact_location=(tmp_path / "artifacts" / name).as_uri())


def log_run(client, exp_id, tmp_path, name, metrics, *, truth="T1", config="C1", role="model", task="fields", records=None, parent=None,
            items=None, start=None):
    """One run as `extracteval evaluate` logs it: tags, metrics, metric_keys.json, records.parquet."""
    tags = {"extracteval.task": task, "extracteval.role": role, "extracteval.truth_digest": truth, "extracteval.config_digest": config,
            "extracteval.model": name}
    if parent:
        tags["mlflow.parentRunId"] = parent
    run = client.create_run(exp_id, run_name=name, start_time=start)
    rid = run.info.run_id
    client.log_batch(rid, metrics=[Metric(k, float(v), 0, 0) for k, v in metrics.items()], tags=[RunTag(k, v) for k, v in tags.items()])
    adir = tmp_path / "stage" / rid / "extracteval"
    adir.mkdir(parents=True)
    if items is not None:
        km = KeyMap.build(items)
        (adir / "metric_keys.json").write_text(json.dumps({"names": km.names_table(), "metrics": []}))
    if records is not None:
        records.to_parquet(adir / "records.parquet", index=False)
    client.log_artifacts(rid, str(adir.parent))
    client.set_terminated(rid, "FINISHED")
    return rid


def field_metrics(f1, p, r, fields, keys=None):
    m = {"overall/f1": f1, "overall/precision": p, "overall/recall": r, "overall/accuracy": f1}
    for fname, (ff, fp, fr) in fields.items():
        seg = keys.segment(fname) if keys else fname
        m.update({f"field/{seg}/f1": ff, f"field/{seg}/precision": fp, f"field/{seg}/recall": fr})
    return m


SAME = (0.5, 0.5, 0.5)
# "u": universal tie (0 wins); "a/b" (sanitised to a_b): shared by A and B (1/2 each); "w": E and F
# share it (1/2 each); "x": F alone (1 win)
SIX = {
    "A": (0.80, 0.90, 0.70, {"u": SAME, "a/b": (0.9, 0.9, 0.9), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
    "B": (0.80, 0.85, 0.75, {"u": SAME, "a/b": (0.9, 0.9, 0.9), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
    "C": (0.70, 0.70, 0.80, {"u": SAME, "a/b": (0.2, 0.2, 0.2), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
    "D": (0.70, 0.70, 0.70, {"u": SAME, "a/b": (0.2, 0.2, 0.2), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
    "F": (0.60, 0.60, 0.60, {"u": SAME, "a/b": (0.2, 0.2, 0.2), "w": (0.8, 0.8, 0.8), "x": (0.9, 0.9, 0.9)}),
    "E": (0.60, 0.60, 0.60, {"u": SAME, "a/b": (0.2, 0.2, 0.2), "w": (0.8, 0.8, 0.8), "x": (0.1, 0.1, 0.1)}),
}


def make_six_runs(tmp_path, store):
    client, uri = store
    exp_name = f"planted-{next(_COUNTER)}"
    exp = _experiment(client, tmp_path, exp_name)
    keys = KeyMap.build(["u", "a/b", "w", "x"])
    parent = log_run(client, exp, tmp_path, "comparison", {"overall/f1": 0.99}, role="comparison")
    ids = {}
    for name, (f1, p, r, fields) in SIX.items():
        ids[name] = log_run(client, exp, tmp_path, name, field_metrics(f1, p, r, fields, keys), parent=parent, items=list(fields))
    # an earlier leaderboard run and a run of another experiment are never ranked
    log_run(client, exp, tmp_path, "old leaderboard", {"overall/f1": 1.0}, role="leaderboard")
    other = _experiment(client, tmp_path, f"elsewhere-{exp_name}")
    log_run(client, other, tmp_path, "Z", field_metrics(1.0, 1.0, 1.0, {"u": (1, 1, 1)}))
    return client, uri, exp, ids, exp_name


@pytest.fixture(scope="module")
def six_run_store(tmp_path_factory, store):
    """The planted six-run experiment, shared by the read-only tests of this module."""
    return make_six_runs(tmp_path_factory.mktemp("six"), store)


def test_planted_ties_all_ranks(cli, six_run_store):
    client, uri, _, ids, exp_name = six_run_store
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--json", "--no-log")
    assert r.code == 0, r.err
    doc = r.json()
    ranking = doc["ranking"]
    # A/B: equal F1, precision decides; C/D: equal F1 and precision, recall decides;
    # E/F: fully equal overall, F has more wins (1.5 vs 0.5)
    assert [(e["model"], e["rank"]) for e in ranking] == [("A", 1), ("B", 2), ("C", 3), ("D", 4), ("F", 5), ("E", 6)]
    assert {e["model"]: e["run_id"] for e in ranking} == ids
    assert {e["model"]: e["field_wins"] for e in ranking} == {"A": 0.5, "B": 0.5, "C": 0.0, "D": 0.0, "F": 1.5, "E": 0.5}
    w = doc["field_winners"]
    assert set(w) == {"u", "a/b", "w", "x"}  # the sanitised key a_b is read back as its original name
    assert w["u"]["kind"] == "universal" and w["u"]["win_share"] == 0 and w["u"]["winners"] == ["A", "B", "C", "D", "E", "F"]
    assert w["a/b"]["kind"] == "shared" and w["a/b"]["winners"] == ["A", "B"] and w["a/b"]["badge"] == "blue"
    assert w["x"] == {**w["x"], "kind": "sole", "winners": ["F"], "badge": "green", "win_share": 1.0}
    assert [e["tier"] for e in ranking] == ["good", "good", "good", "good", "needs_improvement", "needs_improvement"]
    for e in ranking:
        assert set(e) >= {"run_id", "model", "rank", "overall", "micro", "field_wins", "tier"}
    assert any("per-record artifact" in n for n in doc["notes"])  # no records.parquet: intervals skipped with a note
    assert doc["n_runs"] == 6


def test_fully_equal_runs_fall_back_to_name(cli, tmp_path, store):
    client, uri = store
    exp = _experiment(client, tmp_path, "names")
    for name in ("zeta", "alpha", "mid"):
        log_run(client, exp, tmp_path, name, field_metrics(0.5, 0.5, 0.5, {"f": SAME}))
    r = cli("leaderboard", "--experiment", "names", "--tracking-uri", uri, "--json", "--no-log", "--no-ci")
    assert [e["model"] for e in r.json()["ranking"]] == ["alpha", "mid", "zeta"]


def test_terminal_table_csv_html_png(cli, six_run_store, tmp_path):
    _, uri, _, _, exp_name = six_run_store
    out = tmp_path / "lb"
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--output", str(out), "--no-log")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert any(l.strip().startswith("#1  A") and "Won 0.5 of 4 fields" in l and "good" in l for l in lines)
    assert any(l.strip().startswith("#5  F") and "Won 1.5 of 4 fields" in l and "needs improvement" in l for l in lines)
    csv = pd.read_csv(out / "leaderboard.csv")
    assert list(csv["model"]) == ["A", "B", "C", "D", "F", "E"] and list(csv["rank"]) == [1, 2, 3, 4, 5, 6]
    winners = pd.read_csv(out / "field_winners.csv")
    assert set(winners["item"]) == {"u", "a/b", "w", "x"}
    html = (out / "leaderboard.html").read_text()
    assert "background:#0a7d28" in html and "background:#1f5fbf" in html  # green sole / blue shared badges
    assert "<script" not in html and "data:image/png;base64," in html
    assert (out / "figures" / "overall.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "figures" / "item_heatmap.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "leaderboard.json").read_text())["ranking"][0]["model"] == "A"


def test_fairness_refused_then_grouped(cli, store, tmp_path):
    client, uri, exp, _, exp_name = make_six_runs(tmp_path, store)  # its own experiment: a run is added
    log_run(client, exp, tmp_path, "edited-truth", field_metrics(0.95, 0.95, 0.95, {"u": (1, 1, 1)}), truth="T2")
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log")
    assert r.code == 2
    assert "refusing to rank" in r.err and "2 groups" in r.err and "edited-truth" in r.err and "Traceback" not in r.err
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--group-by-truth", "--json")
    assert r.code == 0, r.err
    groups = r.json()["groups"]
    assert [[e["model"] for e in g["ranking"]] for g in groups] == [["A", "B", "C", "D", "F", "E"], ["edited-truth"]]
    assert groups[1]["ranking"][0]["rank"] == 1
    assert "ranking" not in r.json()  # several groups: only `groups`
    # the same model name in two groups is not disambiguated (groups are ranked apart); one figure pair per group
    log_run(client, exp, tmp_path, "A", field_metrics(0.5, 0.5, 0.5, {"u": (0.4, 0.4, 0.4)}), truth="T2")
    out = tmp_path / "grouped"
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--group-by-truth", "--no-ci", "--output", str(out))
    assert r.code == 0, r.err
    assert "group 2: truth T2" in r.out
    assert {p.name for p in (out / "figures").iterdir()} == {"overall-group1.png", "item_heatmap-group1.png", "overall-group2.png", "item_heatmap-group2.png"}
    board = pd.read_csv(out / "leaderboard.csv")
    assert list(board[board["group"] == 2]["model"]) == ["edited-truth", "A"]
    # --filter narrows the selection to one group, which is then ranked without --group-by-truth
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--json", "--filter", "tags.`extracteval.truth_digest` = 'T2'")
    assert r.code == 0, r.err
    assert [e["model"] for e in r.json()["ranking"]] == ["edited-truth", "A"]


def test_bad_inputs_exit_2(cli, six_run_store):
    _, uri, _, _, exp_name = six_run_store
    r = cli("leaderboard", "--experiment", "nope", "--tracking-uri", uri, "--no-log")
    assert r.code == 2 and "experiment 'nope' not found" in r.err and "planted" in r.err
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--metric", "no/such")
    assert r.code == 2 and "no/such" in r.err
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--task", "spans")
    assert r.code == 2 and "no extracteval model runs" in r.err
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--filter", "this is not a filter")
    assert r.code == 2 and "--filter" in r.err


def test_metric_option_ranks_by_another_key(cli, six_run_store):
    _, uri, _, _, exp_name = six_run_store
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--json", "--metric", "overall/recall")
    doc = r.json()
    assert doc["primary_metric"] == "overall/recall"
    assert [e["model"] for e in doc["ranking"]][:2] == ["C", "B"]  # recall 0.80, then 0.75


# ---- significance from per-record artifacts ------------------------------------------------------


def _records(correct: np.ndarray, fields=("f", "g")) -> pd.DataFrame:
    """Per-record counts: a correct cell is TP, a wrong one FP+FN; same on every field."""
    n = len(correct)
    rows = []
    for f in fields:
        rows.append(pd.DataFrame({"model": "m", "record_id": [f"r{i:03d}" for i in range(n)], "field": f, "tp": correct.astype(int),
                                  "fp": (~correct).astype(int), "fn": (~correct).astype(int), "tn": 0, "excluded": 0}))
    return pd.concat(rows, ignore_index=True)


def _metrics_of(records: pd.DataFrame) -> dict[str, float]:
    m = {}
    f1s, ps, rs = [], [], []
    for f, g in records.groupby("field"):
        r = ratios(int(g.tp.sum()), int(g.fp.sum()), int(g.fn.sum()), int(g.tn.sum()), zero_division=0.0)
        m.update({f"field/{f}/f1": r["f1"], f"field/{f}/precision": r["precision"], f"field/{f}/recall": r["recall"]})
        f1s.append(r["f1"]); ps.append(r["precision"]); rs.append(r["recall"])  # noqa: E702
    m.update({"overall/f1": float(np.mean(f1s)), "overall/precision": float(np.mean(ps)), "overall/recall": float(np.mean(rs))})
    tot = ratios(int(records.tp.sum()), int(records.fp.sum()), int(records.fn.sum()), int(records.tn.sum()), zero_division=0.0)
    m["micro/f1"] = tot["f1"]
    return m


@pytest.fixture(scope="module")
def significance_store(tmp_path_factory, store):
    tmp_path = tmp_path_factory.mktemp("sig")
    client, uri = store
    exp = _experiment(client, tmp_path, "sig")
    rng = np.random.default_rng(5)
    base = rng.random(500) < 0.8
    noisy = base.copy()
    noisy[[3, 100, 400]] = ~noisy[[3, 100, 400]]  # noise on 3 of 500 records
    better = base | (rng.random(500) < 0.7)
    ids = {}
    for name, correct in (("base", base), ("noisy", noisy), ("better", better)):
        rec = _records(correct)
        ids[name] = log_run(client, exp, tmp_path, name, _metrics_of(rec), records=rec)
    return client, uri, ids


def test_significance_marks(cli, significance_store):
    _, uri, ids = significance_store
    r = cli("leaderboard", "--experiment", "sig", "--tracking-uri", uri, "--json", "--no-log", "--resamples", "500")
    assert r.code == 0, r.err
    doc = r.json()
    order = [e["model"] for e in doc["ranking"]]
    assert order[0] == "better" and set(order[1:]) == {"base", "noisy"}
    comps = {(c["higher"], c["lower"]): c for c in doc["comparisons"]}
    assert comps[("better", order[1])]["significant"] is True
    assert comps[(order[1], order[2])]["significant"] is False
    assert comps[(order[1], order[2])]["verdict"] == "not significantly different"
    for e in doc["ranking"]:
        ci = e["ci"]
        assert ci["low"] <= e["score"] <= ci["high"]
        assert ci["estimate"] == pytest.approx(e["score"], abs=1e-12)  # Parquet and logged metric agree
    r2 = cli("leaderboard", "--experiment", "sig", "--tracking-uri", uri, "--json", "--no-log", "--resamples", "500")
    assert r2.json()["comparisons"] == doc["comparisons"]  # seeded: identical intervals
    r = cli("leaderboard", "--experiment", "sig", "--tracking-uri", uri, "--json", "--no-log", "--no-ci")
    assert all(e["ci"] is None for e in r.json()["ranking"]) and r.json()["comparisons"] == []


def test_compare_decision_with_paired_interval(cli, significance_store):
    _, uri, ids = significance_store
    r = cli("compare", "--baseline", ids["better"], "--candidate", ids["base"], "--tracking-uri", uri, "--json", "--resamples", "500")
    assert r.code == 0, r.err
    d = r.json()
    assert d["metric"] == "overall/f1" and d["baseline"] == "better" and d["candidate"] == "base"
    assert d["gap"] == pytest.approx(d["baseline_value"] - d["candidate_value"])
    assert d["significant"] is True and d["ci"]["low"] > 0 and d["n_records"] == 500
    expected = "fine-tuning recommended" if d["gap"] > 0.15 else ("moderate" if d["gap"] >= 0.05 else "minimal")
    assert d["gap_band"] == expected
    assert d["verdict"] == expected if d["verdict_settled"] else d["verdict"].startswith(f"not settled — leaning {expected} (the 95% interval spans ")
    r = cli("compare", "--experiment", "sig", "--baseline", "base", "--candidate", "noisy", "--tracking-uri", uri, "--json", "--metric", "micro/f1")
    d = r.json()
    assert d["verdict"] == "minimal" and d["significant"] is False and d["metric"] == "micro/f1"
    r = cli("compare", "--experiment", "sig", "--baseline", "base", "--candidate", "noisy", "--tracking-uri", uri)
    assert r.code == 0 and "→ minimal" in r.out and "95% CI" in r.out
    r = cli("compare", "--baseline", ids["base"], "--candidate", ids["base"], "--tracking-uri", uri)
    assert r.code == 2 and "same run" in r.err
    r = cli("compare", "--baseline", "nobody", "--candidate", ids["base"], "--tracking-uri", uri)
    assert r.code == 2 and "--experiment" in r.err


def test_compare_refuses_different_truth(cli, tmp_path, store):
    client, uri = store
    exp = _experiment(client, tmp_path, "unfair")
    a = log_run(client, exp, tmp_path, "a", field_metrics(0.9, 0.9, 0.9, {}))
    b = log_run(client, exp, tmp_path, "b", field_metrics(0.7, 0.7, 0.7, {}), truth="T2")
    r = cli("compare", "--baseline", a, "--candidate", b, "--tracking-uri", uri)
    assert r.code == 2 and "different ground truth" in r.err
    r = cli("compare", "--baseline", a, "--candidate", b, "--tracking-uri", uri, "--allow-different-truth", "--json")
    d = r.json()
    assert d["verdict"] == "not settled — leaning fine-tuning recommended (no interval)" and d["ci"] is None and d["notes"]
    assert d["gap_band"] == "fine-tuning recommended" and d["fine_tuning_recommended"] is False


def test_html_escapes_every_user_string():
    from extracteval.report.leaderboard_views import render_html

    evil = '<script>alert("x")</script>'
    entry = {"run_id": evil, "model": evil, "rank": 1, "score": 0.5, "tie_breaks": {}, "overall": {"f1": 0.5, "precision": 0.5, "recall": 0.5, "accuracy": 0.5},
             "micro": {}, "field_wins": 1.0, "items_scored": 1, "wins_label": "Won 1 of 1", "tier": "needs_improvement", "tier_colour": "red", "ci": None}
    doc = {"task": "fields", "primary_metric": "overall/f1", "tie_breaks": ["overall/precision"], "experiment": evil, "n_runs": 1, "notes": [evil],
           "warnings": [], "groups": [{"truth_digest": evil, "config_digest": evil, "ranking": [entry], "comparisons": [],
                                       "field_winners": {evil: {"kind": "sole", "winners": [evil], "win_share": 1.0, "badge": "green", "best": {"f1": 0.5}}},
                                       "superseded": [{"run_id": evil, "model": evil, "run_name": evil, "start_time": 1, "status": "superseded",
                                                       "superseded_by": evil, "superseded_by_start_time": 2}]}]}
    page = render_html(doc)
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "Superseded runs" in page and page.count("&lt;script&gt;") > render_html({**doc, "groups": [{**doc["groups"][0], "superseded": []}]}).count("&lt;script&gt;")


def test_logging_failure_keeps_the_ranking(cli, six_run_store, monkeypatch):
    _, uri, _, _, exp_name = six_run_store
    import extracteval.mlflow.tracking_leaderboard as lbmod

    def fail(*a, **k):
        raise ConnectionError("Connection refused")

    monkeypatch.setattr(lbmod, "log_leaderboard", fail)
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-ci")
    assert r.code == 1
    assert "#1  A" in r.out  # the table was printed before logging was attempted
    assert "Logging the leaderboard" in r.err and "not reachable" in r.err and "--no-log" in r.err and "Traceback" not in r.err
    assert "Once the tracking server answers again, run the same command again, or pass --no-log" in r.err


def test_other_task_ranked_by_its_primary_metric(cli, store, tmp_path):
    client, uri = store
    exp_name = f"json-{next(_COUNTER)}"
    exp = _experiment(client, tmp_path, exp_name)
    # equal mean RQS: json/accuracy decides; field winners by per-field accuracy
    log_run(client, exp, tmp_path, "j1", {"rqs/mean": 0.8, "json/accuracy": 0.7, "json/completeness": 0.9, "field/name/accuracy": 0.9}, task="json")
    log_run(client, exp, tmp_path, "j2", {"rqs/mean": 0.8, "json/accuracy": 0.75, "json/completeness": 0.5, "field/name/accuracy": 0.6}, task="json")
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--json")
    doc = r.json()
    assert doc["primary_metric"] == "rqs/mean" and [e["model"] for e in doc["ranking"]] == ["j2", "j1"]
    assert doc["field_winners"]["name"]["winners"] == ["j1"]
    # json runs have intervals, but these were logged without a per-record artifact
    assert any("unavailable for j2, j1" in n and "per-record artifact" in n for n in doc["notes"]), doc["notes"]
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log")
    assert "rqs/mean" in r.out and "json/accuracy" in r.out and "Won 1 of 1 fields" in r.out


def test_leaderboard_csv_neutralises_formula_model_names(cli, tmp_path, store):
    client, uri = store
    exp = _experiment(client, tmp_path, "csv-injection")
    for name, f1 in (("=HYPERLINK(\"http://evil\")", 0.9), ("@SUM(A1)", 0.5)):
        log_run(client, exp, tmp_path, name, field_metrics(f1, f1, f1, {"f": SAME}))
    for flag, folder in (("--safe-csv", "safe"), ("--no-safe-csv", "raw")):
        r = cli("leaderboard", "--experiment", "csv-injection", "--tracking-uri", uri, "--output", str(tmp_path / folder),
                "--no-log", "--no-ci", "--no-figures", flag)
        assert r.code == 0, r.err
    safe = pd.read_csv(tmp_path / "safe" / "leaderboard.csv")
    assert list(safe["model"]) == ["'=HYPERLINK(\"http://evil\")", "'@SUM(A1)"]
    assert safe["rank"].tolist() == [1, 2]  # numbers stay numbers
    raw = pd.read_csv(tmp_path / "raw" / "leaderboard.csv")
    assert list(raw["model"]) == ["=HYPERLINK(\"http://evil\")", "@SUM(A1)"]


def _coded_matrix(counts):
    from extracteval.core.run_ranking import paired_record_matrix

    ids, arrays = paired_record_matrix({"x": counts})
    return ids, arrays["x"]


def test_parquet_reader_codes_match_the_dataframe_path(tmp_path):
    # the leaderboard reads artifacts as Parquet dictionary codes; row groups carry their own
    # dictionaries, and a repeated (record, field) row is summed: the result must be exactly the
    # DataFrame path's (what `compare` and earlier versions use)
    from extracteval.mlflow.tracking_leaderboard import _read_record_counts

    rng = np.random.default_rng(2)
    n = 300
    frame = pd.DataFrame({
        "record_id": [f"r{i % 120:03d}" for i in rng.permutation(n)],
        "field": rng.choice(["name", "date", "total", "é"], n),
        **{c: rng.integers(0, 3, n) for c in ("tp", "fp", "fn", "tn")},
        "excluded": 0,
    })
    path = tmp_path / "records.parquet"
    frame.to_parquet(path, index=False, row_group_size=70)  # 5 row groups, 5 dictionaries
    coded = _read_record_counts(path)
    assert coded is not None and len(coded.ids) == 120  # repeats across row groups merged
    ids, arr = _coded_matrix(coded)
    ref_ids, ref = _coded_matrix(frame)
    assert ids == ref_ids and np.array_equal(arr, ref)


def test_parquet_reader_unusual_files(tmp_path):
    from extracteval.mlflow.tracking_leaderboard import _read_record_counts

    # integer record ids and float counts: the DataFrame conversions (astype(str), …) decide
    odd = pd.DataFrame({"record_id": [1, 2, 2], "field": ["a", "b", "a"], "tp": [1.0, 0, 1], "fp": [0.0, 1, 0], "fn": [0.0, 0, 1], "tn": [0.0, 0, 0]})
    odd.to_parquet(tmp_path / "odd.parquet", index=False)
    ids, arr = _coded_matrix(_read_record_counts(tmp_path / "odd.parquet"))
    assert ids == ["1", "2"]
    assert np.array_equal(arr, _coded_matrix(odd)[1])
    # a missing column or a file that is not Parquet: skipped like an absent artifact
    odd.drop(columns="tn").to_parquet(tmp_path / "short.parquet", index=False)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    assert _read_record_counts(tmp_path / "short.parquet") is None
    assert _read_record_counts(tmp_path / "bad.parquet") is None


# ---- repeated runs: latest per model, superseded listing, write-back to new keys ----------------


def _histories(client, run_ids):
    """run id → metric key → [(value, timestamp, step), …] as the store's metric history holds it."""
    out = {}
    for rid in run_ids:
        keys = client.get_run(rid).data.metrics
        out[rid] = {k: [(m.value, m.timestamp, m.step) for m in client.get_metric_history(rid, k)] for k in keys}
    return out


def test_repeated_runs_rank_the_latest_keep_one_rank_key_and_tag_the_superseded(cli, store, tmp_path):
    client, uri = store
    exp_name = f"nightly-{next(_COUNTER)}"
    exp = _experiment(client, tmp_path, exp_name)
    # three nights of A, B, C (one parent each); night 1 had C on top, nights 2 and 3 agree on A > B > C
    nights = {1: {"A": 0.6, "B": 0.5, "C": 0.95}, 2: {"A": 0.9, "B": 0.8, "C": 0.7}, 3: {"A": 0.9, "B": 0.8, "C": 0.7}}
    ids: dict[int, dict[str, str]] = {}
    for night, scores in nights.items():
        start = 1_700_000_000_000 + night * 86_400_000
        parent = log_run(client, exp, tmp_path, f"night {night}", {"overall/f1": 0.9}, role="comparison", start=start)
        ids[night] = {m: log_run(client, exp, tmp_path, m, {**field_metrics(f1, f1, f1, {"f": (f1, f1, f1), "g": (0.5, 0.5, 0.5)}),
                                                            "wins/field_wins": 1.0, "ranking/rank": 1.0},
                                 parent=parent, start=start) for m, f1 in scores.items()}
    everyone = [rid for night in ids.values() for rid in night.values()]
    before = _histories(client, everyone)

    out = tmp_path / "lb"
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--json", "--no-ci", "--output", str(out))
    assert r.code == 0, r.err
    doc = r.json()
    assert [(e["model"], e["run_id"], e["rank"]) for e in doc["ranking"]] == [(m, ids[3][m], k) for k, m in enumerate("ABC", start=1)]
    assert [e["field_wins"] for e in doc["ranking"]] == [1.0, 0.0, 0.0]  # not diluted by the A of nights 1 and 2
    assert doc["run_selection"] == "latest run per model" and doc["n_runs"] == 9 and doc["n_ranked"] == 3 and doc["n_superseded"] == 6
    assert {(s["model"], s["run_id"], s["superseded_by"]) for s in doc["superseded"]} == \
        {(m, ids[n][m], ids[3][m]) for n in (1, 2) for m in "ABC"}
    key, step = doc["leaderboard_key"], doc["leaderboard_step"]
    assert (key, step) == ("leaderboard", 1)

    # the ranked runs got one key each, at step 1; no other key of any run changed, nor its history
    after = _histories(client, everyone)
    for e in doc["ranking"]:
        new = {k: v for k, v in after[e["run_id"]].items() if k not in before[e["run_id"]]}
        assert {k: [(x[0], x[2]) for x in v] for k, v in new.items()} == {"leaderboard/rank": [(float(e["rank"]), 1)],
                                                                        "leaderboard/field_wins": [(e["field_wins"], 1)]}
        tags = client.get_run(e["run_id"]).data.tags
        assert (tags["extracteval.leaderboard_run"], tags["extracteval.leaderboard_step"]) == (doc["leaderboard_run_id"], "1")
        assert "extracteval.superseded_by" not in tags
    for rid in everyone:
        assert {k: v for k, v in after[rid].items() if k in before[rid]} == before[rid]
    for night in (1, 2):  # superseded runs: their metrics untouched, a tag naming the run ranked in their place
        for m, rid in ids[night].items():
            assert after[rid] == before[rid]
            tags = client.get_run(rid).data.tags
            assert "extracteval.leaderboard_run" not in tags
            assert (tags["extracteval.superseded_by"], tags["extracteval.superseded_in"]) == (ids[3][m], doc["leaderboard_run_id"])

    # ranking again: the same key, a second value at step 2 in each ranked run's history
    r2 = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--json", "--no-ci")
    assert r2.code == 0, r2.err
    assert (r2.json()["leaderboard_key"], r2.json()["leaderboard_step"]) == ("leaderboard", 2)
    again = _histories(client, everyone)
    for rid in everyone:
        assert {k: v for k, v in again[rid].items() if not k.startswith("leaderboard/")} == \
            {k: v for k, v in after[rid].items() if not k.startswith("leaderboard/")}
    for e in r2.json()["ranking"]:
        assert sorted((x[2], x[0]) for x in again[e["run_id"]]["leaderboard/rank"]) == [(1, float(e["rank"])), (2, float(e["rank"]))]
    lb_run = client.get_run(r2.json()["leaderboard_run_id"])
    assert lb_run.data.tags["extracteval.leaderboard_step"] == "2" and lb_run.data.tags["extracteval.run_selection"] == "latest run per model"
    assert set(lb_run.data.metrics) <= {"Main/best", "Main/best_lower", "Main/best_upper", "Main/margin", "Main/margin_lower",
                                        "Main/margin_upper", "Main/significant"}
    assert lb_run.data.metrics["Main/best"] == 0.9 and lb_run.data.metrics["Main/margin"] == pytest.approx(0.1)
    # every run ranked (`--all-runs`): the runs superseded before are ranked at step 3 and lose their superseded tags
    r3 = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--json", "--no-ci", "--all-runs")
    assert r3.code == 0, r3.err
    assert r3.json()["leaderboard_step"] == 3
    for rid in ids[1].values():
        tags = client.get_run(rid).data.tags
        assert tags["extracteval.leaderboard_step"] == "3" and "extracteval.superseded_by" not in tags and "extracteval.superseded_in" not in tags

    # the outputs list the superseded runs as such, with the run that replaced them
    csv = pd.read_csv(out / "leaderboard.csv")
    assert list(csv["status"]) == ["ranked"] * 3 + ["superseded"] * 6
    assert csv["rank"].isna().tolist() == [False] * 3 + [True] * 6
    sup = csv[csv["status"] == "superseded"]
    assert dict(zip(sup["run_id"], sup["superseded_by"])) == {ids[n][m]: ids[3][m] for n in (1, 2) for m in "ABC"}
    html = (out / "leaderboard.html").read_text()
    assert "Superseded runs" in html and all(f"<code>{ids[n][m]}</code>" in html for n in (1, 2) for m in "ABC")
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--no-log", "--no-ci")
    assert "3 of 9 runs ranked (latest run per model; 6 earlier runs superseded)" in r.out
    tail = r.out[r.out.index("superseded runs (6) — not ranked"):]
    assert all(ids[1][m] in tail and ids[3][m] in tail for m in "ABC")

    # --all-runs: every run ranked (night 1's C on top), names carry their run ids, nothing superseded
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--json", "--no-log", "--no-ci", "--all-runs")
    assert r.code == 0, r.err
    d = r.json()
    assert d["run_selection"] == "all runs" and d["n_ranked"] == 9 and d["superseded"] == []
    assert d["ranking"][0]["run_id"] == ids[1]["C"] and d["ranking"][0]["model"] == f"C ({ids[1]['C'][:8]})"


def test_a_new_leaderboard_steps_past_the_largest_step_before_it(cli, store, tmp_path):
    """The step of a leaderboard's values is one more than the largest step an earlier leaderboard
    took, so a leaderboard run deleted for good never makes a step repeat."""
    client, uri = store
    exp_name = f"steps-{next(_COUNTER)}"
    exp = _experiment(client, tmp_path, exp_name)
    for m, f1 in (("A", 0.9), ("B", 0.8)):
        log_run(client, exp, tmp_path, m, {**field_metrics(f1, f1, f1, {"f": (f1, f1, f1)}), "wins/field_wins": 1.0})
    earlier = client.create_run(exp, tags={"extracteval.role": "leaderboard", "extracteval.leaderboard_step": "7"})
    client.set_terminated(earlier.info.run_id, "FINISHED")
    r = cli("leaderboard", "--experiment", exp_name, "--tracking-uri", uri, "--json", "--no-ci")
    assert r.code == 0, r.err
    assert r.json()["leaderboard_step"] == 8
    for e in r.json()["ranking"]:
        assert [(m.step, m.value) for m in client.get_metric_history(e["run_id"], "leaderboard/rank")] == [(8, float(e["rank"]))]
