"""Run descriptions (`mlflow.note.content`, Markdown) and the headline metrics of every run.

The MLflow UI opens a run on its Overview, whose *Description* is the first thing on it that a
person reads. Every run extracteval writes gets one built here, from task-agnostic data only: the
run's logged metrics, the task's ranking declaration (`extracteval.tasks.RANKING_SPECS`: primary metric,
tie-breaks, item prefix) and the few common parts of a result document (tier, adjacent-rank
verdicts). No task has its own copy.

- a model run: its rank of n and tier, the primary metric with its interval, the item wins, its
  three weakest items with their scores, invalid outputs and records left out, where the report is;
- the parent (comparison) run: the ranking in one table and the verdict between adjacent ranks;
- a leaderboard run: the same across runs, plus the runs that were superseded or grouped apart
  and why.

Numbers are formatted as the terminal view formats them: rates as percentages with one decimal
(`95.8%`), intervals in points (`[93.6, 97.6]`), differences in signed points (`+8.6 points`),
and a task whose primary metric is not a rate (json: RQS) with three decimals (`0.828`).

The headline metrics (`HEADLINE_*`, prefix `Main/`) are the same few keys on every task's model runs, so that the
experiment's runs table and charts put the models side by side under one name: the primary metric
(`Main/score`), its interval and the item wins; the comparison and leaderboard runs carry the
winner's score under `Main/best`. The capital letter sorts the `Main` section before every other
metric section in MLflow's chart views and metric tables (which order keys by code point, capitals
first); within it `score` sorts before its bounds (`score_high`, `score_low`), so Compare's
parallel-coordinates plot opens on it; and the keys are short enough for MLflow's 100-pixel metric
columns (the bounds cut, if at all, after `score_h` / `score_l`).
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from extracteval.report.terminal import count_of
from extracteval.core.ranking import RankingSpec, format_wins, tier

__all__ = [
    "HEADLINE_SCORE", "HEADLINE_CI_LOW", "HEADLINE_CI_HIGH", "HEADLINE_WINS", "HEADLINE_WINNER",
    "HEADLINE_KEYS", "HEADLINE_DECIMALS", "headline", "REPORT_PATH", "fmt_value", "fmt_interval", "fmt_diff", "primary_interval", "weakest_items", "wins_text",
    "headline_metrics", "model_note", "single_note", "comparison_note", "leaderboard_note", "is_rate",
]

HEADLINE_SCORE = "Main/score"  # the task's primary metric (`extracteval.primary_metric` names it)
HEADLINE_CI_LOW = "Main/score_low"
HEADLINE_CI_HIGH = "Main/score_high"
HEADLINE_WINS = "Main/wins"  # item wins (fields, tags, features, functions)
HEADLINE_WINNER = "Main/best"  # on comparison and leaderboard runs: the best model's primary metric
HEADLINE_DECIMALS = 4
HEADLINE_KEYS = (HEADLINE_SCORE, HEADLINE_CI_LOW, HEADLINE_CI_HIGH, HEADLINE_WINS, HEADLINE_WINNER)
REPORT_PATH = "extracteval/report.html"
# metrics (last key segment) that count records left out of a model's scores
_LEFT_OUT = ("excluded_records", "missing_records", "records_missing_prediction", "missing_rows")
_TIER_LABEL = {"excellent": "excellent", "good": "good", "needs_improvement": "needs improvement"}


# ---- numbers, as the terminal view writes them ---------------------------------------------------

def is_rate(spec: RankingSpec) -> bool:
    """True when the primary metric is a rate shown as a percentage (as the task declares it)."""
    return spec.primary_is_rate


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not math.isnan(float(v)) and not math.isinf(float(v))


def fmt_value(spec: RankingSpec, v: float | None) -> str:
    """`95.8%` for a rate, `0.828` otherwise; `-` when absent."""
    if v is None or not _finite(v):
        return "-"
    return f"{100.0 * float(v):.1f}%" if is_rate(spec) else f"{float(v):.3f}"


def fmt_interval(spec: RankingSpec, low: float, high: float) -> str:
    """`[93.6, 97.6]` (points) for a rate, `[0.771, 0.850]` otherwise."""
    if is_rate(spec):
        return f"[{100 * low:.1f}, {100 * high:.1f}]"
    return f"[{low:.3f}, {high:.3f}]"


def fmt_diff(spec: RankingSpec, d: float) -> str:
    """`+8.6 points` for a rate, `+0.042` otherwise."""
    return f"{100 * d:+.1f} points" if is_rate(spec) else f"{d:+.3f}"


def _md(text: Any) -> str:
    """A user-chosen name inside Markdown: table pipes and emphasis characters escaped."""
    s = " ".join(str(text).split())
    for ch in ("\\", "|", "*", "_", "`", "[", "]", "<", ">"):
        s = s.replace(ch, "\\" + ch)
    return s


# ---- what a run's metrics say --------------------------------------------------------------------

def primary_interval(spec: RankingSpec, metrics: Mapping[str, float]) -> tuple[float, float] | None:
    """The interval of the primary metric logged beside it (`<dir of primary>/ci_low|ci_high`:
    `overall/ci_low` for `overall/f1`), or None when the run has none."""
    base = posixpath.dirname(spec.primary)
    lo, hi = metrics.get(f"{base}/ci_low"), metrics.get(f"{base}/ci_high")
    if _finite(lo) and _finite(hi):
        return float(lo), float(hi)
    return None


def _item_scores(spec: RankingSpec, metrics: Mapping[str, float], names: Mapping[str, str] | None) -> dict[str, float]:
    """Item name → the item's winner metric (`field/<name>/f1`, …) from the run's metrics."""
    if not spec.item_prefix:
        return {}
    leaf = "/" + spec.item_keys[0]
    out = {}
    for k, v in metrics.items():
        if k.startswith(spec.item_prefix) and k.endswith(leaf):
            seg = k[len(spec.item_prefix) : -len(leaf)]
            name = (names or {}).get(seg, seg)
            if seg and "/" not in seg and name not in spec.item_exclude and _finite(v):
                out[name] = float(v)
    return out


def weakest_items(spec: RankingSpec, metrics: Mapping[str, float], names: Mapping[str, str] | None = None, k: int = 3) -> list[tuple[str, float]]:
    """The `k` items with the lowest winner metric (ties by name), lowest first."""
    scores = _item_scores(spec, metrics, names)
    return sorted(scores.items(), key=lambda kv: (kv[1], kv[0]))[:k]


def _item_word(spec: RankingSpec, n: float = 2) -> str:
    word = spec.item_label
    return word[:-1] if n == 1 and word.endswith("s") else word


def wins_text(spec: RankingSpec, metrics: Mapping[str, float]) -> str | None:
    """`won 4.5 of 7 fields` from `wins/field_wins` and `wins/<items>_scored`; None without them."""
    wins = metrics.get("wins/field_wins")
    scored = next((v for k, v in sorted(metrics.items()) if k.startswith("wins/") and k.endswith("_scored")), None)
    if not _finite(wins) or not _finite(scored):
        return None
    return f"won {format_wins(float(wins))} of {int(scored)} {_item_word(spec, scored)}"


def _left_out(metrics: Mapping[str, float]) -> list[tuple[str, int]]:
    """Non-zero counts of records left out of the scores (key, count), run-level keys only."""
    out = []
    for k, v in sorted(metrics.items()):
        if k.count("/") <= 1 and k.rsplit("/", 1)[-1] in _LEFT_OUT and _finite(v) and v:
            out.append((k, int(v)))
    return out


def headline(v: float) -> float:
    """A headline value as logged: four decimals, which MLflow's runs table shows whole
    (`0.958`, not `0.95795283…` cut at the column's edge); the task's own key keeps every digit."""
    return round(float(v), HEADLINE_DECIMALS)


def headline_metrics(spec: RankingSpec, metrics: Mapping[str, float]) -> dict[str, float]:
    """The `Main/…` metrics of a model run, from its own metrics."""
    out: dict[str, float] = {}
    if _finite(metrics.get(spec.primary)):
        out[HEADLINE_SCORE] = headline(metrics[spec.primary])
    ci = primary_interval(spec, metrics)
    if ci is not None:
        out[HEADLINE_CI_LOW], out[HEADLINE_CI_HIGH] = headline(ci[0]), headline(ci[1])
    if _finite(metrics.get("wins/field_wins")):
        out[HEADLINE_WINS] = float(metrics["wins/field_wins"])
    return out


def _tier_of(spec: RankingSpec, metrics: Mapping[str, float], given: str | None) -> str:
    t = given or tier(float(metrics.get(spec.primary, 0.0)))
    return _TIER_LABEL.get(t, t.replace("_", " "))


def _score_line(spec: RankingSpec, metrics: Mapping[str, float]) -> str:
    v = metrics.get(spec.primary)
    line = f"**{spec.label}** (`{spec.primary}`): **{fmt_value(spec, v)}**"
    ci = primary_interval(spec, metrics)
    if ci is not None:
        line += f", 95% CI {fmt_interval(spec, *ci)}"
    else:
        line += " (no interval in this evaluation)"
    return line


def _model_body(spec: RankingSpec, metrics: Mapping[str, float], names: Mapping[str, str] | None) -> list[str]:
    lines = [f"- {_score_line(spec, metrics)}"]
    wt = wins_text(spec, metrics)
    if wt:
        lines.append(f"- {wt[0].upper()}{wt[1:]}" + ("" if spec.item_wins else " (reported, not ranked on)"))
    weak = weakest_items(spec, metrics, names)
    if weak:
        key = spec.item_keys[0]
        lines.append(f"- Weakest {spec.item_label} ({key}): " + ", ".join(f"{_md(n)} {fmt_value(_RATE, v)}" for n, v in weak))
    invalid = metrics.get("invalid_outputs/count")
    left = _left_out(metrics)
    parts = [f"{int(invalid)} invalid output(s) (`invalid_outputs/count`)"] if _finite(invalid) else []
    parts += [f"`{k}` {n}" for k, n in left]
    if parts:
        lines.append("- Records: " + "; ".join(parts))
    return lines


# item scores are rates for every task (F1, accuracy)
_RATE = RankingSpec(task="", primary="rate", label="", tie_breaks=())


def model_note(*, task: str, spec: RankingSpec, model: str, rank: int, n: int, metrics: Mapping[str, float],
               names: Mapping[str, str] | None = None, tier_name: str | None = None, peers: Sequence[str] = ()) -> str:
    """The description of one model's run in a comparison of `n` models."""
    lines = [f"**{_md(model)}**: **rank {rank} of {n}** · tier **{_tier_of(spec, metrics, tier_name)}** · extracteval {task}", ""]
    lines += _model_body(spec, metrics, names)
    lines.append(f"- Ranked by {spec.rule()[len('ranked by '):]}")
    lines.append(f"- Report: *Artifacts* → `{REPORT_PATH}` (this model); every model's tables and figures are on the parent run")
    return "\n".join(lines)


def single_note(*, task: str, spec: RankingSpec, model: str, metrics: Mapping[str, float], names: Mapping[str, str] | None = None,
                tier_name: str | None = None) -> str:
    """The description of the run of a single model (not ranked against anything)."""
    lines = [f"**{_md(model)}** · tier **{_tier_of(spec, metrics, tier_name)}** · extracteval {task} (one model, not ranked)", ""]
    lines += _model_body(spec, metrics, names)
    lines.append(f"- Report: *Artifacts* → `{REPORT_PATH}`")
    return "\n".join(lines)


def _verdict_lines(spec: RankingSpec, models: Sequence[str], primary: Mapping[str, float], comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per adjacent pair: the tested verdict when the evaluation has one, else the difference."""
    tested = {(c.get("higher"), c.get("lower")): c for c in comparisons or ()}
    lines = []
    for a, b in zip(models[:-1], models[1:]):
        c = tested.get((a, b))
        if c is not None and c.get("difference"):
            d = c["difference"]
            conf = int(round(100 * float(d.get("confidence", 0.95))))
            lines.append(f"- {_md(a)} vs {_md(b)}: {fmt_diff(spec, float(d['estimate']))}, {conf}% CI "
                         f"[{fmt_diff(spec, float(d['low'])).split()[0]}, {fmt_diff(spec, float(d['high'])).split()[0]}] — **{c.get('verdict', '')}**")
        elif _finite(primary.get(a)) and _finite(primary.get(b)):
            lines.append(f"- {_md(a)} vs {_md(b)}: {fmt_diff(spec, float(primary[a]) - float(primary[b]))} "
                         "(not tested for significance here; `extracteval compare` tests a pair)")
    return lines


def comparison_note(*, task: str, spec: RankingSpec, models: Sequence[str], metrics_of: Any, tiers: Mapping[str, str] | None = None,
                    comparisons: Sequence[Mapping[str, Any]] = (), decision: Mapping[str, Any] | None = None,
                    n_records: Any = None) -> str:
    """The parent run's description: the ranking in one table, then the adjacent-rank verdicts."""
    n = len(models)
    head = f"**extracteval {task}: {n} models**" + (f" on {n_records} records" if n_records not in (None, "") else "")
    lines = [f"{head}. Winner: **{_md(models[0])}**, {spec.label} {fmt_value(spec, metrics_of(models[0]).get(spec.primary))}.", ""]
    lines += ["| rank | model | " + spec.label + " | 95% CI | tier | wins |", "|---:|---|---:|---|---|---|"]
    primary = {}
    for i, m in enumerate(models, start=1):
        ms = metrics_of(m)
        primary[m] = ms.get(spec.primary)
        ci = primary_interval(spec, ms)
        wt = wins_text(spec, ms) or "-"
        lines.append(f"| {i} | {_md(m)} | {fmt_value(spec, ms.get(spec.primary))} | {fmt_interval(spec, *ci) if ci else '-'} | "
                     f"{_tier_of(spec, ms, (tiers or {}).get(m))} | {wt} |")
    lines += ["", "Adjacent ranks:"]
    lines += _verdict_lines(spec, models, primary, comparisons)
    if decision and decision.get("verdict"):
        lines.append(f"- Decision ({_md(decision.get('baseline'))} vs {_md(decision.get('candidate'))}, {decision.get('metric')}): "
                     f"**{_md(decision['verdict'])}**")
    lines += ["", f"Models are {spec.rule()}.",
              f"Report: *Artifacts* → `{REPORT_PATH}`; each model's own run (expand this row) has its description and report."]
    return "\n".join(lines)


def leaderboard_note(result: Any, key: str | None = None) -> str:
    """A leaderboard run's description (`result`: `mlflow.tracking_leaderboard.TrackingStoreLeaderboard`;
    `key`: the `leaderboard/<time>-<id>` prefix its rank metrics were written under)."""
    lb = result.leaderboard
    spec = lb.spec
    n_ranked = sum(len(g.entries) for g in lb.groups)
    best = ""
    if len(lb.groups) == 1 and lb.groups[0].entries:
        top = lb.groups[0].entries[0]
        best = f": winner **{_md(top.model)}**, {spec.label} {fmt_value(spec, top.score)}"
    lines = [f"**Leaderboard of {_md(result.experiment)}**{best} · extracteval {lb.task} · {count_of(n_ranked, 'run')} ranked "
             f"({'all runs' if lb.all_runs else 'the latest run of each model'}), {count_of(len(lb.groups), 'group')}", ""]
    for gi, g in enumerate(lb.groups, start=1):
        if len(lb.groups) > 1:
            lines += [f"Group {gi} (truth `{g.truth_digest[:12]}`, config `{g.config_digest[:12]}`): runs are ranked only against runs "
                      "scored on the same truth with the same configuration.", ""]
        lines += ["| rank | model | " + spec.label + " | 95% CI | tier | wins |", "|---:|---|---:|---|---|---|"]
        for e in g.entries:
            ci = fmt_interval(spec, e.ci.low, e.ci.high) if e.ci is not None else "-"
            wins = f"{format_wins(e.item_wins)} of {e.items_scored}" if e.items_scored else "-"
            lines.append(f"| {e.rank} | {_md(e.model)} | {fmt_value(spec, e.score)} | {ci} | {_TIER_LABEL.get(e.tier, e.tier)} | {wins} |")
        if g.comparisons:
            lines += ["", "Adjacent ranks:"]
            for c in g.comparisons:
                d = c.get("difference") or {}
                diff = f"{fmt_diff(spec, float(d['estimate']))}, " if d.get("estimate") is not None else ""
                ci = f"{int(round(100 * float(d['confidence'])))}% CI [{fmt_diff(spec, float(d['low'])).split()[0]}, " \
                     f"{fmt_diff(spec, float(d['high'])).split()[0]}] — " if d.get("low") is not None and d.get("confidence") else ""
                lines.append(f"- {_md(c.get('higher'))} vs {_md(c.get('lower'))}: {diff}{ci}**{c.get('verdict', '')}**")
        if g.superseded:
            lines += ["", "Not ranked (superseded by a later run of the same model, truth and config): "
                      + ", ".join(f"{_md(s.model)} (`{s.run_id[:8]}` → `{s.superseded_by[:8]}`)" for s in g.superseded[:20])
                      + (f" and {len(g.superseded) - 20} more" if len(g.superseded) > 20 else "")]
        lines.append("")
    for w in lb.warnings:
        lines.append(f"- Warning: {_md(w)}")
    for note in result.notes:
        lines.append(f"- Note: {_md(note)}")
    lines += [f"Runs are {spec.rule()}.", "Report: *Artifacts* → `leaderboard/leaderboard.html`; each ranked run got its rank "
              f"under `{key or result.leaderboard_key or 'leaderboard/<time>-<id>'}/rank`."]
    return "\n".join(lines)
