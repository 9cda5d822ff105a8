"""Run descriptions (`mlflow.note.content`) and headline metrics of every run the demo writes,
each checked against the metrics that same run logged in a real SQLite store: a model run's rank
of n, primary metric and interval, weakest items and invalid outputs; the parent's ranking table;
the leaderboard run's table of the runs it ranked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from extracteval.core.ranking import format_wins
from extracteval.tasks import RANKING_SPECS
from extracteval.mlflow.descriptions import (
    HEADLINE_CI_HIGH,
    HEADLINE_CI_LOW,
    HEADLINE_SCORE,
    HEADLINE_WINNER,
    _md,
    fmt_interval,
    fmt_value,
    primary_interval,
)

pytestmark = pytest.mark.slow

NOTE = "mlflow.note.content"


def _experiments(client: MlflowClient) -> dict[str, dict[str, list]]:
    out = {}
    for e in client.search_experiments():
        if e.name == "Default":
            continue
        by_role: dict[str, list] = {}
        for r in client.search_runs([e.experiment_id]):
            by_role.setdefault(r.data.tags.get("extracteval.role"), []).append(r)
        out[e.name] = by_role
    return out


@pytest.fixture(scope="module")
def store(demo_store: str):
    client = MlflowClient(demo_store)
    return client, _experiments(client)


def test_every_task_of_the_demo_is_described(store) -> None:
    _, exps = store
    tasks = {r.data.tags["extracteval.task"] for by_role in exps.values() for r in by_role["comparison"]}
    assert tasks == set(RANKING_SPECS)  # all seven tasks
    for name, by_role in exps.items():
        assert set(by_role) == {"comparison", "model", "leaderboard"}, name
        for runs in by_role.values():
            assert all(r.data.tags.get(NOTE, "").strip() for r in runs), name


def _weakest(spec, metrics: dict[str, float]) -> list[float]:
    """The three lowest item scores, from the metric keys (a catch-all row is not an item)."""
    from extracteval.mlflow.keys import sanitize_segment

    leaf = "/" + spec.item_keys[0]
    excluded = {sanitize_segment(x) for x in spec.item_exclude}
    vals = sorted(v for k, v in metrics.items() if k.startswith(spec.item_prefix) and k.endswith(leaf)
                  and "/" not in (seg := k[len(spec.item_prefix) : -len(leaf)]) and seg not in excluded)
    return vals[:3]


def test_a_model_runs_description_says_its_rank_score_interval_and_weak_items(store, tmp_path: Path) -> None:
    client, exps = store
    for name, by_role in exps.items():
        children = sorted(by_role["model"], key=lambda r: int(r.data.tags["extracteval.rank"]))
        n = len(children)
        for child in children:
            tags, ms = child.data.tags, child.data.metrics
            spec = RANKING_SPECS[tags["extracteval.task"]]
            note = tags[NOTE]
            first = note.splitlines()[0]
            assert f"**{_md(tags['extracteval.model'])}**: **rank {tags['extracteval.rank']} of {n}**" in first, (name, first)
            assert f"(`{spec.primary}`): **{fmt_value(spec, ms[spec.primary])}**" in note, (name, note)
            # the headline metrics are the run's own numbers under one name for every task
            assert ms[HEADLINE_SCORE] == round(ms[spec.primary], 4)  # four decimals: shown whole in the runs table
            assert f"{int(ms['invalid_outputs/count'])} invalid output(s)" in note
            ci = primary_interval(spec, ms)
            if HEADLINE_CI_LOW in ms:
                assert (ms[HEADLINE_CI_LOW], ms[HEADLINE_CI_HIGH]) == (round(ci[0], 4), round(ci[1], 4))
                assert f"95% CI {fmt_interval(spec, *ci)}" in note
                assert ci[0] <= ms[spec.primary] <= ci[1]
            else:
                assert "no interval" in note
            if "wins/field_wins" in ms:
                assert f"Won {format_wins(ms['wins/field_wins'])} of " in note
            weak_line = next(line for line in note.splitlines() if line.startswith("- Weakest "))
            shown = [float(x) / 100 for x in re.findall(r" (\d+\.\d)%", weak_line)]
            expected = _weakest(spec, ms)
            assert len(shown) == len(expected) == 3, (name, weak_line)
            assert shown == pytest.approx([round(100 * v, 1) / 100 for v in expected], abs=1e-9), (name, weak_line, expected)
            assert "`extracteval/report.html`" in note
            # the report it points at is there
            assert "extracteval/report.html" in [a.path for a in client.list_artifacts(child.info.run_id, "extracteval")]
            # the comparison-only metrics stay on the parent
            assert not any(k.startswith(("comparison/", "models/", "decision/", HEADLINE_WINNER)) for k in ms), name


def test_the_parent_run_holds_the_ranking_table_and_the_adjacent_verdicts(store) -> None:
    _, exps = store
    for name, by_role in exps.items():
        (parent,) = by_role["comparison"]
        spec = RANKING_SPECS[parent.data.tags["extracteval.task"]]
        note = parent.data.tags[NOTE]
        children = sorted(by_role["model"], key=lambda r: int(r.data.tags["extracteval.rank"]))
        rows = [line for line in note.splitlines() if re.match(r"\| \d+ \|", line)]
        assert len(rows) == len(children), (name, note)
        for row, child in zip(rows, children):
            ms = child.data.metrics
            cells = [c.strip() for c in row.strip("|").split(" | ")]
            assert cells[:3] == [child.data.tags["extracteval.rank"], _md(child.data.tags["extracteval.model"]), fmt_value(spec, ms[spec.primary])]
            ci = primary_interval(spec, ms)
            assert cells[3] == (fmt_interval(spec, *ci) if ci else "-")
            assert (ci is None) is (HEADLINE_CI_LOW not in ms)
        assert parent.data.metrics[HEADLINE_WINNER] == round(children[0].data.metrics[spec.primary], 4)
        assert HEADLINE_SCORE not in parent.data.metrics  # the experiment's charts plot model runs only
        verdicts = [line for line in note.splitlines() if " vs " in line and line.startswith("- ")]
        pairs = [f"- {_md(a.data.tags['extracteval.model'])} vs {_md(b.data.tags['extracteval.model'])}: " for a, b in zip(children, children[1:])]
        assert all(any(v.startswith(p) for v in verdicts) for p in pairs), (name, verdicts)
        assert spec.rule() in note


def test_the_leaderboard_run_describes_the_runs_it_ranked(store) -> None:
    _, exps = store
    for name, by_role in exps.items():
        (lb,) = by_role["leaderboard"]
        key = lb.data.tags["extracteval.leaderboard_key"]
        spec = RANKING_SPECS[lb.data.tags["extracteval.task"]]
        note = lb.data.tags[NOTE]
        assert note.startswith(f"**Leaderboard of {_md(name)}**")
        rows = {int(c[0]): c for c in ([x.strip() for x in line.strip("|").split(" | ")] for line in note.splitlines() if re.match(r"\| \d+ \|", line))}
        ranked = [c for c in by_role["model"] if f"{key}/rank" in c.data.metrics]
        assert len(rows) == len(ranked) == int(lb.data.metrics["runs/count"])
        for child in ranked:
            row = rows[int(child.data.metrics[f"{key}/rank"])]
            assert row[1] == _md(child.data.tags["extracteval.model"])
            assert row[2] == fmt_value(spec, child.data.metrics[spec.primary])
        assert f"`{key}/rank`" in note
        assert lb.data.metrics[HEADLINE_WINNER] == round(lb.data.metrics["best/score"], 4)


def test_names_cannot_break_the_markdown() -> None:
    assert _md("a|b *c* [x](y) <script>") == "a\\|b \\*c\\* \\[x\\](y) \\<script\\>"
    assert json.dumps(_md("line\nbreak")) == '"line break"'


def test_a_leaderboard_description_says_which_runs_were_superseded_and_how_runs_were_grouped() -> None:
    from types import SimpleNamespace

    from extracteval.core.run_ranking import RunSummary
    from extracteval.mlflow.tracking_leaderboard import rank_runs as build_leaderboard
    from extracteval.mlflow.descriptions import leaderboard_note

    def run(rid: str, model: str, truth: str, f1: float, start: int) -> RunSummary:
        ms = {"overall/f1": f1, "overall/precision": f1, "overall/recall": f1, "field/a/f1": f1, "field/a/precision": f1, "field/a/recall": f1}
        return RunSummary(run_id=rid, model=model, task="fields", truth_digest=truth, config_digest="c" * 64, metrics=ms, start_time=start)

    runs = [run("old00000x", "m1", "t" * 64, 0.5, 1), run("new00000x", "m1", "t" * 64, 0.6, 2), run("m2000000x", "m2", "t" * 64, 0.7, 3),
            run("m3000000x", "m3", "u" * 64, 0.9, 4)]
    lb = build_leaderboard(runs, group_by_truth=True)
    note = leaderboard_note(SimpleNamespace(leaderboard=lb, experiment="exp", notes=("a note",), leaderboard_key=None), "leaderboard/k")
    assert "2 groups" in note and note.count("| rank | model |") == 2
    assert "Group 1 (truth `" in note and "ranked only against runs scored on the same truth" in note
    assert "Not ranked (superseded by a later run of the same model, truth and config): m1 (`old00000` → `new00000`)" in note
    assert "| 1 | m2 | 70.0% |" in note and "| 2 | m1 | 60.0% |" in note and "| 1 | m3 | 90.0% |" in note
    assert "- Note: a note" in note and "`leaderboard/k/rank`" in note
    assert "winner" not in note.splitlines()[0]  # two groups: no single winner


def test_a_single_model_run_is_described_without_a_rank(cli, sqlite_uri: str) -> None:
    from .conftest import CONTRACTS

    code, out, err = cli("evaluate", "fields", "--truth", str(CONTRACTS / "truth.csv"),
                         "--predictions", f"gpt-4o-mini={CONTRACTS / 'predictions' / 'gpt-4o-mini.csv'}",
                         "--strategies", str(CONTRACTS / "strategies.yaml"), "--resamples", "200",
                         "--experiment", "single-note", "--tracking-uri", sqlite_uri, "--no-figures")
    assert code == 0, err
    client = MlflowClient(sqlite_uri)
    (r,) = client.search_runs([client.get_experiment_by_name("single-note").experiment_id])
    note, ms = r.data.tags[NOTE], r.data.metrics
    spec = RANKING_SPECS["fields"]
    assert note.startswith("**gpt-4o-mini** · tier **") and "not ranked" in note.splitlines()[0]
    assert "rank" not in note.splitlines()[0].replace("not ranked", "")
    assert f"**{fmt_value(spec, ms['overall/f1'])}**, 95% CI {fmt_interval(spec, ms['overall/ci_low'], ms['overall/ci_high'])}" in note
    assert ms[HEADLINE_SCORE] == round(ms["overall/f1"], 4) and HEADLINE_WINNER not in ms and "ranking/rank" not in ms
