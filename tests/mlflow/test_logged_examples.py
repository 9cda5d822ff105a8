"""`compare` and `leaderboard` over runs that `extracteval evaluate` logged, for every task, from
the bundled examples (experiments/): what a user gets after evaluating each model separately.

Each example's README `score` command (tested on its own in tests/test_experiments.py) becomes
one `evaluate` per model into the experiment `sep-<task>` (runs logged apart, so any item win the
leaderboard shows comes from the runs' per-item metrics, not from a shared scoring), and one
`evaluate` of all models into `all-<task>`, whose child runs carry the wins the task itself
computed in one process: the oracle the cross-run leaderboard must agree with. Everything runs in
a copy of experiments/ in tmp with an embedded SQLite store there.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from extracteval.core.decision import DecisionThresholds, verdict_for, verdict_text
from extracteval.tasks import RANKING_SPECS
from extracteval.core.ranking import format_wins
from tests.test_readme import readme_blocks

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Track:
    example: str
    task: str
    predictions: dict[str, str]  # model → file, in README order
    options: tuple[str, ...]  # the README command's other options (truth, config files)


def _tracks() -> list[Track]:
    out = []
    for readme in sorted((REPO / "experiments").glob("*/README.md")):
        for block in readme_blocks(readme.read_text(encoding="utf-8")):
            if "runnable" not in block.markers:
                continue
            for line in block.text.replace("\\\n", " ").splitlines():
                argv = shlex.split(line, comments=True)
                if argv[:2] != ["extracteval", "score"]:
                    continue
                preds, rest, i = {}, [], 3
                while i < len(argv):
                    if argv[i] == "--predictions":
                        name, _, path = argv[i + 1].partition("=")
                        preds[name] = path
                    elif argv[i] not in ("--baseline", "--candidate"):  # the decision needs both models in one run
                        rest.append(argv[i])
                        i += 1
                        continue
                    i += 2
                out.append(Track(example=readme.parent.name, task=argv[2], predictions=preds, options=tuple(rest)))
    return out


TRACKS = {t.task: t for t in _tracks()}
TASKS = sorted(TRACKS)
ITEM_LABELS = {"fields": "fields", "json": "fields", "spans": "tags", "entities": "features", "labels": "features",
               "structured": "fields", "toolcalls": "functions"}


def _main(*argv: str) -> tuple[int, str, str]:
    from tests.conftest import run_cli

    r = run_cli(*argv)
    return r.code, r.out, r.err


def test_every_task_has_an_example_command(product_tasks_only: None) -> None:
    from extracteval.tasks import TASKS as REGISTRY

    assert set(TASKS) == set(REGISTRY) == set(ITEM_LABELS) and set(TASKS) <= set(RANKING_SPECS)
    assert all(len(t.predictions) >= 3 for t in TRACKS.values())


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("logged-examples")
    shutil.copytree(REPO / "experiments", root / "experiments", ignore=shutil.ignore_patterns("__pycache__"))
    uri = f"sqlite:///{root / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # the store's artifacts (./mlartifacts) and the README's relative paths
        for t in TRACKS.values():
            common = ("--tracking-uri", uri, "--no-figures", "--json", *t.options)
            for model, path in t.predictions.items():
                code, _, err = _main("evaluate", t.task, "--predictions", f"{model}={path}", "--experiment", f"sep-{t.task}", *common)
                assert code == 0, err
            every = [a for m, p in t.predictions.items() for a in ("--predictions", f"{m}={p}")]
            code, _, err = _main("evaluate", t.task, *every, "--experiment", f"all-{t.task}", *common)
            assert code == 0, err
    return uri, root


def _model_runs(uri: str, experiment: str) -> dict[str, object]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], filter_string="tags.`extracteval.role` != 'comparison'")
    return {r.data.tags["extracteval.model"]: r for r in runs}


# ---- compare ---------------------------------------------------------------------------------

def _baseline_candidate(task: str) -> tuple[str, str]:
    models = list(TRACKS[task].predictions)
    return models[0], models[-1]


@pytest.mark.parametrize("task", TASKS)
def test_compare_two_logged_runs_of_every_task(task: str, logged, monkeypatch: pytest.MonkeyPatch) -> None:
    uri, root = logged
    monkeypatch.chdir(root)
    baseline, candidate = _baseline_candidate(task)
    code, out, err = _main("compare", "--experiment", f"sep-{task}", "--baseline", baseline, "--candidate", candidate, "--tracking-uri", uri, "--json")
    assert code == 0, err
    assert "Traceback" not in err
    d = json.loads(out)
    runs = _model_runs(uri, f"sep-{task}")
    metric = RANKING_SPECS[task].primary
    bv, cv = runs[baseline].data.metrics[metric], runs[candidate].data.metrics[metric]
    assert d["metric"] == metric and d["baseline_value"] == pytest.approx(bv) and d["candidate_value"] == pytest.approx(cv)
    assert d["gap"] == pytest.approx(bv - cv) and d["gap_band"] == verdict_for(bv - cv)
    ci = d["ci"] or {}
    assert d["verdict"] == verdict_text(bv - cv, ci.get("low"), ci.get("high"), DecisionThresholds())
    # every task's primary metric is recomputable from its records.parquet
    assert d["ci"] is not None and d["n_records"] >= 50, d["notes"]
    assert d["ci"]["low"] <= d["gap"] <= d["ci"]["high"]


# the seed-004 metrics of each track, by the name `score --decision-metric` and the run keys use
DECISION_METRICS = {
    "structured": ("field_f1", "exact_match_rate", "json_valid_rate", "strict_json_valid_rate"),
    "toolcalls": ("call_accuracy", "args_f1", "valid_call_rate", "name_match_rate"),
}


@pytest.mark.parametrize(("task", "leaf"), [(t, m) for t, ms in DECISION_METRICS.items() for m in ms])
def test_compare_of_logged_runs_equals_the_decision_scored_in_one_process(task: str, leaf: str, logged, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs logged apart give the verdict and the paired interval that `score --baseline
    --candidate` gives on the same files (same seed and resamples; the example's ids sort as text
    in file order, so both bootstraps resample the same record sequence)."""
    uri, root = logged
    monkeypatch.chdir(root)
    baseline, candidate = "gpt-4o", "qwen2.5-1.5b"  # the slm-vs-llm decision of experiment.yaml
    t = TRACKS[task]
    code, out, err = _main("compare", "--experiment", f"sep-{task}", "--baseline", baseline, "--candidate", candidate,
                           "--metric", f"{task}/{leaf}", "--tracking-uri", uri, "--json")
    assert code == 0, err
    got = json.loads(out)
    code, out, err = _main("score", task, *t.options, "--predictions", f"{baseline}={t.predictions[baseline]}",
                           "--predictions", f"{candidate}={t.predictions[candidate]}", "--baseline", baseline,
                           "--candidate", candidate, "--decision-metric", leaf, "--json")
    assert code == 0, err
    want = json.loads(out)["decision"]
    assert got["verdict"] == want["verdict"] and got["gap"] == pytest.approx(want["gap"])
    assert got["ci"] is not None, got["notes"]
    assert (got["ci"]["low"], got["ci"]["high"]) == pytest.approx((want["ci"]["low"], want["ci"]["high"]))
    assert got["n_records"] == want["n_records"] and got["verdict_range"] == want["verdict_range"]
    assert not got["notes"], got["notes"]  # the records give back exactly the logged metrics


