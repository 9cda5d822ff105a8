"""Run descriptions (`mlflow.note.content`, Markdown) and the headline metrics of every run.

The MLflow UI opens a run on its Overview, whose *Description* is the first thing on it that a
person reads, and shows its first lines before "Show more". Every run extracteval writes gets one
built here, from task-agnostic data only: the run's logged metrics, the task's ranking declaration
(`extracteval.tasks.RANKING_SPECS`: primary metric, tie-breaks, item prefix) and the few common parts
of a result document (tier, adjacent-rank comparisons). No task has its own copy. The first two
lines carry the verdict; the rest is a list (MLflow renders a Markdown table without cell padding).

- a model run: its rank of n, the primary metric with its interval and tier; then its gap to the
  next rank and whether the paired interval of that gap excludes zero; then the item wins, its
  three weakest items, invalid outputs and records left out, where the report is;
- the parent (comparison) run and a leaderboard run: the winner, its score and interval, its
  margin over the runner-up and that margin's verdict; then which adjacent ranks cannot be told
  apart; then the ranking, the adjacent-rank verdicts (and the runs a leaderboard superseded).

Numbers are formatted as the terminal view formats them: rates as percentages with one decimal
(`95.8%`), intervals in points (`[93.6, 97.6]`), differences in signed points (`+8.6 points`),
and a task whose primary metric is not a rate (json: RQS) with three decimals (`0.828`).

The headline metrics (prefix `Main/`) are the same few keys on every task's runs, so that the
experiment's runs table and charts put the models side by side under one name. A model run:
the primary metric (`Main/score`) and its interval (`Main/score_lower`, `Main/score_upper`: lower
sorts before upper), the item wins, its rank (`Main/rank`), its gap to the next rank
(`Main/gap_to_next`) and that gap's verdict (`Main/significant`: 1 significant, 0.5 borderline,
0 not). A comparison or leaderboard run logs only the winner's score and interval (`Main/best…`)
and its margin over the runner-up (`Main/margin…`, `Main/significant`): per-model and per-pair
figures, counts and decisions are in its tables and JSON, not one-bar charts. The capital letter
sorts the `Main` section before every other metric section in MLflow's chart views and metric
tables (which order keys by code point, capitals first).
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extracteval.report.terminal import count_of
from extracteval.core.significance import BORDERLINE, NOT_SIGNIFICANT, SIGNIFICANT
from extracteval.core.ranking import RankingSpec, format_wins, tier

__all__ = [
    "HEADLINE_SCORE", "HEADLINE_CI_LOW", "HEADLINE_CI_HIGH", "HEADLINE_WINS", "HEADLINE_RANK", "HEADLINE_GAP", "HEADLINE_SIGNIFICANT",
    "HEADLINE_WINNER", "HEADLINE_WINNER_LOW", "HEADLINE_WINNER_HIGH", "HEADLINE_MARGIN", "HEADLINE_MARGIN_LOW", "HEADLINE_MARGIN_HIGH",
    "HEADLINE_KEYS", "HEADLINE_DECIMALS", "VERDICT_VALUE", "LEADERBOARD_RANK", "LEADERBOARD_WINS", "headline", "REPORT_PATH", "fmt_value",
    "fmt_interval", "fmt_diff", "primary_interval", "weakest_items", "wins_text", "Gap", "Standing", "standings", "headline_metrics",
    "summary_metrics", "model_note", "single_note", "comparison_note", "leaderboard_note", "is_rate", "plain", "verdict_lines",
    "verdict_table",
]

HEADLINE_SCORE = "Main/score"  # the task's primary metric (`extracteval.primary_metric` names it)
HEADLINE_CI_LOW = "Main/score_lower"  # its interval: `lower` sorts before `upper`, as low before high
HEADLINE_CI_HIGH = "Main/score_upper"
HEADLINE_WINS = "Main/wins"  # item wins (fields, tags, features, functions)
HEADLINE_RANK = "Main/rank"  # a model run's rank among the models scored with it
HEADLINE_GAP = "Main/gap_to_next"  # its lead over the next rank (the last: its gap to the rank above, negative)
HEADLINE_SIGNIFICANT = "Main/significant"  # that gap's verdict: 1 significant, 0.5 borderline, 0 not
HEADLINE_WINNER = "Main/best"  # on comparison and leaderboard runs: the best model's primary metric
HEADLINE_WINNER_LOW = "Main/best_lower"
HEADLINE_WINNER_HIGH = "Main/best_upper"
HEADLINE_MARGIN = "Main/margin"  # the winner's lead over the runner-up
HEADLINE_MARGIN_LOW = "Main/margin_lower"  # the paired interval of that lead
HEADLINE_MARGIN_HIGH = "Main/margin_upper"
HEADLINE_DECIMALS = 4
HEADLINE_KEYS = (HEADLINE_SCORE, HEADLINE_CI_LOW, HEADLINE_CI_HIGH, HEADLINE_WINS, HEADLINE_RANK, HEADLINE_GAP, HEADLINE_SIGNIFICANT,
                 HEADLINE_WINNER, HEADLINE_WINNER_LOW, HEADLINE_WINNER_HIGH, HEADLINE_MARGIN, HEADLINE_MARGIN_LOW, HEADLINE_MARGIN_HIGH)
# a verdict as the number `Main/significant` charts
VERDICT_VALUE = {SIGNIFICANT: 1.0, BORDERLINE: 0.5, NOT_SIGNIFICANT: 0.0}
# a verdict in the short words of a description line or a table cell
_VERDICT_WORDS = {SIGNIFICANT: "significant", BORDERLINE: "borderline", NOT_SIGNIFICANT: "not significant"}
REPORT_PATH = "extracteval/report.html"
LEADERBOARD_RANK = "leaderboard/rank"  # a ranked run's rank in the latest leaderboard (its history: one step per leaderboard)
LEADERBOARD_WINS = "leaderboard/field_wins"
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
    """`95.8%` for a rate, `0.828` otherwise; `-` when absent, `n/a` when undefined (NaN)."""
    if isinstance(v, float) and math.isnan(v):
        return "n/a"
    if v is None or not _finite(v):
        return "-"
    return f"{100.0 * float(v):.1f}%" if is_rate(spec) else f"{float(v):.3f}"


def fmt_interval(spec: RankingSpec, low: float, high: float) -> str:
    """`[93.6, 97.6]` (points) for a rate, `[0.771, 0.850]` otherwise; `[n/a]` when undefined."""
    if not (_finite(low) and _finite(high)):
        return "[n/a]"
    if is_rate(spec):
        return f"[{100 * low:.1f}, {100 * high:.1f}]"
    return f"[{low:.3f}, {high:.3f}]"


def fmt_diff(spec: RankingSpec, d: float) -> str:
    """`+8.6 points` for a rate, `+0.042` otherwise; `n/a` when undefined."""
    if not _finite(d):
        return "n/a"
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


# ---- where a model stands: its gaps to the ranks next to it ---------------------------------------

@dataclass(frozen=True)
class Gap:
    """A model's score minus that of the model `other` ranked next to it, with the paired interval
    of that difference and its verdict when the evaluation tested the pair."""

    other: str
    other_rank: int
    diff: float
    low: float | None = None
    high: float | None = None
    verdict: str | None = None
    confidence: float = 0.95  # the paired interval's level

    @property
    def level(self) -> str:
        """`95%`: the interval's confidence as a percentage."""
        return f"{int(round(100 * self.confidence))}%"

    @property
    def words(self) -> str:
        """The verdict in short words: `significant`, `borderline`, `not significant`, `not tested`."""
        return "not tested" if self.verdict is None else _VERDICT_WORDS.get(self.verdict, self.verdict)

    def text(self, spec: RankingSpec, *, interval: bool = True) -> str:
        """`+8.6 points ahead of rank 2 (b): significant (paired 95% CI [+5.2, +12.8])`."""
        amount = fmt_diff(spec, self.diff) if self.diff >= 0 else fmt_diff(spec, -self.diff).lstrip("+")
        head = f"{amount} {'ahead of' if self.diff >= 0 else 'behind'} rank {self.other_rank} ({_md(self.other)})"
        if self.verdict is None:
            return f"{head}: not tested"
        ci = f" (paired {self.level} CI [{_signed(spec, self.low)}, {_signed(spec, self.high)}])" if interval and self.low is not None else ""
        return f"{head}: **{self.words}**{ci}"


