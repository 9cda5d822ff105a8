"""The MLflow side of feature-view results (`core.feature_views`), shared by the adapters of the
tasks whose results carry per-feature `aligned` and `strict` views (`labels`, `entities`): the
per-view metric keys, per-feature table rows, F1 figures, the per-record label counts of the
interval metrics, and `FeatureViewsAdapter`, the base of those adapters."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from extracteval.mlflow.adapter_parts import (is_winner, parent_head, rank_metrics, winner_kind_metrics, winners_table)
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.predictions_file import CellPredictions
from extracteval.mlflow.adapters import Scored, Section

__all__ = ["FEATURE_METRIC_KEYS", "view_metrics_keys", "feature_item_rows", "label_rows", "f1_figures", "FeatureViewsAdapter", "json_param",
           "is_blank", "label_count_table", "label_count_metric"]


FEATURE_METRIC_KEYS = ("precision", "recall", "f1", "specificity", "micro_accuracy")


def view_metrics_keys(view: Any, keys: KeyMap, *, totals_prefix: str, feature_prefix: str = "") -> dict[str, float]:
    """Metrics of one `ViewMetrics`: `<totals_prefix>/macro/…`, `…/weighted/…`, `…/samples/…` (when the
    view has them), `…/micro_accuracy`, `…/row_accuracy`, `…/rows`, `…/correct_rows`, and
    `<feature_prefix>feature/<f>/…` per feature (a multi-label feature's `micro_<kind>`,
    `samples_<kind>` and `hamming_loss` too)."""
    out: dict[str, float] = {}
    for k in ("precision", "recall", "f1", "specificity"):
        out[f"{totals_prefix}/macro/{k}"] = float(view.totals[k])
    for k, v in view.weighted.items():
        out[f"{totals_prefix}/weighted/{k}"] = float(v)
    for k, v in getattr(view, "samples", {}).items():
        out[f"{totals_prefix}/samples/{k}"] = float(v)
    out[f"{totals_prefix}/micro_accuracy"] = float(view.totals["micro_accuracy"])
    out[f"{totals_prefix}/row_accuracy"] = float(view.row_accuracy)
    out[f"{totals_prefix}/rows"] = float(view.rows)
    out[f"{totals_prefix}/correct_rows"] = float(view.correct_rows)
    for fname, fm in view.features.items():
        for k in FEATURE_METRIC_KEYS:
            out[keys.key(f"{feature_prefix}feature", fname, k)] = float(getattr(fm, k))
        for k, v in fm.weighted.items():
            out[keys.key(f"{feature_prefix}feature", fname, f"weighted_{k}")] = float(v)  # not `weighted/…`: `feature/<f>/<metric>` names one item
        if fm.mode == "multi_label":  # label sets: flat names, as `feature/<f>/<metric>` names one item
            for avg in ("micro", "samples"):
                for k, v in getattr(fm, avg).items():
                    out[keys.key(f"{feature_prefix}feature", fname, f"{avg}_{k}")] = float(v)
            out[keys.key(f"{feature_prefix}feature", fname, "hamming_loss")] = float(fm.hamming_loss)
        out[keys.key(f"{feature_prefix}feature", fname, "rows")] = float(fm.rows)
        out[keys.key(f"{feature_prefix}feature", fname, "correct")] = float(fm.correct)
    return out


def feature_item_rows(result: Any, models: Sequence[str], *, ranked_view: str, other_view: str) -> pd.DataFrame:
    """One row per model and feature: the ranked (strict) view's metrics, the other view's F1 and
    micro accuracy beside them, whether the model won the feature, and the feature's flags."""
    rows = []
    for m in models:
        mr = result.models[m]
        ranked, other = getattr(mr, ranked_view), getattr(mr, other_view)
        for fname, fm in ranked.features.items():
            om = other.features[fname]
            w = result.feature_winners.get(fname)
            rows.append({
                "model": m, "feature": fname, "view": ranked_view, "mode": fm.mode, "positive_label": fm.positive_label,
                **{k: float(getattr(fm, k)) for k in FEATURE_METRIC_KEYS}, **{f"weighted_{k}": float(v) for k, v in fm.weighted.items()},
                "rows": fm.rows, "correct": fm.correct, "labels": len(fm.labels),
                f"{other_view}_f1": float(om.f1), f"{other_view}_precision": float(om.precision), f"{other_view}_recall": float(om.recall),
                f"{other_view}_micro_accuracy": float(om.micro_accuracy), f"{other_view}_rows": om.rows,
                "winner": is_winner(w, m),
                "flags": ";".join(fm.flags),
            })
    return pd.DataFrame(rows)