# ---- leaderboard -----------------------------------------------------------------------------

@pytest.mark.parametrize("task", TASKS)
def test_leaderboard_of_runs_logged_apart_finds_the_tasks_own_item_winners(task: str, logged, monkeypatch: pytest.MonkeyPatch) -> None:
    uri, root = logged
    monkeypatch.chdir(root)
    code, out, err = _main("leaderboard", "--experiment", f"sep-{task}", "--tracking-uri", uri, "--no-log", "--json")
    assert code == 0, err
    doc = json.loads(out)
    label = ITEM_LABELS[task]
    ranking = doc["ranking"]
    assert doc["item_label"] == label and len(ranking) == len(TRACKS[task].predictions)
    assert [e["rank"] for e in ranking] == list(range(1, len(ranking) + 1))
    scores = [e["score"] for e in ranking]
    assert scores == sorted(scores, reverse=True)
    items = doc["field_winners"]
    won = sum(w["win_share"] for w in items.values() for _ in w["winners"])
    assert items and 0 < won <= len(items)
    assert sum(e["field_wins"] for e in ranking) == pytest.approx(won)
    for e in ranking:
        assert 0 <= e["field_wins"] <= e["items_scored"] <= len(items)
        assert e["wins_label"] == f"Won {format_wins(e['field_wins'])} of {e['items_scored']} {label}"
    # the runs were logged one model at a time (each logged 0 wins: alone, every item is a
    # universal tie); the wins must be those the task computes with all models in one process
    oracle = {m: r.data.metrics["wins/field_wins"] for m, r in _model_runs(uri, f"all-{task}").items()}
    assert {e["model"]: e["field_wins"] for e in ranking} == pytest.approx(oracle)
    code, text, err = _main("leaderboard", "--experiment", f"sep-{task}", "--tracking-uri", uri, "--no-log")
    assert code == 0, err
    assert f"{label} won" in text and f"{label.rstrip('s')} winners:" in text
    for e in ranking:
        assert e["wins_label"] in text