@dataclass(frozen=True)
class Standing:
    """A model's rank of `n` and its gaps to the ranks above and below it (None at the ends)."""

    rank: int
    n: int
    above: Gap | None
    below: Gap | None

    @property
    def next_gap(self) -> Gap | None:
        """The gap `Main/gap_to_next` logs: to the next rank down; for the last model, to the rank above."""
        return self.below or self.above


def _signed(spec: RankingSpec, v: float | None) -> str:
    return "-" if v is None else fmt_diff(spec, float(v)).split()[0]


def standings(models: Sequence[str], scores: Mapping[str, Any], comparisons: Sequence[Mapping[str, Any]] = ()) -> dict[str, Standing]:
    """Each model's `Standing` in the ranking `models` (best first), from their primary scores
    and the tested adjacent pairs (`comparisons` as result documents and leaderboards have them)."""
    tested = {(c.get("higher"), c.get("lower")): c for c in comparisons or () if isinstance(c, Mapping)}

    def gap(i: int, j: int) -> Gap | None:
        a, b = models[i], models[j]
        c = tested.get((a, b) if i < j else (b, a))
        d = (c or {}).get("difference") or {}
        if d.get("estimate") is not None:
            sign = 1.0 if i < j else -1.0
            lo, hi = d.get("low"), d.get("high")
            if lo is not None and hi is not None and sign < 0:
                lo, hi = 0.0 - float(hi), 0.0 - float(lo)  # 0.0 - x: never a negative zero
            return Gap(other=b, other_rank=j + 1, diff=sign * float(d["estimate"]), low=None if lo is None else float(lo),
                       high=None if hi is None else float(hi), verdict=c.get("verdict"), confidence=float(d.get("confidence") or 0.95))
        if _finite(scores.get(a)) and _finite(scores.get(b)):
            return Gap(other=b, other_rank=j + 1, diff=float(scores[a]) - float(scores[b]))
        return None

    n = len(models)
    return {m: Standing(rank=i + 1, n=n, above=gap(i, i - 1) if i > 0 else None, below=gap(i, i + 1) if i + 1 < n else None)
            for i, m in enumerate(models)}


