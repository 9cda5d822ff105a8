"""Files → inputs of the `fields` task (truth frame and one `ModelPredictions` per model)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.tasks.fields.semantics import ModelPredictions
from extracteval.errors import InputError
from extracteval.io.config import models_in_file, parse_model_spec
from extracteval.io.tables import load_fields_table, read_kleister_keys

__all__ = ["load_fields_inputs", "frame_to_predictions"]


def load_fields_inputs(
    truth: str | Path,
    predictions: Sequence[str],
    *,
    id_column: str = "id",
    delimiter: str | None = None,
    keys: str | Path | None = None,
) -> tuple[pd.DataFrame, list[ModelPredictions], str]:
    """Read the truth file and each `NAME=FILE` (or bare `FILE`) predictions spec."""
    kl_ids = kl_asked = None
    if keys is not None:
        kl_ids, kl_asked = read_kleister_keys(keys)
    t = load_fields_table(truth, id_column=id_column, delimiter=delimiter, kleister_ids=kl_ids, kleister_asked=kl_asked)
    if len(t.values) != 1 or "" not in t.values:
        raise InputError(f"{truth}: the ground truth must not have a `model` column (found models {sorted(t.values)}).")
    truth_frame = t.values[""]
    truth_status = t.status[""]
    if truth_status is not None and t.layout != "kleister":
        raise InputError(f"{truth}: the ground truth must not have a `status` column; status belongs to predictions.")

    models: list[ModelPredictions] = []
    names: dict[str, str] = {}
    for spec in predictions:
        name, path = parse_model_spec(spec)
        loaded = load_fields_table(path, id_column=id_column, delimiter=delimiter, kleister_ids=kl_ids, kleister_asked=kl_asked)
        items = models_in_file(name, path, loaded.values, names)
        for model_name, key in items:
            status = loaded.status[key]
            if t.layout == "kleister" and truth_status is not None and status is None:
                status = truth_status
            models.append(ModelPredictions(name=model_name, values=loaded.values[key], status=status, source=str(path)))
    return truth_frame, models, str(truth)


def frame_to_predictions(frame: Any, *, name: str, source: str) -> Any:
    """The long predictions frame (`mlflow.predictions_file`: id, field, value as JSON text, status)
    → `ModelPredictions` (values decoded from JSON, per-cell status)."""
    missing = {"id", "field", "value"} - set(frame.columns)
    if missing:
        raise InputError(f"{source}: expected columns id, field, value, status; missing {sorted(missing)}.")
    cache: dict[str, Any] = {}

    def dec(v: Any) -> Any:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if v not in cache:
            cache[v] = json.loads(v)
        return cache[v]

    f = frame.assign(id=frame["id"].astype(str), field=frame["field"].astype(str))
    f = f.assign(value=[dec(v) for v in f["value"]])
    ids = list(dict.fromkeys(f["id"]))
    fields = list(dict.fromkeys(f["field"]))
    values = f.pivot(index="id", columns="field", values="value").reindex(index=ids, columns=fields)
    values = values.astype(object).where(values.notna(), None)
    values.index.name = "id"
    values.columns.name = None
    status = None
    if "status" in f and f["status"].notna().any():
        status = f.pivot(index="id", columns="field", values="status").reindex(index=ids, columns=fields).fillna("ok")
        status.index.name = "id"
        status.columns.name = None
    return ModelPredictions(name=name, values=values, status=status, source=source)
