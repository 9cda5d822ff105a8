"""One primary metric per task, everywhere: the task's own ranking (the report and the parent
run), `extracteval leaderboard` and the default metric of `extracteval compare` all read the one
declaration in `core.ranking.RANKING_SPECS`; and a model run's report is of that model.

Every task's bundled example (experiments/, the README `score` command of each) is evaluated with
all its models into an embedded SQLite store in tmp (the session's `evaluated`, in
tests/fixtures/tracking.py; test_intervals.py reads the same store).
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from extracteval.core.ranking import rank_by_metrics
from extracteval.tasks import RANKING_SPECS
from extracteval.mlflow.adapters import TASKS as REGISTRY
from tests.contract.cases import task_cases
from tests.fixtures.tracking import comparison_figures
from tests.mlflow.test_logged_examples import REPO, TRACKS, _main


def test_every_registered_task_declares_its_ranking() -> None:
    """A task added to the registry without a ranking declaration fails here."""
    assert set(REGISTRY) <= set(RANKING_SPECS), sorted(set(REGISTRY) - set(RANKING_SPECS))
    assert set(REGISTRY) <= set(TRACKS) | set(task_cases()), "every task needs an example: in experiments/, or in its cases"


def _runs(client: MlflowClient, task: str) -> tuple[object, list[object]]:
    exp = client.get_experiment_by_name(f"primary-{task}")
    runs = client.search_runs([exp.experiment_id])
    parent = next(r for r in runs if r.data.tags["extracteval.role"] == "comparison")
    children = sorted((r for r in runs if r.data.tags["extracteval.role"] == "model"), key=lambda r: int(r.data.tags["extracteval.rank"]))
    return parent, children


def _report(client: MlflowClient, run_id: str, dst: Path) -> str:
    return Path(client.download_artifacts(run_id, "extracteval/report.html", str(dst))).read_text(encoding="utf-8")


@pytest.mark.parametrize("task", sorted(REGISTRY))
def test_report_leaderboard_and_compare_use_the_declared_metric(task: str, evaluated, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from extracteval.mlflow.compare import compare_runs
    from extracteval.mlflow.tracking_leaderboard import build_tracking_leaderboard

    uri, root = evaluated
    monkeypatch.chdir(root)
    spec = RANKING_SPECS[task]
    client = MlflowClient(uri)
    parent, children = _runs(client, task)
    ranking = parent.data.tags["extracteval.ranking"].split(", ")
    assert [c.data.tags["extracteval.model"] for c in children] == ranking and len(ranking) >= 3
    # the task's own ranking is the declared one: primary, tie-breaks, item wins, name
    metrics = {c.data.tags["extracteval.model"]: c.data.metrics for c in children}
    wins = {m: ms.get("wins/field_wins", 0.0) for m, ms in metrics.items()}
    assert [r.model for r in rank_by_metrics(spec, metrics, wins)] == ranking
    primary = [metrics[m][spec.primary] for m in ranking]
    assert primary == sorted(primary, reverse=True)
    # the report says so, and every run names it
    rule = html.escape(spec.rule(), quote=True)
    assert rule in _report(client, parent.info.run_id, tmp_path / "parent")
    assert all(r.data.tags["extracteval.primary_metric"] == spec.primary for r in (parent, *children))
    assert spec.rule() in parent.data.tags["mlflow.note.content"]
    # the leaderboard ranks the same runs by the same declaration, to the same order
    lb = build_tracking_leaderboard(experiment=f"primary-{task}", tracking_uri=uri, ci=False)
    assert lb.leaderboard.spec.primary == spec.primary
    assert [e.model for g in lb.leaderboard.groups for e in g.entries] == ranking
    # compare's default metric is the declared one
    res = compare_runs(baseline=children[0].info.run_id, candidate=children[-1].info.run_id, tracking_uri=uri, resamples=50)
    assert res.metric == spec.primary


@pytest.mark.parametrize("task", sorted(REGISTRY))
def test_a_model_runs_report_is_of_that_model(task: str, evaluated, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child run's report: its own tables and its own figures, the other models only in the
    comparison summary at the top (every model's tables and figures are on the parent)."""
    uri, root = evaluated
    monkeypatch.chdir(root)
    client = MlflowClient(uri)
    parent, children = _runs(client, task)
    models = [c.data.tags["extracteval.model"] for c in children]
    parent_pngs = {a.path.rsplit("/", 1)[-1]: Path(client.download_artifacts(parent.info.run_id, a.path, str(tmp_path / "p"))).read_bytes()
                   for a in client.list_artifacts(parent.info.run_id, "figures")}
    assert parent_pngs
    for i, child in enumerate(children, start=1):
        me = models[i - 1]
        page = _report(client, child.info.run_id, tmp_path / f"c{i}")
        head, summary_title, rest = page.partition("<h2>Comparison summary: ")
        assert summary_title, "no comparison summary"
        assert html.escape(f"{me} is ranked {i} of {len(models)}", quote=True) in rest
        summary, _, body = rest.partition("<h2>")  # the summary section, then the rest of the report
        assert all(html.escape(m, quote=True) in summary for m in models)
        for other in models:
            if other != me:
                assert not re.search(rf"(?<![\w.-]){re.escape(html.escape(other, quote=True))}(?![\w.-])", body), (task, me, other)
        assert html.escape(me, quote=True) in body
        # its own figures: as many as the report shows, none of them the parent's all-model figure
        pngs = {a.path.rsplit("/", 1)[-1]: Path(client.download_artifacts(child.info.run_id, a.path, str(tmp_path / f"f{i}"))).read_bytes()
                for a in client.list_artifacts(child.info.run_id, "figures")}
        assert pngs and set(pngs) <= set(parent_pngs)
        assert page.count("<img ") == len(pngs)
        assert all(pngs[f] != parent_pngs[f] for f in pngs), task
        assert f"rank {i} of {len(models)}" in child.data.tags["mlflow.note.content"]