def headline_metrics(spec: RankingSpec, metrics: Mapping[str, float], standing: Standing | None = None) -> dict[str, float]:
    """The `Main/…` metrics of a model run, from its own metrics and (in a comparison) where it
    stands: `Main/rank`, `Main/gap_to_next` and that gap's `Main/significant`."""
    out: dict[str, float] = {}
    if _finite(metrics.get(spec.primary)):
        out[HEADLINE_SCORE] = headline(metrics[spec.primary])
    ci = primary_interval(spec, metrics)
    if ci is not None:
        out[HEADLINE_CI_LOW], out[HEADLINE_CI_HIGH] = headline(ci[0]), headline(ci[1])
    if _finite(metrics.get("wins/field_wins")):
        out[HEADLINE_WINS] = float(metrics["wins/field_wins"])
    if standing is not None:
        out[HEADLINE_RANK] = float(standing.rank)
        g = standing.next_gap
        if g is not None:
            out[HEADLINE_GAP] = headline(g.diff)
            if g.verdict in VERDICT_VALUE:
                out[HEADLINE_SIGNIFICANT] = VERDICT_VALUE[g.verdict]
    return out


def summary_metrics(spec: RankingSpec, models: Sequence[str], metrics_of: Any, standing: Mapping[str, Standing]) -> dict[str, float]:
    """The few metrics of a comparison or leaderboard run: the winner's score and interval
    (`Main/best…`) and its margin over the runner-up with that margin's paired interval and
    verdict (`Main/margin…`, `Main/significant`). Every other figure of these runs is in their
    tables and JSON, not charted one bar at a time."""
    out: dict[str, float] = {}
    if not models:
        return out
    top = metrics_of(models[0])
    if _finite(top.get(spec.primary)):
        out[HEADLINE_WINNER] = headline(top[spec.primary])
    ci = primary_interval(spec, top)
    if ci is not None:
        out[HEADLINE_WINNER_LOW], out[HEADLINE_WINNER_HIGH] = headline(ci[0]), headline(ci[1])
    g = standing[models[0]].below if models[0] in standing else None
    if g is not None:
        out[HEADLINE_MARGIN] = headline(g.diff)
        if g.low is not None and g.high is not None:
            out[HEADLINE_MARGIN_LOW], out[HEADLINE_MARGIN_HIGH] = headline(g.low), headline(g.high)
        if g.verdict in VERDICT_VALUE:
            out[HEADLINE_SIGNIFICANT] = VERDICT_VALUE[g.verdict]
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


