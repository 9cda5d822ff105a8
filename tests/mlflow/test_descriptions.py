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
    HEADLINE_GAP,
    HEADLINE_KEYS,
    HEADLINE_MARGIN,
    HEADLINE_MARGIN_HIGH,
    HEADLINE_MARGIN_LOW,
    HEADLINE_RANK,
    HEADLINE_SCORE,
    HEADLINE_SIGNIFICANT,
    HEADLINE_WINNER,
    _md,
    fmt_interval,
    fmt_value,
    plain,
    primary_interval,
    standings,
)

from tests.fixtures.tracking import comparison_figures

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


def test_every_task_of_the_demo_is_described(store, product_tasks_only) -> None:
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


def test_a_model_runs_description_says_its_rank_score_interval_and_gap_first(store, tmp_path: Path) -> None:
    client, exps = store
    for name, by_role in exps.items():
        children = sorted(by_role["model"], key=lambda r: int(r.data.tags["extracteval.rank"]))
        n = len(children)
        for i, child in enumerate(children):
            tags, ms = child.data.tags, child.data.metrics
            spec = RANKING_SPECS[tags["extracteval.task"]]
            note = tags[NOTE]
            first, second = note.splitlines()[:2]
            rank = int(tags["extracteval.rank"])
            ci = primary_interval(spec, ms)
            assert ci is not None, name  # every task's model runs have their interval
            # line 1: rank, score and interval; line 2: the gap to the next rank and its verdict
            assert first.startswith(f"**{_md(tags['extracteval.model'])}: rank {rank} of {n}** — {spec.label} "
                                    f"**{fmt_value(spec, ms[spec.primary])} {fmt_interval(spec, *ci)}**"), (name, first)
            nxt = children[i + 1] if i + 1 < n else children[i - 1]
            assert f"rank {nxt.data.tags['extracteval.rank']} ({_md(nxt.data.tags['extracteval.model'])}): **" in second.split(";")[0], (name, second)
            # the headline metrics are the run's own numbers under one name for every task
            assert ms[HEADLINE_SCORE] == round(ms[spec.primary], 4)  # four decimals: shown whole in the runs table
            assert (ms[HEADLINE_CI_LOW], ms[HEADLINE_CI_HIGH]) == (round(ci[0], 4), round(ci[1], 4))
            assert ci[0] <= ms[spec.primary] <= ci[1]
            assert ms[HEADLINE_RANK] == rank
            assert ms[HEADLINE_GAP] == pytest.approx(round(ms[spec.primary] - nxt.data.metrics[spec.primary], 4), abs=2e-4)
            verdict = {1.0: "significant", 0.5: "borderline", 0.0: "not significant"}[ms[HEADLINE_SIGNIFICANT]]
            assert f"**{verdict}**" in second.split(";")[0], (name, second)
            assert f"{int(ms['invalid_outputs/count'])} invalid output(s)" in note
            if "wins/field_wins" in ms:
                assert f"Won {format_wins(ms['wins/field_wins'])} of " in note
            weak_line = next(line for line in note.splitlines() if line.startswith("- Weakest "))
            shown = [float(x) / 100 for x in re.findall(r" (\d+\.\d)%", weak_line)]
            expected = _weakest(spec, ms)
            assert len(shown) == len(expected) == 3, (name, weak_line)
            assert shown == pytest.approx([round(100 * v, 1) / 100 for v in expected], abs=1e-9), (name, weak_line, expected)
            assert "`extracteval/report.html`" in note and "|---" not in note  # a list, not a table
            # the report it points at is there
            assert "extracteval/report.html" in [a.path for a in client.list_artifacts(child.info.run_id, "extracteval")]
            # the comparison-only metrics stay off the model runs
            assert not any(k.startswith(("comparison/", "models/", "decision/", HEADLINE_WINNER)) for k in ms), name