def label_rows(result: Any, models: Sequence[str], views: Sequence[str]) -> pd.DataFrame:
    """One row per model, view, feature and label: the one-vs-rest counts and ratios."""
    rows = []
    for m in models:
        for view in views:
            for fname, fm in getattr(result.models[m], view).features.items():
                for label, v in fm.labels.items():
                    rows.append({"model": m, "view": view, "feature": fname, "label": label, **v})
    return pd.DataFrame(rows)


def f1_figures(scored: Scored, item_table: pd.DataFrame, models: Sequence[str], *, other_view: str) -> dict[str, Any]:
    """Per-feature F1 bars of the strict view (the ranked one) and of the other view."""
    from extracteval.report.figures import item_f1_bars

    who = f" — {models[0]}" if len(models) == 1 else ""
    other = item_table.rename(columns={"f1": "strict_f1"}).rename(columns={f"{other_view}_f1": "f1"})[["model", "feature", "f1"]] if len(item_table) else item_table
    return {
        "feature_f1.png": item_f1_bars(item_table, item="feature", title=f"{scored.task}: per-feature F1, strict view{who}"),
        f"feature_f1_{other_view}.png": item_f1_bars(other, item="feature", title=f"{scored.task}: per-feature F1, {other_view} view{who}"),
    }


class FeatureViewsAdapter(CellPredictions):
    """What the `labels` and `entities` adapters share: both results hold, per model, a strict
    view (the ranked one) and a second view (`other_view`: `aligned` rows, `matched` entity
    pairs) of per-feature one-vs-rest metrics, feature winners on the strict view's F1, and a
    rank. A subclass names its metric prefix and second view, gives its `ranking_table` and
    `parent_model_metrics` (the parent run's headline numbers of one model), and adds what only
    it has."""

    prefix: str  # `labels` / `entities`: the totals' metric prefix
    other_view: str  # `aligned` / `matched`
    other_view_note: str  # the per-feature section's title note on the second view
    metric_map: Any  # staticmethod: the task's map from one view's counts to its metrics (`labels_metrics`, `entities_metrics`)

    def item_names(self, scored: Scored) -> Sequence[str]:
        return list(scored.result.features)

    def count_metric(self, metric: str, columns: Sequence[str], params: Mapping[str, str]) -> Any:
        return label_count_metric(f"{self.prefix}/", metric, columns, params, self.metric_map)

    def view_metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        """Both views' metrics (`<prefix>/…`, `feature/<f>/…`; `<other>/<prefix>/…`,
        `<other>/feature/<f>/…`) and the model's rank and feature wins."""
        m = scored.result.models[model]
        out = view_metrics_keys(m.strict, keys, totals_prefix=self.prefix)
        out.update(view_metrics_keys(getattr(m, self.other_view), keys, totals_prefix=f"{self.other_view}/{self.prefix}",
                                     feature_prefix=f"{self.other_view}/"))
        out.update(rank_metrics(rank=m.rank, wins=m.feature_wins, items_scored=len(scored.result.features), items="features"))
        return out

    def comparison_metrics(self, scored: Scored, keys: KeyMap) -> dict[str, float]:
        r = scored.result
        out = parent_head(keys, ranking=r.ranking, ranks={m: r.models[m].rank for m in r.ranking},
                          wins={m: r.models[m].feature_wins for m in r.ranking}, items="features", n_items=len(r.features))
        for m in r.ranking:
            out.update(self.parent_model_metrics(scored, m, keys))
        out.update(winner_kind_metrics((w.kind for w in r.feature_winners.values()), "feature_winners"))
        return out

    def item_table(self, scored: Scored, model: str | None) -> pd.DataFrame:
        return feature_item_rows(scored.result, scored.models if model is None else (model,), ranked_view="strict", other_view=self.other_view)

    def comparison_tables(self, scored: Scored) -> dict[str, pd.DataFrame]:
        return {
            "leaderboard": self.ranking_table(scored, scored.models),
            "feature_winners": winners_table(scored.result.feature_winners, "feature"),
            "label_metrics": label_rows(scored.result, scored.models, ("strict", self.other_view)),
        }

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        table = feature_item_rows(scored.result, models, ranked_view="strict", other_view=self.other_view)
        return f1_figures(scored, table, models, other_view=self.other_view)

    def view_sections(self, scored: Scored, models: Sequence[str], ranking: Section) -> list[Section]:
        """The ranking, the views, the feature winners and the per-feature metrics."""
        out = [ranking, Section(title="Views", items=[f"{k}: {v}" for k, v in scored.doc["views"].items()])]
        if len(models) > 1:
            out.append(Section(title="Feature winners (strict view)", table=winners_table(scored.result.feature_winners, "feature")))
        out.append(Section(title=f"Per-feature metrics (strict view; {self.other_view_note} beside it)",
                           table=feature_item_rows(scored.result, models, ranked_view="strict", other_view=self.other_view)))
        return out