def _score_with_interval(spec: RankingSpec, v: Any, ci: tuple[float, float] | None) -> str:
    return fmt_value(spec, v) + (f" {fmt_interval(spec, *ci)}" if ci is not None else "")


def model_note(*, task: str, spec: RankingSpec, model: str, rank: int, n: int, metrics: Mapping[str, float],
               names: Mapping[str, str] | None = None, tier_name: str | None = None, peers: Sequence[str] = (),
               standing: Standing | None = None) -> str:
    """The description of one model's run in a comparison of `n` models: its rank, score and
    interval on the first line, its gap to the next rank and whether that gap is real on the
    second (what MLflow shows before "Show more"), then the rest as a list."""
    lines = [*_model_head(spec, model, rank, n, metrics, tier_name, standing), ""]
    lines += _model_body(spec, metrics, names)
    lines.append(f"- Ranked by {spec.rule()[len('ranked by '):]}")
    lines.append(f"- Report: *Artifacts* → `{REPORT_PATH}` (this model); every model's tables and figures are on the parent run")
    return "\n".join(lines)


def _model_head(spec: RankingSpec, model: str, rank: int, n: int, metrics: Mapping[str, float], tier_name: str | None,
                standing: Standing | None) -> list[str]:
    """A model run's first two lines: rank, score, interval and tier; then its gaps to the ranks
    next to it with their verdicts (the interval of the gap to the next rank down)."""
    ci = primary_interval(spec, metrics)
    first = (f"**{_md(model)}: rank {rank} of {n}** — {spec.label} **{_score_with_interval(spec, metrics.get(spec.primary), ci)}** · "
             f"tier {_tier_of(spec, metrics, tier_name)}  ")
    gaps = [g for g in ((standing.below, standing.above) if standing is not None else ()) if g is not None]
    return [first, "; ".join(g.text(spec, interval=i == 0) for i, g in enumerate(gaps)) + "." if gaps else "The only model ranked."]


def single_note(*, task: str, spec: RankingSpec, model: str, metrics: Mapping[str, float], names: Mapping[str, str] | None = None,
                tier_name: str | None = None) -> str:
    """The description of the run of a single model (not ranked against anything)."""
    ci = primary_interval(spec, metrics)
    lines = [f"**{_md(model)}** — {spec.label} **{_score_with_interval(spec, metrics.get(spec.primary), ci)}** · "
             f"tier {_tier_of(spec, metrics, tier_name)}  ",
             f"One model, not ranked: extracteval {task}.", ""]
    lines += _model_body(spec, metrics, names)
    lines.append(f"- Report: *Artifacts* → `{REPORT_PATH}`")
    return "\n".join(lines)


def plain(markdown: str) -> str:
    """A description line as plain text (for the HTML report): emphasis and escapes removed."""
    import re

    # one pass, so that an escaped backslash before `**` does not hide the emphasis mark
    return re.sub(r"\\(.)|\*\*", lambda m: m.group(1) or "", markdown).rstrip()


def verdict_lines(spec: RankingSpec, models: Sequence[str], metrics_of: Any, standing: Mapping[str, Standing], model: str | None = None,
                  tier_name: str | None = None) -> list[str]:
    """The two lines a description opens with, as plain text: the comparison's (`model` None) or
    that model's (its rank, score, interval and tier, `tier_name` as its description says it; its
    gap to the next rank and that gap's verdict)."""
    if model is None:
        scores = {m: metrics_of(m).get(spec.primary) for m in models}
        return [plain(x) for x in _verdict_head(spec, models, scores, {m: primary_interval(spec, metrics_of(m)) for m in models}, standing, lead="")]
    return [plain(x) for x in _model_head(spec, model, standing[model].rank, len(models), metrics_of(model), tier_name, standing[model])]


