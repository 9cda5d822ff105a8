"""Files (or tables held in memory) → the truth and each model's predictions: the wide tables of
`extracteval.io` (CSV/TSV, JSONL, JSON, Parquet; an `id` column, one column per field)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extracteval.errors import InputError
from extracteval.io.config import models_in_file, parse_model_spec
from extracteval.io.tables import load_fields_table
from extracteval.io.wide_tables import ModelPredictions


def load_inputs(truth: Any, predictions: Sequence[Any], *, id_column: str = "id", delimiter: str | None = None) -> tuple[Any, list[ModelPredictions], str]:
    """(truth frame indexed by id, one `ModelPredictions` per model, the truth's name)."""
    t = load_fields_table(truth, id_column=id_column, delimiter=delimiter)
    if set(t.values) != {""}:
        raise InputError(f"{truth}: the ground truth must not have a `model` column.")
    models: list[ModelPredictions] = []
    names: dict[str, str] = {}
    for spec in predictions:
        name, path = parse_model_spec(spec)
        loaded = load_fields_table(path, id_column=id_column, delimiter=delimiter)
        for model, key in models_in_file(name, path, loaded.values, names):
            models.append(ModelPredictions(name=model, values=loaded.values[key], source=str(path)))
    return t.values[""], models, str(truth)