def test_the_parent_run_opens_on_the_verdict_and_charts_only_it(store) -> None:
    client, exps = store
    for name, by_role in exps.items():
        (parent,) = by_role["comparison"]
        spec = RANKING_SPECS[parent.data.tags["extracteval.task"]]
        note = parent.data.tags[NOTE]
        children = sorted(by_role["model"], key=lambda r: int(r.data.tags["extracteval.rank"]))
        top, runner = children[0], children[1]
        pm = parent.data.metrics
        # at most ten charted metrics: the winner, its margin over the runner-up and whether it is real
        assert len(pm) <= 10 and set(pm) <= set(HEADLINE_KEYS), (name, sorted(pm))
        assert pm[HEADLINE_WINNER] == round(top.data.metrics[spec.primary], 4)
        assert pm[HEADLINE_MARGIN] == pytest.approx(top.data.metrics[spec.primary] - runner.data.metrics[spec.primary], abs=2e-4)
        assert pm[HEADLINE_MARGIN_LOW] <= pm[HEADLINE_MARGIN] <= pm[HEADLINE_MARGIN_HIGH]
        assert pm[HEADLINE_SIGNIFICANT] == top.data.metrics[HEADLINE_SIGNIFICANT]
        assert HEADLINE_SCORE not in pm  # the experiment's charts plot model runs only
        # the figures that are not charted are in the comparison's JSON
        figures = comparison_figures(client, parent.info.run_id)
        assert figures["models/count"] == len(children)
        # line 1: winner, score, interval, margin and its verdict; line 2: the ranks below that cannot be told apart
        first, second = note.splitlines()[:2]
        ci = primary_interval(spec, top.data.metrics)
        assert first.startswith(f"**Winner: {_md(top.data.tags['extracteval.model'])}** — {spec.label} "
                                f"**{fmt_value(spec, top.data.metrics[spec.primary])} {fmt_interval(spec, *ci)}**, "), (name, first)
        assert f"ahead of rank 2 ({_md(runner.data.tags['extracteval.model'])}): **" in first and "paired 95% CI [" in first
        assert second.startswith(("Below the winner: ", "Every adjacent pair of ranks differs significantly")), (name, second)
        rows = [line for line in note.splitlines() if re.match(r"\d+\. \*\*", line)]
        assert len(rows) == len(children), (name, note)
        for row, child in zip(rows, children):
            ms = child.data.metrics
            assert row.startswith(f"{child.data.tags['extracteval.rank']}. **{_md(child.data.tags['extracteval.model'])}** — "
                                  f"{fmt_value(spec, ms[spec.primary])} {fmt_interval(spec, *primary_interval(spec, ms))} · "), (name, row)
        verdicts = [line for line in note.splitlines() if " vs " in line and line.startswith("- ")]
        pairs = [f"- {_md(a.data.tags['extracteval.model'])} vs {_md(b.data.tags['extracteval.model'])}: " for a, b in zip(children, children[1:])]
        assert all(any(v.startswith(p) and "95% CI" in v for v in verdicts) for p in pairs), (name, verdicts)
        assert spec.rule() in note and "|---" not in note


def test_the_leaderboard_run_describes_the_runs_it_ranked(store) -> None:
    _, exps = store
    for name, by_role in exps.items():
        (lb,) = by_role["leaderboard"]
        key = lb.data.tags["extracteval.leaderboard_key"]
        spec = RANKING_SPECS[lb.data.tags["extracteval.task"]]
        note = lb.data.tags[NOTE]
        assert note.startswith(f"**Leaderboard of {_md(name)}** · **Winner: ")
        rows = {int(m.group(1)): line for line in note.splitlines() if (m := re.match(r"(\d+)\. \*\*", line))}
        ranked = [c for c in by_role["model"] if f"{key}/rank" in c.data.metrics]
        assert len(rows) == len(ranked) == int(lb.data.tags["extracteval.compared_count"])
        for child in ranked:
            row = rows[int(child.data.metrics[f"{key}/rank"])]
            assert row.startswith(f"{int(child.data.metrics[f'{key}/rank'])}. **{_md(child.data.tags['extracteval.model'])}** — "
                                  f"{fmt_value(spec, child.data.metrics[spec.primary])}")
        assert f"`{key}/rank`" in note
        top = min(ranked, key=lambda c: c.data.metrics[f"{key}/rank"])
        assert lb.data.metrics[HEADLINE_WINNER] == round(top.data.metrics[spec.primary], 4)
        assert len(lb.data.metrics) <= 10 and set(lb.data.metrics) <= set(HEADLINE_KEYS)


def test_names_cannot_break_the_markdown() -> None:
    assert _md("a|b *c* [x](y) <script>") == "a\\|b \\*c\\* \\[x\\](y) \\<script\\>"
    assert json.dumps(_md("line\nbreak")) == '"line break"'
    # and the report's plain text gives the names back as they are, emphasis gone
    for name in ("x\\", "a**b", "*", "c_d"):
        assert plain(f"**Winner: {_md(name)}** — **95.8%**") == f"Winner: {name} — 95.8%"