def verdict_table(spec: RankingSpec, models: Sequence[str], metrics_of: Any, standing: Mapping[str, Standing], this: str | None = None,
                  level: str = "95%") -> Any:
    """rank, model, score, 95% CI and the verdict against the next rank, one row per model: the
    first table of a report, short enough for MLflow's artifact viewer (the metric behind `score`
    is named in the section's legend)."""
    import pandas as pd

    rows = []
    for m in models:
        ms, st = metrics_of(m), standing.get(m)
        ci = primary_interval(spec, ms)
        g = st.below if st is not None else None
        vs = "-" if g is None else f"{fmt_diff(spec, g.diff)}, {g.words}"
        row = {"rank": st.rank if st is not None else 1, "model": m, "score": fmt_value(spec, ms.get(spec.primary)),
               f"{level} CI": fmt_interval(spec, *ci) if ci is not None else "-", "vs next rank": vs}
        if this is not None:
            row["this run"] = "◀" if m == this else ""
        rows.append(row)
    return pd.DataFrame(rows)


def _verdict_head(spec: RankingSpec, models: Sequence[str], scores: Mapping[str, Any], cis: Mapping[str, Any],
                  standing: Mapping[str, Standing], *, lead: str) -> list[str]:
    """The two lines a comparison or leaderboard opens with: the winner with its score, interval
    and margin over the runner-up (and whether the paired interval excludes zero); then which
    adjacent ranks cannot be told apart."""
    top = models[0]
    first = f"{lead}**Winner: {_md(top)}** — {spec.label} **{_score_with_interval(spec, scores.get(top), cis.get(top))}**"
    g = standing[top].below if top in standing else None
    first += f", {g.text(spec)}.  " if g is not None else ".  "
    unclear = []
    for i, (a, b) in enumerate(zip(models[1:-1], models[2:]), start=2):
        h = standing[a].below
        if h is not None and h.verdict != SIGNIFICANT:
            state = "indistinguishable" if h.verdict == NOT_SIGNIFICANT else h.words
            unclear.append(f"ranks {i} and {i + 1} ({_md(a)}, {_md(b)}) {state}: {fmt_diff(spec, h.diff)}"
                           + (f", CI [{_signed(spec, h.low)}, {_signed(spec, h.high)}]" if h.low is not None else ""))
    if len(models) < 3:
        second = "Two models compared." if len(models) == 2 else ""
    elif unclear:
        second = "Below the winner: " + "; ".join(unclear) + "."
    else:
        second = "Every adjacent pair of ranks differs significantly (paired bootstrap)."
    return [first, second] if second else [first]


def _ranking_list(spec: RankingSpec, rows: Sequence[tuple[int, str, Any, Any, str, str]]) -> list[str]:
    """`1. **model** — 95.8% [93.6, 97.6] · excellent · won 4.5 of 7 fields`, one line per model."""
    return [f"{r}. **{_md(m)}** — {_score_with_interval(spec, v, ci)} · {t} · {w}" for r, m, v, ci, t, w in rows]


def _pair_lines(spec: RankingSpec, models: Sequence[str], standing: Mapping[str, Standing]) -> list[str]:
    """One line per adjacent pair: the tested difference with its interval and verdict, else the difference."""
    lines = []
    for a, b in zip(models[:-1], models[1:]):
        g = standing[a].below
        if g is None:
            continue
        if g.verdict is None:
            lines.append(f"- {_md(a)} vs {_md(b)}: {fmt_diff(spec, g.diff)} (not tested for significance)")
        else:
            lines.append(f"- {_md(a)} vs {_md(b)}: {fmt_diff(spec, g.diff)}, {g.level} CI [{_signed(spec, g.low)}, {_signed(spec, g.high)}] — "
                         f"**{g.verdict}**")
    return lines


