"""The `entities` task as an `mlflow.genai` scorer: one row's feedback (`entity_f1/precision/recall`, `accuracy`, counts;
afterwards `entities/…_entities`, `entities/micro_accuracy`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.core.feature_views import LabelLayout
from extracteval.mlflow.genai_rows import RowSpec, Row, Columns, rate, model_of, cell_counts, feature_verdicts, pooled_counts
from extracteval.tasks.entities.metrics import PRESENCE, entities_metrics


def _entities_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {f"entity_{k}": m[f"entities/{k}_entities"] for k in ("f1", "precision", "recall")}
    correct, cells = cell_counts(model_of(scored).strict)
    out["accuracy"] = rate(correct, cells, 0.0)
    out.update({k: int(m[f"entities/{k}_count"]) for k in ("matched", "predicted", "gold")})
    out.update({"both_empty": int(m["entities/records_both_empty"]), "correct": correct, "cells": cells})
    return out


def _entities_rationale(scored: Any) -> str:
    p = model_of(scored).presence.to_dict()
    head = f"{p['matched_count']} of {p['gold_count']} gold entities matched, {p['extra_predictions_count']} extra prediction(s)"
    verdicts = feature_verdicts(model_of(scored).strict)
    return head + (f"; values (unmatched entities count as wrong) — {verdicts}" if verdicts else "")


def _entities_aggregate(col: Columns, zd: float) -> dict[str, float]:
    s = {k: float(col[k].sum()) for k in ("matched", "predicted", "gold", "both_empty", "correct", "cells")}
    counts = {"matched": s["matched"], "extra": s["predicted"] - s["matched"], "missed": s["gold"] - s["matched"], "both_empty": s["both_empty"],
              **pooled_counts(s["correct"], s["cells"], 0.0, 0.0)}
    got = entities_metrics(counts, LabelLayout.pooled(), which=(*(f"entities/{k}" for k in PRESENCE), "entities/micro_accuracy"), zero_division=zd)
    out = {k: float(v) for k, v in got.items()}
    out.update({f"entities/{k}_count": s[k] for k in ("matched", "predicted", "gold")})
    out.update({"entities/records_both_empty": s["both_empty"], "entities/correct": s["correct"], "entities/cells": s["cells"]})
    return out


ROWS = RowSpec(_entities_row, _entities_rationale, ("matched", "predicted", "gold", "both_empty", "correct", "cells"), _entities_aggregate)