def json_param(value: Any, *, limit: int = 5000, what: str = "entries") -> str:
    s = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    n = len(value) if hasattr(value, "__len__") else 0
    return s if len(s) <= limit else f"{n} {what}; see extracteval/result.json (config)"


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "…"


def label_count_table(ids: Any, features: Any, labels: Any, kinds: Any, values: Any = None, *, rows: tuple[Any, Any],
                      correct: tuple[Any, Any] | None = None) -> Any:
    """A `RecordCountTable` of one-vs-rest counts: (record id, feature, label, tp|fp|fn) entries
    counting `values` (1 each by default), plus `rows` = (record id, feature) per row of the view
    and `correct` = (record id, feature) per row right whole (label sets: the sets equal)."""
    from extracteval.core.record_counts import RecordCountTable, column

    r_ids, r_feat = rows
    c_ids, c_feat = correct if correct is not None else ([], [])
    # with `correct`, every feature gets the column, also one without a right row (a zero at one of its rows)
    first = dict(zip(list(r_feat)[::-1], list(r_ids)[::-1])) if correct is not None else {}
    z_feat, z_ids = list(first), list(first.values())
    names = ([column(f, lab, k) for f, lab, k in zip(features, labels, kinds)] + [column(f, "rows") for f in r_feat]
             + [column(f, "correct") for f in [*c_feat, *z_feat]])
    counts = np.ones(len(ids), dtype=np.int64) if values is None else np.asarray(values, dtype=np.int64)
    every = [np.asarray(x, dtype=object) for x in (ids, r_ids, c_ids, z_ids)]
    return RecordCountTable.from_long(np.concatenate(every), names,
                                      np.concatenate([counts, np.ones(len(r_ids) + len(c_ids), dtype=np.int64), np.zeros(len(z_ids), dtype=np.int64)]))


def label_count_metric(prefix: str, metric: str, columns: Sequence[str], params: Mapping[str, str], metric_map: Any) -> Any:
    """A metric of the task's map (`metric_map`: counts, layout, which, zero_division → metrics,
    such as `labels_metrics`) over `label_count_table` columns: `<prefix>macro/<kind>`,
    `<prefix>weighted/<kind>`, `<prefix>micro_accuracy`; None for another metric (one the
    per-record counts do not hold). Declared classes come from the run's `labels` parameter."""
    from extracteval.core.feature_views import VIEW_METRICS, LabelLayout
    from extracteval.core.record_counts import label_count_columns
    from extracteval.mlflow.intervals import zero_division_param

    if not metric.startswith(prefix) or metric.removeprefix(prefix) not in VIEW_METRICS or metric.endswith("row_accuracy"):
        return None  # the per-record counts hold no row-level correctness
    zd = zero_division_param(params)
    positive, classes = (_json_mapping(params.get(k)) for k in ("positive_labels", "labels"))
    if positive is None or classes is None:
        return None  # logged too long to read back: no interval rather than one over other labels
    labels, features, counts = label_count_columns(columns)
    held = set(labels)
    absent = [(f, c) for f, cs in classes.items() for c in cs if (f, c) not in held]  # declared classes no record holds
    layout = LabelLayout.of([*labels, *absent], features, positive, classes)

    def value(summed: np.ndarray) -> np.ndarray:
        got = counts(summed)
        if absent:
            zeros = np.zeros((*np.shape(summed)[:-1], len(absent)))
            got = {**got, **{k: np.concatenate([got[k], zeros], axis=-1) for k in ("tp", "fp", "fn")}}
        return metric_map(got, layout, which=(metric,), zero_division=zd)[metric]

    return value


def _json_mapping(text: str | None) -> dict[str, Any] | None:
    """A mapping logged as a JSON parameter; {} for none, None for one too long to log whole."""
    try:
        got = json.loads(text or "{}")
    except ValueError:
        return None
    return got if isinstance(got, dict) else {}