# ---- the decision: one rule and one wording at every entry point ----------------------------------

SLM = "experiments/slm-vs-llm/toolcalls"


def test_every_entry_point_gives_the_same_decision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`score --baseline/--candidate`, `compare-models`, `compare` and the logged `decision/…`
    metrics and report, on the slm-vs-llm tool calls: gpt-4o vs qwen2.5-1.5b on call accuracy,
    a gap of 21.7 points (above 0.15) whose interval reaches into "moderate": not settled, so
    not a recommendation, in the same words everywhere."""
    import json

    from extracteval.core.decision import render_decision
    from extracteval.core.decision import decision_metrics

    shutil.copytree(REPO / "experiments", tmp_path / "experiments", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    models = ["gpt-4o", "llama-3.1-8b", "qwen2.5-1.5b"]
    args = ["--truth", f"{SLM}/truth.jsonl", *[a for m in models for a in ("--predictions", f"{m}={SLM}/{m}.jsonl")]]
    pair = ["--baseline", "gpt-4o", "--candidate", "qwen2.5-1.5b"]
    expected = "not settled — leaning fine-tuning recommended (the 95% interval spans moderate → fine-tuning recommended)"

    code, out, err = _main("score", "toolcalls", *args, *pair, "--json", "--output", "out")
    assert code == 0, err
    scored = json.loads(out)["decision"]
    code, text_scored, err = _main("score", "toolcalls", *args, *pair)
    assert code == 0, err
    code, out, err = _main("compare-models", "--result", "out", *pair, "--json")
    assert code == 0, err
    offline = json.loads(out)["decision"]
    code, text_offline, err = _main("compare-models", "--result", "out", *pair)
    assert code == 0, err
    code, _, err = _main("evaluate", "toolcalls", *args, *pair, "--experiment", "decision", "--tracking-uri", uri, "--json", "--no-figures")
    assert code == 0, err
    code, out, err = _main("compare", "--experiment", "decision", *pair, "--tracking-uri", uri, "--json")
    assert code == 0, err
    tracked = json.loads(out)
    code, text_tracked, err = _main("compare", "--experiment", "decision", *pair, "--tracking-uri", uri)
    assert code == 0, err

    assert scored["metric"] == offline["metric"] == "call_accuracy" and tracked["metric"] == "toolcalls/call_accuracy"
    for d in (scored, offline, tracked):
        assert d["verdict"] == expected
        assert (d["gap_band"], d["verdict_settled"], d["fine_tuning_recommended"]) == ("fine-tuning recommended", False, False)
        assert d["verdict_range"] == ["moderate", "fine-tuning recommended"]
        assert d["gap"] == pytest.approx(scored["gap"]) and d["n_records"] == scored["n_records"] == 60
        assert (d["ci"]["low"], d["ci"]["high"]) == pytest.approx((scored["ci"]["low"], scored["ci"]["high"]))
    block = render_decision(scored)
    assert block in text_scored and block == text_offline.strip()
    assert render_decision(tracked) in text_tracked and f"→ {expected}" in text_tracked

    client = MlflowClient(uri)
    parent, _ = _runs_of(client, "decision")
    assert parent.data.params["decision.verdict"] == expected
    logged = {k: v for k, v in comparison_figures(client, parent.info.run_id).items() if k.startswith("decision/")}
    assert logged == pytest.approx(decision_metrics(scored))
    assert logged["decision/fine_tuning_recommended"] == 0.0 and logged["decision/verdict_settled"] == 0.0
    page = _report(client, parent.info.run_id, tmp_path / "report")
    assert all(html.escape(line.strip(), quote=True) in page for line in block.splitlines())


def _runs_of(client: MlflowClient, experiment: str) -> tuple[object, list[object]]:
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id])
    return next(r for r in runs if r.data.tags["extracteval.role"] == "comparison"), [r for r in runs if r.data.tags["extracteval.role"] == "model"]
