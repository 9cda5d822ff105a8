"""The `entities` task's one map from counts to metrics: entity presence (matched, extra and missed
entities, records with none on either side) → `entities/precision_entities`, `…/recall_entities`,
`…/f1_entities`; and one view's per-feature, per-label one-vs-rest counts (tp, fp, fn of each
label, the rows of each feature, the rows right in every feature) → `entities/macro/<kind>` (the
mean over features of each feature's macro average over its observed labels, or of its positive
label's value) for precision, recall, F1 and specificity, `entities/micro_accuracy` (the mean over
features of right rows / rows) and `entities/row_accuracy`. The result reads its presence and both
views' metrics from it (`core.feature_views.view_metrics`), the leaderboard and `compare` their
intervals (per resample of the per-record counts), and the `mlflow.genai` scorer its run metrics
(the rows' summed counts, every feature's cells pooled)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.counts import ratios
from extracteval.core.feature_views import VIEW_METRICS, LabelLayout, view_count_metrics

__all__ = ["METRICS", "PRESENCE", "entities_metrics"]

# presence metric → its ratio of matched (tp), extra (fp) and missed (fn) entities, records with none on either side (tn)
PRESENCE = {"precision_entities": "precision", "recall_entities": "recall", "f1_entities": "f1"}
# every metric the map gives, as the model runs log them (the strict view; the matched view's under `matched/`)
METRICS = (*(f"entities/{m}" for m in PRESENCE), *(f"entities/{m}" for m in VIEW_METRICS))


def entities_metrics(counts: Mapping[str, Any], layout: LabelLayout | None = None, *, which: Sequence[str] = METRICS,
                     zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Counts → the metrics `which` (of `METRICS`): presence from `matched`, `extra`, `missed`,
    `both_empty` (a record with no entity on either side is a true negative: a model right about
    "none" everywhere scores 1.0); a view's from its counts (see `view_count_metrics`) and `layout`."""
    leaves = [k.removeprefix("entities/") for k in which]
    out: dict[str, np.ndarray] = {}
    if any(k in PRESENCE for k in leaves):
        r = ratios(*(counts[k] for k in ("matched", "extra", "missed", "both_empty")), zero_division=zero_division)
        out.update({k: np.asarray(r[PRESENCE[k]], dtype=np.float64) for k in leaves if k in PRESENCE})
    view = [k for k in leaves if k not in PRESENCE]
    if view:
        if layout is None:
            raise ValueError(f"{', '.join(view)}: a view's metrics need its label layout")
        out.update(view_count_metrics(counts, layout, which=view, zero_division=zero_division))
    return {f"entities/{k}": out[k] for k in leaves}