def test_a_gap_says_its_own_level_and_never_a_negative_zero() -> None:
    spec = RANKING_SPECS["fields"]
    pair = [{"higher": "a", "lower": "b", "verdict": "borderline",
             "difference": {"estimate": 0.1, "low": 0.0, "high": 0.2, "confidence": 0.9, "resamples": 1000}}]
    st = standings(["a", "b"], {"a": 0.9, "b": 0.8}, pair)
    assert st["a"].below.text(spec) == "+10.0 points ahead of rank 2 (b): **borderline** (paired 90% CI [+0.0, +20.0])"
    assert st["b"].above.text(spec) == "10.0 points behind rank 1 (a): **borderline** (paired 90% CI [-20.0, +0.0])"
    assert (st["b"].next_gap.diff, st["a"].next_gap.diff) == (pytest.approx(-0.1), pytest.approx(0.1))


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
    assert "2 groups" in note and note.count("1. **") == 2 and "|---" not in note
    assert "Group 1 (truth `" in note and "ranked only against runs scored on the same truth" in note
    assert "`extracteval.superseded_by`): m1 (`old00000` → `new00000`)" in note
    assert "1. **m2** — 70.0% · " in note and "2. **m1** — 60.0% · " in note and "1. **m3** — 90.0% · " in note
    assert "- Note: a note" in note and "`leaderboard/k`" in note
    assert "Winner" not in note.splitlines()[0] and "no single winner" in note.splitlines()[0]  # two groups


def test_a_single_model_run_is_described_without_a_rank(cli, sqlite_uri: str) -> None:
    from tests.fixtures.tracking import CONTRACTS

    code, out, err = cli("evaluate", "fields", "--truth", str(CONTRACTS / "truth.csv"),
                         "--predictions", f"gpt-4o-mini={CONTRACTS / 'predictions' / 'gpt-4o-mini.csv'}",
                         "--strategies", str(CONTRACTS / "strategies.yaml"), "--resamples", "200",
                         "--experiment", "single-note", "--tracking-uri", sqlite_uri, "--no-figures")
    assert code == 0, err
    client = MlflowClient(sqlite_uri)
    (r,) = client.search_runs([client.get_experiment_by_name("single-note").experiment_id])
    note, ms = r.data.tags[NOTE], r.data.metrics
    spec = RANKING_SPECS["fields"]
    first, second = note.splitlines()[:2]
    assert first.startswith(f"**gpt-4o-mini** — {spec.label} **{fmt_value(spec, ms['overall/f1'])} "
                            f"{fmt_interval(spec, ms['overall/ci_low'], ms['overall/ci_high'])}** · tier ")
    assert second.startswith("One model, not ranked") and "rank " not in first
    assert ms[HEADLINE_SCORE] == round(ms["overall/f1"], 4) and "ranking/rank" not in ms
    assert not {HEADLINE_WINNER, HEADLINE_RANK, HEADLINE_GAP, HEADLINE_SIGNIFICANT} & set(ms)


def test_every_task_gives_the_parent_and_the_leaderboard_the_same_intervals_and_verdicts(store, tmp_path: Path) -> None:
    """One significance rule: the adjacent-rank comparisons a parent run logged (in the engine for
    fields and spans, from the per-record counts for every other task) are the ones a leaderboard
    of its model runs computes from their logged `records.parquet`, verdict for verdict; and each
    model run's interval is the leaderboard's."""
    client, exps = store
    for name, by_role in exps.items():
        (parent,) = by_role["comparison"]
        (board,) = by_role["leaderboard"]
        doc = json.loads(Path(client.download_artifacts(parent.info.run_id, "extracteval/result.json", str(tmp_path / name / "p"))).read_text())
        lb = json.loads(Path(client.download_artifacts(board.info.run_id, "leaderboard/leaderboard.json", str(tmp_path / name / "l"))).read_text())
        ours = {(c["higher"], c["lower"]): c for c in doc["comparisons"]}
        theirs = {(c["higher"], c["lower"]): c for c in lb["comparisons"]}
        assert set(ours) == set(theirs) and len(ours) == len(by_role["model"]) - 1, name
        for pair, c in ours.items():
            d, e = c["difference"], theirs[pair]["difference"]
            assert (d["estimate"], d["low"], d["high"]) == pytest.approx((e["estimate"], e["low"], e["high"]), abs=1e-9), (name, pair)
            assert c["verdict"] == theirs[pair]["verdict"] and c["significant"] == theirs[pair]["significant"], (name, pair)
        spec = RANKING_SPECS[parent.data.tags["extracteval.task"]]
        for entry in lb["ranking"]:
            run = client.get_run(entry["run_id"])
            assert primary_interval(spec, run.data.metrics) == pytest.approx((entry["ci"]["low"], entry["ci"]["high"]), abs=1e-9), name