def comparison_note(*, task: str, spec: RankingSpec, models: Sequence[str], metrics_of: Any, tiers: Mapping[str, str] | None = None,
                    comparisons: Sequence[Mapping[str, Any]] = (), decision: Mapping[str, Any] | None = None,
                    n_records: Any = None) -> str:
    """The parent run's description: the verdict in its first two lines, then the ranking, the
    adjacent-rank verdicts and the decision as lists."""
    n = len(models)
    scores = {m: metrics_of(m).get(spec.primary) for m in models}
    cis = {m: primary_interval(spec, metrics_of(m)) for m in models}
    st = standings(models, scores, comparisons)
    lines = _verdict_head(spec, models, scores, cis, st, lead="")
    head = f"extracteval {task}: {n} models" + (f" on {n_records} records" if n_records not in (None, "") else "")
    lines += ["", f"{head}, {spec.label} with its 95% CI:", ""]
    lines += _ranking_list(spec, [(i, m, scores[m], cis[m], _tier_of(spec, metrics_of(m), (tiers or {}).get(m)), wins_text(spec, metrics_of(m)) or "-")
                                  for i, m in enumerate(models, start=1)])
    pairs = _pair_lines(spec, models, st)
    if pairs:
        lines += ["", "Adjacent ranks (paired bootstrap of the difference):", "", *pairs]
    if decision and decision.get("verdict"):
        if not pairs:
            lines.append("")
        lines.append(f"- Decision ({_md(decision.get('baseline'))} vs {_md(decision.get('candidate'))}, {decision.get('metric')}): "
                     f"**{_md(decision['verdict'])}**")
    lines += ["", f"Models are {spec.rule()}.",
              f"Report: *Artifacts* → `{REPORT_PATH}`; each model's own run (expand this row) has its description and report; every figure "
              "of this comparison is in `extracteval/comparison_metrics.json`."]
    return "\n".join(lines)


def leaderboard_note(result: Any, key: str | None = None) -> str:
    """A leaderboard run's description (`result`: `mlflow.tracking_leaderboard.TrackingStoreLeaderboard`;
    `key`: the metric its ranks were written under on each ranked run): the verdict in its first
    two lines, then each group's ranking and adjacent-rank verdicts as lists."""
    lb = result.leaderboard
    spec = lb.spec
    n_ranked = sum(len(g.entries) for g in lb.groups)
    scope = (f"extracteval {lb.task} · {count_of(n_ranked, 'run')} ranked ({'all runs' if lb.all_runs else 'the latest run of each model'}), "
             f"{count_of(len(lb.groups), 'group')}")
    lead = f"**Leaderboard of {_md(result.experiment)}** · "
    group_standings = [standings([e.model for e in g.entries], {e.model: e.score for e in g.entries}, g.comparisons) for g in lb.groups]
    if len(lb.groups) == 1 and lb.groups[0].entries:
        g = lb.groups[0]
        scores = {e.model: e.score for e in g.entries}
        cis = {e.model: (e.ci.low, e.ci.high) if e.ci is not None else None for e in g.entries}
        lines = _verdict_head(spec, [e.model for e in g.entries], scores, cis, group_standings[0], lead=lead)
        lines += ["", scope + ".", ""]
    else:
        lines = [f"{lead}{scope}: runs are ranked only against runs scored on the same truth with the same configuration, so there is "
                 "no single winner.", ""]
    for gi, g in enumerate(lb.groups, start=1):
        if len(lb.groups) > 1:
            lines += [f"Group {gi} (truth `{g.truth_digest[:12]}`, config `{g.config_digest[:12]}`):", ""]
        lines += _ranking_list(spec, [(e.rank, e.model, e.score, (e.ci.low, e.ci.high) if e.ci is not None else None,
                                       _TIER_LABEL.get(e.tier, e.tier),
                                       f"won {format_wins(e.item_wins)} of {e.items_scored} {_item_word(spec, e.items_scored)}" if e.items_scored else "-")
                                      for e in g.entries])
        pairs = _pair_lines(spec, [e.model for e in g.entries], group_standings[gi - 1])
        if pairs:
            lines += ["", "Adjacent ranks (paired bootstrap of the difference):", "", *pairs]
        if g.superseded:
            lines += ["", "Not ranked (superseded by a later run of the same model, truth and config; each carries the tag "
                      "`extracteval.superseded_by`): "
                      + ", ".join(f"{_md(s.model)} (`{s.run_id[:8]}` → `{s.superseded_by[:8]}`)" for s in g.superseded[:20])
                      + (f" and {len(g.superseded) - 20} more" if len(g.superseded) > 20 else "")]
        if len(lb.groups) > 1:
            lines.append("")
    for w in lb.warnings:
        lines.append(f"- Warning: {_md(w)}")
    for note in result.notes:
        lines.append(f"- Note: {_md(note)}")
    lines += ["", f"Runs are {spec.rule()}.", "Report: *Artifacts* → `leaderboard/leaderboard.html`; each ranked run got its rank under "
              f"`{key or LEADERBOARD_RANK}` (one value per leaderboard in its history)."]
    return "\n".join(lines)
